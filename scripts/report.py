#!/usr/bin/env python3
"""Benchmark JSON (Google Benchmark --benchmark_out) -> Markdown tables, key ratios and plots.

    scripts/report.py OUT_DIR bench_ch03.json [bench_ch04.json ...] [--title "H200 run"]

Writes OUT_DIR/report.md (one table per chapter, the run's GPU context, the key ratios against the
vendor library measured in the same run) and, when matplotlib is installed, OUT_DIR/<chapter>_<family>.png
for every benchmark family with a numeric argument (stride, offset, transfer size, ...).
Only numbers from the JSON files appear: nothing is typed in by hand.
"""
from __future__ import annotations

import argparse
import json
import re
import sys
from pathlib import Path

# Key ratios per chapter: (title, numerator rows, denominator rows, metric). Rows are matched by
# regex against "name [label]" (the /manual_time suffix removed); the best (max) matching row counts.
KEY_RATIOS: dict[str, list[tuple[str, str, str, str]]] = {
    "ch04": [
        ("best transpose 8192x8192 / cudaMemcpy D2D of the same bytes", r"^BM_transpose/variant:\d/rows:8192/cols:8192", r"^BM_transpose_memcpy/rows:8192/cols:8192", "GB/s"),
        ("best transpose 8191x8209 / cudaMemcpy D2D of the same bytes", r"^BM_transpose/variant:\d/rows:8191/cols:8209", r"^BM_transpose_memcpy/rows:8191/cols:8209", "GB/s"),
        ("padded / unpadded tiled transpose 8192x8192 (bank conflicts removed)", r"^BM_transpose/variant:2/rows:8192/cols:8192", r"^BM_transpose/variant:1/rows:8192/cols:8192", "GB/s"),
        ("pinned / pageable host-to-device, 256 MiB", r"^BM_h2d/pinned:1/bytes:268435456", r"^BM_h2d/pinned:0/bytes:268435456", "GB/s"),
    ],
    "ch05": [
        ("best reduction / CUB DeviceReduce::Sum, 2^28 floats", r"^BM_reduce_sum/[0-9]", r"^BM_reduce_sum_cub$", "GB/s"),
        ("decoupled look-back scan / CUB DeviceScan::InclusiveSum, 2^28 int", r"^BM_scan_int/2", r"^BM_scan_int_cub$", "GB/s"),
        ("decoupled look-back scan / CUB DeviceScan::InclusiveSum, 2^28 float", r"^BM_scan_float/2", r"^BM_scan_float_cub$", "GB/s"),
    ],
    "ch06": [
        ("best SGEMM / cuBLAS SGEMM (FP32, no TF32), 4096^3", r"^BM_sgemm/\w+/4096", r"^BM_sgemm_cublas/4096", "TFLOP/s"),
        ("warp-tiled SGEMM / cuBLAS, 4095^3 (all edges)", r"^BM_sgemm/warptile/4095", r"^BM_sgemm_cublas/4095", "TFLOP/s"),
        ("WMMA fp16 GEMM / cuBLAS GemmEx fp16, 8192^3", r"^BM_tc_gemm/wmma_fp16/8192", r"^BM_tc_gemm_cublas/fp16/8192", "TFLOP/s"),
        ("wgmma bf16 GEMM / cuBLAS GemmEx bf16, 8192^3", r"^BM_tc_gemm/wgmma_bf16/8192", r"^BM_tc_gemm_cublas/bf16/8192", "TFLOP/s"),
    ],
    "ch03": [
        ("vector add (one thread per element) / cudaMemcpy D2D", r"^BM_vector_add$", r"^BM_memcpy_d2d$", "GB/s"),
        ("best vector add / cudaMemcpy D2D", r"^BM_vector_add", r"^BM_memcpy_d2d$", "GB/s"),
        ("saxpy / cudaMemcpy D2D", r"^BM_saxpy$", r"^BM_memcpy_d2d$", "GB/s"),
    ],
}

# Ladders: every step of a ladder beside the vendor row of the same size, as "value (pct%)".
# (title, step rows with named groups `step` and `size`, vendor row with {size}, metric).
LADDERS: dict[str, list[tuple[str, str, str, str]]] = {
    "ch06": [
        ("SGEMM ladder, TFLOP/s (% of cuBLAS SGEMM, FP32 without TF32, same size)",
         r"^BM_sgemm/(?P<step>\w+)/(?P<size>\d+)$", r"^BM_sgemm_cublas/{size}$", "TFLOP/s"),
        ("Tensor-core GEMM, TFLOP/s (% of cuBLAS GemmEx of the same type and size)",
         r"^BM_tc_gemm/(?P<step>\w+?_(?P<type>fp16|bf16))/(?P<size>\d+)$", r"^BM_tc_gemm_cublas/{type}/{size}$", "TFLOP/s"),
    ],
}


# Fields every row has (Google Benchmark's own, and the ones with a column of their own).
STANDARD_KEYS = {"family_index", "per_family_instance_index", "repetitions", "repetition_index",
                 "threads", "iterations", "real_time", "cpu_time", "median_us", "GB/s", "TFLOP/s",
                 "pct_of_copy", "sm_mhz_after", "temp_c_after", "bytes", "flops"}


def clean_name(b: dict) -> str:
    name = re.sub(r"/(manual_time|real_time)$", "", b.get("name", ""))
    label = b.get("label", "")
    return f"{name} [{label}]" if label else name


def rows(data: dict) -> list[dict]:
    return [b for b in data.get("benchmarks", []) if b.get("run_type", "iteration") == "iteration"]


def best(data: dict, pattern: str, metric: str) -> tuple[float, str] | None:
    rx = re.compile(pattern)
    found = [(b[metric], clean_name(b)) for b in rows(data) if metric in b and rx.search(clean_name(b))]
    return max(found) if found else None


def key_ratios(chapter: str, data: dict) -> list[dict]:
    out = []
    for title, num, den, metric in KEY_RATIOS.get(chapter, []):
        a, b = best(data, num, metric), best(data, den, metric)
        if a and b and b[0] > 0:
            out.append({"label": title, "ratio": a[0] / b[0], "numerator": a[1], "denominator": b[1],
                        "text": f"{100 * a[0] / b[0]:.1f}% ({a[1]}: {a[0]:.0f} {metric} vs {b[1]}: {b[0]:.0f} {metric})"})
        else:
            out.append({"label": title, "ratio": None, "text": "rows missing in this run"})
    return out


def ladder_tables(chapter: str, data: dict) -> list[str]:
    """One Markdown table per ladder: a row per step, a column per size, each cell the step's
    metric and its percentage of the vendor row of the same size (same run)."""
    out = []
    by_name = {re.sub(r"/(manual_time|real_time)$", "", b.get("name", "")): b for b in rows(data)}
    for title, step_rx, vendor_tpl, metric in LADDERS.get(chapter, []):
        cells: dict[str, dict[str, str]] = {}
        sizes: list[str] = []
        for name, b in by_name.items():
            m = re.match(step_rx, name)
            if not m or metric not in b:
                continue
            g = m.groupdict()
            vendor = next((v for n, v in by_name.items() if re.match(vendor_tpl.format(**g), n) and metric in v), None)
            pct = f" ({100 * b[metric] / vendor[metric]:.1f}%)" if vendor and vendor[metric] > 0 else ""
            cells.setdefault(g["step"], {})[g["size"]] = f"{b[metric]:.2f}{pct}"
            if g["size"] not in sizes:
                sizes.append(g["size"])
        if not cells:
            continue
        sizes.sort(key=int)
        out += ["", f"{title}:", "", "| step | " + " | ".join(sizes) + " |",
                "| --- | " + " | ".join("---:" for _ in sizes) + " |"]
        out += [f"| {step} | " + " | ".join(c.get(sz, "") for sz in sizes) + " |" for step, c in cells.items()]
    return out


def fmt(v, digits=1):
    return "" if v is None else f"{v:.{digits}f}"


def chapter_table(chapter: str, data: dict) -> str:
    ctx = data.get("context", {})
    lines = [f"## {chapter}", ""]
    keys = ["gpu", "compute_capability", "nvidia_driver", "cuda_runtime", "copy_ceiling_GBps",
            "sm_clock_mhz_at_start", "temperature_c_at_start", "clock_event_reasons_at_start"]
    lines.append("Context: " + ", ".join(f"{k} = {ctx[k]}" for k in keys if k in ctx) + f", date = {ctx.get('date', '?')}")
    lines += ["", "| benchmark | median time (us) | GB/s | TFLOP/s | % of copy | other counters | SM MHz after |",
              "| --- | ---: | ---: | ---: | ---: | --- | ---: |"]
    for b in rows(data):
        other = ", ".join(f"{k} {v:.4g}" for k, v in b.items()
                          if isinstance(v, (int, float)) and k not in STANDARD_KEYS)
        lines.append(f"| {clean_name(b)} | {fmt(b.get('median_us'), 1)} | {fmt(b.get('GB/s'), 0)} | "
                     f"{fmt(b.get('TFLOP/s'), 2)} | {fmt(b.get('pct_of_copy'), 1)} | {other} | "
                     f"{fmt(b.get('sm_mhz_after'), 0)} |")
    lines += ladder_tables(chapter, data)
    ratios = key_ratios(chapter, data)
    if ratios:
        lines += ["", "Key ratios (same run):", ""]
        lines += [f"- {r['label']}: {r['text']}" for r in ratios]
    return "\n".join(lines) + "\n"


def plot_families(chapter: str, data: dict, out_dir: Path) -> list[Path]:
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        return []
    # Family = the benchmark name without its key:value arguments; the x axis is the argument
    # with the most distinct values (stride, offset, bytes); the other arguments make the series.
    groups: dict[str, list[tuple[dict[str, int], float, str]]] = {}
    for b in rows(data):
        name = clean_name(b)
        args_ = {k: int(v) for k, v in re.findall(r"/(\w+):(\d+)", name)}
        if not args_ or "GB/s" not in b:
            continue
        fam = name.split("/")[0]
        groups.setdefault(fam, []).append((args_, b["GB/s"], b.get("label", "")))
    fams: dict[tuple[str, str], list[tuple[float, float, str]]] = {}
    for fam, pts in groups.items():
        keys = {k for a, _, _ in pts for k in a}
        xkey = max(keys, key=lambda k: len({a.get(k) for a, _, _ in pts}))
        for a, y, label in pts:
            if xkey not in a:
                continue
            series = " ".join(f"{k}:{v}" for k, v in a.items() if k != xkey) + (f" {label}" if label else "")
            fams.setdefault((fam, xkey), []).append((float(a[xkey]), y, series.strip()))
    written = []
    for (fam, arg), pts in fams.items():
        if len(pts) < 3:
            continue
        fig, ax = plt.subplots(figsize=(6, 3.5))
        series: dict[str, list[tuple[float, float]]] = {}
        for x, y, rest in pts:
            series.setdefault(rest or fam, []).append((x, y))
        for name, p in series.items():
            p.sort()
            ax.plot([x for x, _ in p], [y for _, y in p], marker="o", label=name)
        if max(x for x, _, _ in pts) / max(min(x for x, _, _ in pts), 1) > 64:
            ax.set_xscale("log", base=2)
        ax.set_xlabel(arg)
        ax.set_ylabel("GB/s")
        ax.set_title(f"{chapter} {fam}")
        ax.grid(True, alpha=0.3)
        if len(series) > 1:
            ax.legend(fontsize=7)
        fig.tight_layout()
        path = out_dir / f"{chapter}_{re.sub(r'[^A-Za-z0-9_]+', '_', fam)}_{arg}.png"
        fig.savefig(path, dpi=110)
        plt.close(fig)
        written.append(path)
    return written


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("out_dir", type=Path)
    ap.add_argument("json", nargs="+", type=Path)
    ap.add_argument("--title", default="Benchmark results")
    args = ap.parse_args()
    args.out_dir.mkdir(parents=True, exist_ok=True)
    parts = [f"# {args.title}", "",
             "Generated by scripts/report.py from Google Benchmark JSON; every number below was measured "
             "in the run named by its context line. Ratios compare rows of the same run.", ""]
    for path in args.json:
        chapter = path.stem.replace("bench_", "")
        data = json.loads(path.read_text())
        parts.append(chapter_table(chapter, data))
        for png in plot_families(chapter, data, args.out_dir):
            parts.append(f"![{png.stem}]({png.name})\n")
    (args.out_dir / "report.md").write_text("\n".join(parts))
    print(f"report: wrote {args.out_dir / 'report.md'}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
