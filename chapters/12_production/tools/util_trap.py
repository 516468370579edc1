#!/usr/bin/env python3
"""The utilization trap: NVML's "GPU utilization" (DCGM_FI_DEV_GPU_UTIL) is the share of time in
which *a kernel was running*, not the share of the GPU that worked. One block on one SM of 132
reads ~100 %. This runs the chapter's busy kernel twice (one block; 4 blocks per SM), samples NVML
at 10 Hz during each, and puts the utilization beside an SM-active figure: the SMs the kernel
occupies (its own block count, at most one SM per block) and, where ncu is installed, Nsight
Compute's sm__cycles_active.avg / sm__cycles_elapsed.avg (--clock-control none: clocks untouched).

    util_trap.py --load build/gpu/chapters/12_production/ch12_load [--seconds 3] [--out OUT.json]
                 [--no-ncu] [--fake FIXTURE]

Exit status: 0; 2 usage error; 4 the GPU could not be read; 1 a load failed.
"""
from __future__ import annotations

import argparse
import json
import shutil
import statistics
import subprocess
import sys
import threading
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import ch12_nvml as nv  # noqa: E402

EXIT_OK, EXIT_FAIL, EXIT_USAGE, EXIT_NO_GPU = 0, 1, 2, 4


def sample_while(backend, proc: subprocess.Popen, hz: float = 10.0, device: int = 0) -> list[dict]:
    out, period = [], 1.0 / hz
    t0 = time.monotonic()
    while proc.poll() is None:
        s = backend.fast_sample(device)
        out.append({"t": round(time.monotonic() - t0, 3), "util": s.get("util"), "sm_mhz": s.get("sm"),
                    "power_w": s.get("power_w")})
        time.sleep(period)
    return out


def steady(samples: list[dict], key: str) -> float | None:
    """The median over the middle of the run (the first and last 20 % dropped: ramp up/down)."""
    vals = [s[key] for s in samples if s.get(key) is not None]
    k = len(vals) // 5
    mid = vals[k:len(vals) - k] or vals
    return statistics.median(mid) if mid else None


def ncu_sm_active(load: str, blocks: int) -> tuple[float | None, str]:
    """Nsight Compute's SM-active share for a short run of the load, or (None, why)."""
    ncu = shutil.which("ncu")
    if not ncu:
        return None, "ncu not installed"
    cmd = [ncu, "--clock-control", "none", "--metrics", "sm__cycles_active.avg,sm__cycles_elapsed.avg", "--csv",
           "--launch-count", "1", load, "--blocks", str(blocks), "--seconds", "0.05"]
    try:
        r = subprocess.run(cmd, capture_output=True, text=True, timeout=120)
    except (OSError, subprocess.TimeoutExpired) as e:
        return None, f"ncu failed: {e}"
    vals = {}
    for line in r.stdout.splitlines():
        cells = [c.strip('"') for c in line.split('","')]
        if len(cells) > 3 and cells[-3] in ("sm__cycles_active.avg", "sm__cycles_elapsed.avg"):
            try:
                vals[cells[-3]] = float(cells[-1].replace(",", ""))
            except ValueError:
                pass
    if len(vals) == 2 and vals["sm__cycles_elapsed.avg"] > 0:
        return 100.0 * vals["sm__cycles_active.avg"] / vals["sm__cycles_elapsed.avg"], "ncu"
    return None, f"ncu gave no metrics (rc {r.returncode}): {(r.stderr or r.stdout)[-300:]}"


def run_case(backend, load: str, blocks: int, seconds: float, use_ncu: bool) -> dict:
    cmd = [load, "--blocks", str(blocks), "--seconds", str(seconds)]
    try:
        proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    except OSError as e:
        return {"blocks": blocks, "error": f"cannot run {load}: {e}"}
    samples: list[dict] = []
    t = threading.Thread(target=lambda: samples.extend(sample_while(backend, proc)))
    t.start()
    out, err = proc.communicate()
    t.join()
    if proc.returncode != 0:
        return {"blocks": blocks, "error": f"{' '.join(cmd)} exited {proc.returncode}: {err.strip()[-300:]}"}
    info = json.loads(out.strip().splitlines()[-1])
    case = {"blocks": blocks, "load": info, "samples": samples, "nvml_util_pct": steady(samples, "util"),
            "sm_busy_pct": 100.0 * info["sms_busy"] / info["sm_count"], "sm_mhz": steady(samples, "sm_mhz"),
            "power_w": steady(samples, "power_w")}
    if use_ncu:
        case["ncu_sm_active_pct"], case["ncu_note"] = ncu_sm_active(load, blocks)
    return case


def table(cases: list[dict]) -> str:
    lines = ["| kernel | NVML GPU util (%) | SMs busy (own count) | ncu SM active (%) | SM MHz | power (W) |",
             "| --- | ---: | ---: | ---: | ---: | ---: |"]
    for c in cases:
        if "error" in c:
            lines.append(f"| {c['blocks']} block(s) | error: {c['error']} | | | | |")
            continue
        f = lambda v, d=0: "" if v is None else f"{v:.{d}f}"  # noqa: E731
        lines.append(f"| {c['blocks']} block(s) | {f(c['nvml_util_pct'])} | {c['load']['sms_busy']} / "
                     f"{c['load']['sm_count']} ({c['sm_busy_pct']:.1f} %) | "
                     f"{f(c.get('ncu_sm_active_pct'), 1) or c.get('ncu_note', '')} | {f(c['sm_mhz'])} | "
                     f"{f(c['power_w'])} |")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="util_trap.py", description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--load", required=True, help="the ch12_load executable")
    ap.add_argument("--seconds", type=float, default=3.0)
    ap.add_argument("--out", type=Path)
    ap.add_argument("--no-ncu", action="store_true")
    ap.add_argument("--fake", metavar="FIXTURE")
    args = ap.parse_args(argv)
    if not Path(args.load).is_file():
        ap.error(f"--load {args.load}: no such file (build it: cmake --build --preset gpu --target ch12_load)")
    if not 0.5 <= args.seconds <= 600:
        ap.error(f"--seconds {args.seconds}: must be in [0.5, 600]")
    try:
        backend = nv.open_backend(args.fake)
    except nv.FixtureError as e:
        ap.error(str(e))
    except nv.NvmlError as e:
        print(f"util_trap: cannot read the GPU: {e}", file=sys.stderr)
        return EXIT_NO_GPU
    try:
        cases = [run_case(backend, args.load, 1, args.seconds, not args.no_ncu)]
        sms = cases[0]["load"]["sm_count"] if "load" in cases[0] else 132
        cases.append(run_case(backend, args.load, 4 * sms, args.seconds, not args.no_ncu))
    except nv.NvmlError as e:
        print(f"util_trap: an NVML call failed: {e}", file=sys.stderr)
        return EXIT_NO_GPU
    finally:
        backend.close()
    print(table(cases))
    if args.out:
        args.out.write_text(json.dumps({"cases": cases}, indent=1) + "\n")
    return EXIT_FAIL if any("error" in c for c in cases) else EXIT_OK


if __name__ == "__main__":
    sys.exit(main())
