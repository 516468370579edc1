#!/usr/bin/env python3
"""Which rows of a benchmark JSON ran throttled? Per row: the clock-event reasons and the SM clock
bench.cpp recorded before and after its timed iterations, and scripts/report.py's verdict.

    bench_flags.py bench_ch03.json [more.json ...]

Exit status: 0 (rows listed); 1 no row carries the clock fields (a build without NVML, or an old
JSON); 2 a file that is not a benchmark JSON (unreadable, empty, or without a row).
"""
from __future__ import annotations

import json
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[3]
sys.path.insert(0, str(ROOT / "scripts"))
sys.path.insert(0, str(Path(__file__).resolve().parent))
import ch12_nvml as nv  # noqa: E402
import report  # noqa: E402


def main(argv: list[str]) -> int:
    if not argv:
        print(__doc__.strip().splitlines()[2].strip(), file=sys.stderr)
        return 2
    seen = 0
    for p in argv:
        try:
            text = Path(p).read_text()
        except OSError as e:
            print(f"bench_flags: {p}: cannot read ({e.strerror})", file=sys.stderr)
            return 2
        if not text.strip():
            # What --benchmark_out leaves when the run wrote nothing, e.g. a --benchmark_filter
            # that matched no row: say that, not a JSON parser's "Expecting value".
            print(f"bench_flags: {p}: the file is empty (did the benchmark run fail, or its "
                  f"--benchmark_filter match no row? see --benchmark_list_tests)", file=sys.stderr)
            return 2
        try:
            data = json.loads(text)
            groups = report.grouped(data)
        except (ValueError, AttributeError, TypeError) as e:
            print(f"bench_flags: {p}: not a Google Benchmark JSON ({e})", file=sys.stderr)
            return 2
        if not groups:
            print(f"bench_flags: {p}: no benchmark row in it", file=sys.stderr)
            return 2
        ctx = data.get("context", {})
        print(f"{p}: gpu {ctx.get('gpu')}, mig {ctx.get('mig', '?')}, reasons at start "
              f"{ctx.get('clock_event_reasons_at_start', '?')}")
        for name, reps in groups.items():
            b = reps[-1]
            if "clock_reasons_after" not in b:
                continue
            seen += 1
            before = nv.reason_names(int(b.get("clock_reasons_before", 0))) or ["none"]
            after = nv.reason_names(int(b["clock_reasons_after"])) or ["none"]
            flag = report.throttle_flag(reps)
            print(f"  {name}: SM {b.get('sm_mhz_before', 0):.0f} -> {b.get('sm_mhz_after', 0):.0f} MHz, reasons "
                  f"{','.join(before)} -> {','.join(after)}" + (f"  THROTTLED: {flag}" if flag else ""))
    if not seen:
        print("bench_flags: no row carries clock_reasons_before/after (built without NVML?)", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
