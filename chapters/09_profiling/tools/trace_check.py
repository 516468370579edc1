#!/usr/bin/env python3
"""Reads Chrome-trace JSON (apps/trace_pipeline.cpp, the CUPTI recorder) and finds where copies
overlap kernels: the timeline question Nsight Systems answers, asked of our own trace.

    trace_check.py FILE.json ...                     # per file: busy times, overlap, NVTX ranges
    trace_check.py --run ch09_trace_pipeline --out DIR   # record, then assert: the pipelined
        # trace overlaps copies with kernels and the serial one does not (ctest's GPU test)

Overlap = the time during which at least one copy and at least one kernel run at once (a sweep
over the intervals), as a fraction of the time some copy runs. Exit 0 / 1 (assertion) / 2 (usage);
"skipped: <reason>" (exit 0) where the recorder says so.
"""
from __future__ import annotations

import argparse
import json
import subprocess
import sys
from pathlib import Path


def load(path: Path) -> list[dict]:
    """The complete events ("ph": "X") of a Chrome-trace JSON file; ValueError naming the file when
    it is not one."""
    try:
        data = json.loads(path.read_text())
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as e:
        raise ValueError(f"{path}: not a readable JSON file ({e})") from None
    events = data.get("traceEvents") if isinstance(data, dict) else None
    if not isinstance(events, list):
        raise ValueError(f"{path}: not a Chrome trace (no 'traceEvents' list)")
    return [e for e in events if isinstance(e, dict) and e.get("ph") == "X"]


def busy(intervals: list[tuple[float, float]]) -> list[tuple[float, float]]:
    """The union of intervals, as disjoint sorted intervals."""
    out: list[list[float]] = []
    for a, b in sorted(intervals):
        if out and a <= out[-1][1]:
            out[-1][1] = max(out[-1][1], b)
        else:
            out.append([a, b])
    return [(a, b) for a, b in out]


def length(intervals: list[tuple[float, float]]) -> float:
    return sum(b - a for a, b in intervals)


def intersect(x: list[tuple[float, float]], y: list[tuple[float, float]]) -> list[tuple[float, float]]:
    out, i, j = [], 0, 0
    while i < len(x) and j < len(y):
        a, b = max(x[i][0], y[j][0]), min(x[i][1], y[j][1])
        if a < b:
            out.append((a, b))
        if x[i][1] < y[j][1]:
            i += 1
        else:
            j += 1
    return out


def summary(events: list[dict]) -> dict:
    """Busy time of copies and kernels (us), their overlap, streams used, NVTX range names."""
    span = lambda cat: busy([(e["ts"], e["ts"] + e["dur"]) for e in events if e.get("cat") == cat])  # noqa: E731
    copies, kernels = span("memcpy"), span("kernel")
    both = length(intersect(copies, kernels))
    return {"copy_us": length(copies), "kernel_us": length(kernels), "overlap_us": both,
            "overlap_fraction": both / length(copies) if copies else 0.0,
            "streams": sorted({e["tid"] for e in events if e.get("cat") in ("memcpy", "kernel")}),
            "kernels": sum(e.get("cat") == "kernel" for e in events),
            "copies": sum(e.get("cat") == "memcpy" for e in events),
            "ranges": sorted({e["name"] for e in events if e.get("cat") == "nvtx"})}


def judge(serial: dict, pipelined: dict) -> list[tuple[str, bool, str]]:
    return [
        ("serial: copies never overlap kernels", serial["copies"] > 0 and serial["kernels"] > 0 and serial["overlap_us"] == 0,
         f"{serial['copies']} copies, {serial['kernels']} kernels, overlap {serial['overlap_us']:.1f} us"),
        ("pipelined: copies overlap kernels", pipelined["overlap_fraction"] > 0.05 and len(pipelined["streams"]) > 1,
         f"overlap {pipelined['overlap_us']:.1f} us = {100 * pipelined['overlap_fraction']:.0f}% of the copy time, "
         f"streams {pipelined['streams']}"),
        ("NVTX ranges recorded", "ch07 chunked pipeline" in pipelined["ranges"] and "ch07 serial pipeline" in serial["ranges"],
         f"serial {serial['ranges']}, pipelined {pipelined['ranges']}"),
    ]


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("files", nargs="*", type=Path)
    ap.add_argument("--run", type=Path, help="apps/trace_pipeline's executable")
    ap.add_argument("--out", type=Path, help="with --run: where it writes the traces")
    args = ap.parse_args(argv)
    if args.run:
        if not args.out:
            print("trace_check: --run needs --out", file=sys.stderr)
            return 2
        args.out.mkdir(parents=True, exist_ok=True)
        p = subprocess.run([str(args.run), str(args.out)], capture_output=True, text=True, timeout=300)
        print(p.stdout + p.stderr, end="")
        if p.stdout.startswith("skipped: "):
            return 0
        if p.returncode != 0:
            print(f"trace_check: {args.run.name} exited {p.returncode}")
            return 1
        try:
            serial, pipelined = (summary(load(args.out / f)) for f in ("trace_serial.json", "trace_pipelined.json"))
        except ValueError as e:
            print(f"trace_check: FAIL the recorder's trace: {e}")
            return 1
        failed = False
        for name, ok, what in judge(serial, pipelined):
            print(f"trace_check: {'PASS' if ok else 'FAIL'} {name}: {what}")
            failed |= not ok
        return 1 if failed else 0
    if not args.files:
        ap.print_usage(sys.stderr)
        return 2
    for f in args.files:
        if not f.is_file():
            print(f"trace_check: {f}: no such file", file=sys.stderr)
            return 2
        try:
            events = load(f)
        except ValueError as e:
            print(f"trace_check: {e}", file=sys.stderr)
            return 2
        print(f"{f}: {json.dumps(summary(events))}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
