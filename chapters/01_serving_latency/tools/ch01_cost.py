#!/usr/bin/env python3
"""Chapter 1 cost calculator: what a forward's latency means in GPUs and money.

    chapters/01_serving_latency/tools/ch01_cost.py --price 3.50 --batch 16 --latency-us 250
    chapters/01_serving_latency/tools/ch01_cost.py --price 3.50 --json bench_ch01.json [--utilization 0.6] [--target-rps 5000]

From a measured latency per batch (or the samples/s of every BM_block row of a bench_ch01 JSON):
  throughput per GPU   = batch / latency x streams served at once            (requests per second)
  cost per 1M requests = price per hour / (throughput x 3600 x utilization) x 1e6
  GPUs for a target    = ceil(target / (throughput x utilization))
`utilization` is the fraction of the hour the GPU serves at that rate (traffic is not flat; 1.0 is
the floor of the cost). Prices are yours to give: nothing here is a quote.
"""
from __future__ import annotations

import argparse
import json
import math
import re
import sys
from pathlib import Path


def _positive(name: str, value: float) -> float:
    if not isinstance(value, (int, float)) or math.isnan(value) or value <= 0 or math.isinf(value):
        raise ValueError(f"invalid argument '{name}': must be a finite number > 0 (got {value!r})")
    return float(value)


def _utilization(value: float) -> float:
    """A fraction of the hour in (0, 1], else ValueError naming 'utilization'."""
    util = _positive("utilization", value)
    if util > 1:
        raise ValueError(f"invalid argument 'utilization': a fraction of the hour, at most 1 (got {value!r})")
    return util


def throughput_per_gpu(batch: int, latency_us: float, concurrent: int = 1) -> float:
    """Requests per second of one GPU serving `concurrent` batches of `batch` at once, each taking
    `latency_us` (concurrent > 1 only holds while the GPU is not saturated: measure it)."""
    if not isinstance(batch, int) or batch < 1:
        raise ValueError(f"invalid argument 'batch': must be an integer >= 1 (got {batch!r})")
    if not isinstance(concurrent, int) or concurrent < 1:
        raise ValueError(f"invalid argument 'concurrent': must be an integer >= 1 (got {concurrent!r})")
    return batch * concurrent * 1e6 / _positive("latency_us", latency_us)


def cost_per_million(requests_per_s: float, price_per_hour: float, utilization: float = 1.0) -> float:
    """Dollars (or whatever currency the price is in) per million requests."""
    rps = _positive("requests_per_s", requests_per_s)
    price = _positive("price_per_hour", price_per_hour)
    util = _utilization(utilization)
    return price / (rps * 3600.0 * util) * 1e6


def gpus_needed(target_rps: float, rps_per_gpu: float, utilization: float = 1.0) -> int:
    target = _positive("target_rps", target_rps)
    per = _positive("rps_per_gpu", rps_per_gpu)
    util = _utilization(utilization)
    return math.ceil(target / (per * util) - 1e-9)


ROW = re.compile(r"^BM_block/(\w+)/batch:(\d+)")
MODES = ("eager_alloc", "eager", "fused", "graph")


def rows_from_json(data: dict) -> list[dict]:
    """(mode, batch, median_us, samples/s) of every BM_block iteration row of a bench_ch01 JSON."""
    out = []
    for b in data.get("benchmarks", []):
        if b.get("run_type", "iteration") != "iteration" or b.get("error_occurred"):
            continue
        m = ROW.match(b.get("name", ""))
        if not m or "samples/s" not in b:
            continue
        out.append({"mode": m.group(1), "batch": int(m.group(2)),
                    "median_us": float(b.get("median_us", 0.0)), "samples_per_s": float(b["samples/s"])})
    return sorted(out, key=lambda r: (r["batch"], MODES.index(r["mode"]) if r["mode"] in MODES else len(MODES)))


def table(rows: list[dict], price: float, utilization: float, target_rps: float | None) -> str:
    head = "| batch | mode | latency (µs) | requests/s per GPU | cost per 1M requests |"
    sep = "| ---: | --- | ---: | ---: | ---: |"
    if target_rps:
        head += f" GPUs for {target_rps:g} req/s |"
        sep += " ---: |"
    lines = [head, sep]
    for r in rows:
        line = (f"| {r['batch']} | {r['mode']} | {r['median_us']:.1f} | {r['samples_per_s']:.0f} | "
                f"{cost_per_million(r['samples_per_s'], price, utilization):.4f} |")
        if target_rps:
            line += f" {gpus_needed(target_rps, r['samples_per_s'], utilization)} |"
        lines.append(line)
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--price", type=float, required=True, help="GPU price per hour")
    p.add_argument("--utilization", type=float, default=1.0, help="fraction of the hour at that rate (default 1)")
    p.add_argument("--target-rps", type=float, default=None, help="requests per second to serve")
    p.add_argument("--json", type=Path, help="bench_ch01 JSON (--benchmark_out)")
    p.add_argument("--batch", type=int, help="with --latency-us: one measurement by hand")
    p.add_argument("--latency-us", type=float)
    p.add_argument("--concurrent", type=int, default=1, help="batches in flight at once (default 1)")
    a = p.parse_args(argv)
    try:
        if a.json:
            rows = rows_from_json(json.loads(a.json.read_text()))
            if not rows:
                print(f"{a.json}: no BM_block rows with samples/s (run bench_ch01 on a GPU first)")
                return 1
        elif a.batch is not None and a.latency_us is not None:
            rps = throughput_per_gpu(a.batch, a.latency_us, a.concurrent)
            rows = [{"mode": "given", "batch": a.batch, "median_us": a.latency_us, "samples_per_s": rps}]
        else:
            p.error("give --json FILE, or --batch and --latency-us")
        print(table(rows, a.price, a.utilization, a.target_rps))
    except ValueError as e:
        print(f"ch01_cost: {e}", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main())
