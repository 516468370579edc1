#!/usr/bin/env python3
"""Counted against measured: the bytes and FLOPs each benchmark row declares in code (bench::Work,
in the committed docs/results/raw/<GPU>/bench_chNN.json) beside what Nsight Compute counted on the
same row's kernel (docs/results/raw/<GPU>/ch09_ncu.json, written by tools/ncu_check.py on the GPU
and committed). scripts/results.py writes the table into chapter 9's README (block
`results:ch09-counted`) through roofline.outputs(); run alone it prints it:

    chapters/09_profiling/tools/counted.py [--gpu H200]

A row agrees when DRAM bytes (read + write) are within 10% of the counted bytes and, where the row
declares FLOPs, the CUDA-core FLOPs (2 fma + add + mul, FP32 and FP16) within 10% of the counted
ones. Otherwise the row says which way it differs and the README's "Counted against measured"
explains the usual causes; nothing is hidden or rounded into agreement.
"""
from __future__ import annotations

import argparse
import json
import statistics
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[3]
sys.path.insert(0, str(REPO / "scripts"))
import report  # noqa: E402  (rows of a benchmark JSON: grouped(), error_of())
TOLERANCE = 0.10
BLOCK_KEY = "ch09-counted"


def declared(root: Path, gpu: str) -> dict[tuple[str, str], dict]:
    """(chapter, row) -> {"bytes", "flops", "median_us"} from the committed benchmark JSON."""
    out = {}
    for path in sorted((root / "docs/results/raw" / gpu).glob("bench_ch[0-9][0-9].json")):
        chapter = path.stem.removeprefix("bench_")
        for name, all_reps in report.grouped(json.loads(path.read_text())).items():
            rs = [b for b in all_reps if not report.error_of(b)]
            if not rs:
                continue
            times = [r["median_us"] for r in rs if isinstance(r.get("median_us"), (int, float))]
            out[(chapter, name)] = {"bytes": float(rs[0].get("bytes", 0) or 0), "flops": float(rs[0].get("flops", 0) or 0),
                                    "median_us": statistics.median(times) if times else None}
    return out


def compare(decl: dict | None, m: dict) -> dict:
    """One row: the ratios measured / counted and the verdict."""
    dram = (m.get("dram__bytes_read.sum") or 0) + (m.get("dram__bytes_write.sum") or 0)
    res = {"dram": dram, "ncu_flops": m.get("flops") or 0.0, "ncu_us": (m.get("gpu__time_duration.sum") or 0) / 1e3}
    if decl is None:
        return res | {"verdict": "no committed benchmark row to compare with", "agree": None}
    res |= {"bytes": decl["bytes"], "flops": decl["flops"], "median_us": decl["median_us"]}
    notes = []
    res["bytes_ratio"] = dram / decl["bytes"] if decl["bytes"] else None
    if res["bytes_ratio"] is None:
        notes.append("the row declares no bytes")
    elif res["bytes_ratio"] < 1 - TOLERANCE:
        notes.append("DRAM served fewer bytes than counted (an input L2 held, a re-read that hit)")
    elif res["bytes_ratio"] > 1 + TOLERANCE:
        notes.append("DRAM moved more bytes than counted (over-fetched sectors, write-allocate, spills)")
    res["flops_ratio"] = res["ncu_flops"] / decl["flops"] if decl["flops"] else None
    if decl["flops"] and (res["flops_ratio"] < 1 - TOLERANCE or res["flops_ratio"] > 1 + TOLERANCE):
        notes.append("CUDA-core FLOPs differ from the count (work off the FP32/FP16 pipes, or extra arithmetic)")
    res["agree"] = not notes
    res["verdict"] = "within 10%" if not notes else "; ".join(notes)
    return res


def _fmt(x: float | None, digits: int = 3) -> str:
    if x is None:
        return "-"
    return f"{x:.{digits}g}" if abs(x) < 1e4 else f"{x:.3e}"


def block_text(root: Path, gpu: str | None) -> str:
    marker = ("<!-- Written by scripts/results.py (chapters/09_profiling/tools/counted.py) from "
              "docs/results/raw/<GPU>/ch09_ncu.json and bench_chNN.json; edit those, not this block. -->")
    src = root / "docs/results/raw" / gpu / "ch09_ncu.json" if gpu else None
    if not src or not src.exists():
        return (f"{marker}\nNot measured yet: `chapters/09_profiling/tools/gpu_check.sh OUT` writes "
                f"`OUT/ch09_ncu.json` on a GPU; committed as `docs/results/raw/<GPU>/ch09_ncu.json`, it fills this table.")
    doc = json.loads(src.read_text())
    if "skipped" in doc:
        return f"{marker}\nThe ncu run was skipped: {doc['skipped']} (ncu {doc.get('ncu', '?')})."
    decl = declared(root, gpu)
    lines = [marker,
             f"Nsight Compute ({doc.get('ncu', '?')}), `--clock-control {doc.get('clock_control', '?')}` (the GPU's own "
             f"clocks; ncu's default would lock them to base), cache control {doc.get('cache_control', '?')}; "
             f"{doc.get('launch', '')}. Counted: the row's bench::Work; times: ncu's gpu__time_duration and the "
             f"benchmark's median (`{src.relative_to(root).as_posix()}`).", "",
             "| ch | row | counted bytes | DRAM bytes | ratio | counted FLOPs | ncu FLOPs | ratio | ncu us | bench us | verdict |",
             "| --- | --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | --- |"]
    agree = total = 0
    for row, r in sorted(doc.get("rows", {}).items(), key=lambda kv: (kv[1].get("chapter", ""), kv[0])):
        ch = r.get("chapter", "?")
        if "metrics" not in r:
            lines.append(f"| {ch[2:]} | {row} | | | | | | | | | not profiled: {r.get('error', '?')} |")
            continue
        c = compare(decl.get((ch, row)), r["metrics"])
        total += 1
        agree += bool(c.get("agree"))
        lines.append(f"| {ch[2:]} | {row} | {_fmt(c.get('bytes'))} | {_fmt(c['dram'])} | {_fmt(c.get('bytes_ratio'))} | "
                     f"{_fmt(c.get('flops'))} | {_fmt(c['ncu_flops'])} | {_fmt(c.get('flops_ratio'))} | "
                     f"{_fmt(c['ncu_us'])} | {_fmt(c.get('median_us'))} | {c['verdict']} |")
    lines += ["", f"{agree} of {total} profiled rows agree within 10% on bytes and FLOPs."]
    return "\n".join(lines)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--gpu", default="H200")
    ap.add_argument("--root", type=Path, default=REPO, help=argparse.SUPPRESS)
    args = ap.parse_args()
    if not (args.root / "docs/results/raw" / args.gpu).is_dir():
        print(f"counted: --gpu {args.gpu}: no directory docs/results/raw/{args.gpu}", file=sys.stderr)
        return 2
    print(block_text(args.root, args.gpu))
    return 0


if __name__ == "__main__":
    sys.exit(main())
