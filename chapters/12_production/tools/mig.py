#!/usr/bin/env python3
"""MIG profiles: what a slice of an H200, H100 or A100 is, and what it changes.

    mig.py                               the profile tables (Markdown)
    mig.py --gpu h200 --profile 1g.18gb  one slice beside the whole GPU: SMs, memory, copy
                                         engines, the FP32 peak scaled by its SMs
    mig.py --update-readme               rewrites the table block of the chapter README

Sources (one owner for these facts): H200 141 GB — `nvidia-smi mig -lgip` on an H200 as quoted
in NVIDIA/mig-parted#120 (SMs and GiB per profile); A100 40/80 GB — the MIG user guide's table
(fractions of memory and SMs, copy engines, instances; 14 SMs per compute slice of the 108-SM
A100); H100 80 GB — the same GH100 slicing as the H200 (16 SMs per 1g slice of 132) with the
guide's fractions of memory. Copy engines on Hopper are not in those sources: the guide's A100 and
A30 tables give one per compute slice, shown as "(1 per slice)"; read yours from
`nvidia-smi mig -lgip` or the doctor on a MIG machine.

Exit status: 0; 2 an unknown GPU or profile (the message lists the known ones).
"""
from __future__ import annotations

import argparse
import re
import sys
from pathlib import Path

README = Path(__file__).resolve().parents[1] / "README.md"

# name -> (SMs of the whole GPU, FP32 lanes per SM, max SM clock GHz, memory GiB of the whole GPU,
#          [(profile, instances, SMs, memory, copy engines, note)])
GPUS = {
    "h200": (132, 128, 1.98, "139.7 GiB", [
        ("1g.18gb", 7, 16, "16.00 GiB", None, ""),
        ("1g.18gb+me", 1, 16, "16.00 GiB", None, "with the media engines (NVDEC, NVJPG, OFA)"),
        ("1g.35gb", 4, 26, "32.25 GiB", None, ""),
        ("2g.35gb", 3, 32, "32.25 GiB", None, ""),
        ("3g.71gb", 2, 60, "69.50 GiB", None, ""),
        ("4g.71gb", 1, 64, "69.50 GiB", None, ""),
        ("7g.141gb", 1, 132, "full", None, "the whole GPU as one instance"),
    ]),
    "h100-80": (132, 128, 1.98, "80 GB", [
        ("1g.10gb", 7, 16, "1/8", None, ""),
        ("1g.20gb", 4, 26, "2/8", None, ""),
        ("2g.20gb", 3, 32, "2/8", None, ""),
        ("3g.40gb", 2, 60, "4/8", None, ""),
        ("4g.40gb", 1, 64, "4/8", None, ""),
        ("7g.80gb", 1, 132, "full", None, ""),
    ]),
    "a100-40": (108, 64, 1.41, "40 GB", [
        ("1g.5gb", 7, 14, "1/8", 1, ""),
        ("2g.10gb", 3, 28, "2/8", 2, ""),
        ("3g.20gb", 2, 42, "4/8", 3, ""),
        ("4g.20gb", 1, 56, "4/8", 4, ""),
        ("7g.40gb", 1, 98, "full", 7, "7 x 14 SMs: 10 of the 108 are not in any slice"),
    ]),
    "a100-80": (108, 64, 1.41, "80 GB", [
        ("1g.10gb", 7, 14, "1/8", 1, ""),
        ("2g.20gb", 3, 28, "2/8", 2, ""),
        ("3g.40gb", 2, 42, "4/8", 3, ""),
        ("4g.40gb", 1, 56, "4/8", 4, ""),
        ("7g.80gb", 1, 98, "full", 7, ""),
    ]),
}


def slices(profile: str) -> int:
    return int(profile.split("g.")[0])


def peak_tflops(gpu: str, sms: int) -> float:
    """FP32 peak of `sms` SMs at the GPU's max clock: lanes x 2 FLOP x SMs x clock."""
    total, lanes, ghz, _, _ = GPUS[gpu]
    return lanes * 2 * sms * ghz / 1e3


def ce_text(ce: int | None, profile: str) -> str:
    return str(ce) if ce is not None else f"({slices(profile)} per slice)"


def tables(only: str | None = None) -> str:
    out = []
    for gpu, (total, _, _, mem, profs) in GPUS.items():
        if only is not None and gpu != only:
            continue
        out += [f"**{gpu}** ({total} SMs, {mem}; FP32 peak {peak_tflops(gpu, total):.1f} TFLOP/s at the max clock)", "",
                "| profile | instances | SMs | share of SMs | memory | copy engines | FP32 peak (TFLOP/s) | note |",
                "| --- | ---: | ---: | ---: | --- | ---: | ---: | --- |"]
        for name, n, sms, m, ce, note in profs:
            out.append(f"| {name} | {n} | {sms} | {100 * sms / total:.0f} % | {m} | {ce_text(ce, name)} | "
                       f"{peak_tflops(gpu, sms):.1f} | {note} |")
        out.append("")
    return "\n".join(out).rstrip() + "\n"


def slice_text(gpu: str, profile: str) -> str:
    total, _, _, mem, profs = GPUS[gpu]
    p = next(x for x in profs if x[0] == profile)
    name, n, sms, m, ce, note = p
    lost = total - n * sms if n > 1 else 0
    lines = [f"{gpu} {name}: {sms} of {total} SMs ({100 * sms / total:.0f} %), memory {m} (of {mem}), "
             f"{ce_text(ce, name)} copy engines, up to {n} such instance(s)",
             f"  FP32 peak {peak_tflops(gpu, sms):.1f} of {peak_tflops(gpu, total):.1f} TFLOP/s; L2 and memory "
             "bandwidth are split with the memory slices",
             "  isolation: its own SMs, L2 slices and memory controllers (a neighbour's load does not slow it); "
             "no NVLink or P2P from inside an instance; no clock locking on a MIG GPU; DCGM_FI_DEV_GPU_UTIL is "
             "not reported per instance (use DCGM_FI_PROF_GR_ENGINE_ACTIVE)"]
    if lost:
        lines.append(f"  {n} x {name} use {n * sms} SMs: {lost} of the GPU's {total} are in no instance")
    if note:
        lines.append(f"  note: {note}")
    return "\n".join(lines)


BEGIN, END = "<!-- mig-table begin (tools/mig.py --update-readme) -->", "<!-- mig-table end -->"


def readme_block(text: str) -> str | None:
    m = re.search(re.escape(BEGIN) + r"\n(.*?)" + re.escape(END), text, re.S)
    return m.group(1) if m else None


def update_readme(path: Path = README) -> bool:
    text = path.read_text()
    if readme_block(text) is None:
        raise ValueError(f"{path}: no {BEGIN} ... {END} block")
    new = re.sub(re.escape(BEGIN) + r"\n.*?" + re.escape(END), lambda _: BEGIN + "\n" + tables() + END, text,
                 flags=re.S)
    if new != text:
        path.write_text(new)
    return new != text


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="mig.py", description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--gpu")
    ap.add_argument("--profile")
    ap.add_argument("--update-readme", action="store_true")
    args = ap.parse_args(argv)
    if args.update_readme:
        try:
            print("mig: README table " + ("rewritten" if update_readme() else "already current"))
        except ValueError as e:
            print(f"mig: {e}", file=sys.stderr)
            return 2
        return 0
    if args.gpu is None:
        if args.profile:
            ap.error("--profile needs --gpu")
        sys.stdout.write(tables())
        return 0
    if args.gpu not in GPUS:
        ap.error(f"--gpu {args.gpu}: unknown GPU (known: {', '.join(GPUS)})")
    if args.profile is None:
        sys.stdout.write(tables(args.gpu))
        return 0
    known = [p[0] for p in GPUS[args.gpu][4]]
    if args.profile not in known:
        ap.error(f"--profile {args.profile}: not a profile of {args.gpu} (known: {', '.join(known)})")
    print(slice_text(args.gpu, args.profile))
    return 0


if __name__ == "__main__":
    sys.exit(main())
