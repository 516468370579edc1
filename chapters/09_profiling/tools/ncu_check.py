#!/usr/bin/env python3
"""Nsight Compute on the lab's own benchmark rows: counted against measured, and the fingerprints
of the course's classic bugs. GPU only (chapters/09_profiling/tools/gpu_check.sh runs it).

    ncu_check.py --build build/gpu --out OUT [--only ROW_REGEX]

For each row of ROWS, one ncu run of its benchmark executable (`--benchmark_filter`, one
benchmark iteration), one kernel (`--kernel-name`, `--launch-count 1`: the first launch, a
warm-up one), with `--clock-control none` (ncu's default locks the clocks to base: the counts do
not change, the durations would) and ncu's default `--cache-control all` (caches flushed before
each pass: the DRAM bytes of a cold run, which is what the benchmarks' byte counts assume).
Writes OUT/ch09_ncu.json (every metric of every row, the clock mode, the ncu version) and
OUT/ncu_*.log; prints one line per check. tools/counted.py turns the JSON (once committed as
docs/results/raw/<GPU>/ch09_ncu.json) into the README's counted-vs-measured table.
Exit 0: every fingerprint as the lesson says; 1: one is not; 2: usage. Where ncu cannot read the
counters (ERR_NVGPUCTRPERM) every check is "skipped: <that reason>", never passed.
"""
from __future__ import annotations

import argparse
import csv
import io
import json
import re
import shutil
import subprocess
import sys
from pathlib import Path

# dram bytes (read + write), the FP32 / FP16 CUDA-core instruction counters (one per thread and
# instruction: FLOPs = 2 fma + add + mul), the duration.
COUNT_METRICS = [
    "dram__bytes_read.sum", "dram__bytes_write.sum", "lts__t_bytes.sum",
    "sm__sass_thread_inst_executed_op_ffma_pred_on.sum", "sm__sass_thread_inst_executed_op_fadd_pred_on.sum",
    "sm__sass_thread_inst_executed_op_fmul_pred_on.sum", "sm__sass_thread_inst_executed_op_hfma_pred_on.sum",
    "sm__sass_thread_inst_executed_op_hadd_pred_on.sum", "sm__sass_thread_inst_executed_op_hmul_pred_on.sum",
    "gpu__time_duration.sum",
]
# The fingerprints: sectors per request of global loads and stores, shared-memory bank conflicts,
# occupancy (theoretical and achieved) and what limits it.
PRINT_METRICS = [
    "l1tex__t_sectors_pipe_lsu_mem_global_op_ld.sum", "l1tex__t_requests_pipe_lsu_mem_global_op_ld.sum",
    "l1tex__t_sectors_pipe_lsu_mem_global_op_st.sum", "l1tex__t_requests_pipe_lsu_mem_global_op_st.sum",
    "l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_ld.sum", "l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_st.sum",
    "sm__warps_active.avg.pct_of_peak_sustained_active", "sm__maximum_warps_per_active_cycle_pct",
    "launch__registers_per_thread", "launch__block_size", "launch__occupancy_limit_registers",
    "launch__occupancy_limit_warps", "launch__occupancy_limit_shared_mem", "launch__occupancy_limit_blocks",
    "dram__throughput.avg.pct_of_peak_sustained_elapsed",
]

# (chapter, benchmark row, kernel-name regex): one kernel per row, the whole iteration's work
# (rows whose iteration is several kernels are left out: one launch would not be their count).
ROWS = [
    ("ch03", "BM_vector_add", "vector_add_kernel"),
    ("ch03", "BM_saxpy", "saxpy_kernel"),
    ("ch03", "BM_vector_add_grid_stride/scalar", "add_grid_stride_kernel"),
    ("ch03", "BM_vector_add_grid_stride/float4", "add_grid_stride_float4_kernel"),
    ("ch04", "BM_poly/memory:0/pattern:0", "poly_kernel"),
    ("ch04", "BM_strided_copy/stride:1", "strided_copy_kernel"),
    ("ch04", "BM_strided_copy/stride:32", "strided_copy_kernel"),
    ("ch04", "BM_transpose/variant:0/rows:8192/cols:8192", "transpose_naive_kernel"),
    ("ch04", "BM_transpose/variant:1/rows:8192/cols:8192", "transpose_tiled_kernel"),
    ("ch04", "BM_transpose/variant:2/rows:8192/cols:8192", "transpose_tiled_kernel"),
    ("ch05", "BM_stencil/naive/r1", "conv2d_naive_kernel"),
    ("ch05", "BM_stencil/tiled/r1", "conv2d_tiled_kernel"),
    ("ch05", "BM_stencil/tiled/r3", "conv2d_tiled_kernel"),
    ("ch05", "BM_unroll/rolled", "saxpy_rolled_kernel"),
    ("ch05", "BM_unroll/unrolled", "saxpy_unrolled_kernel"),
    ("ch05", "BM_unroll/unrolled_restrict", "saxpy_unrolled_restrict_kernel"),
    ("ch05", "BM_unroll/vectorized_float4", "saxpy_vectorized_kernel"),
    ("ch05", "BM_divergence/divergent", "branchy_divergent_kernel"),
    ("ch05", "BM_divergence/warp_uniform", "branchy_warp_uniform_kernel"),
    ("ch05", "BM_fusion/fused", "bias_relu_scale_fused_kernel"),
    ("ch05", "BM_occupancy/keep128_t256_dyn0K", "occupancy_probe_kernel"),
    ("ch06", "BM_sgemm/naive/1024", "sgemm_naive_kernel"),
    ("ch06", "BM_sgemm/coalesced/4096", "sgemm_coalesced_kernel"),
    ("ch06", "BM_sgemm/smem_tiled/4096", "sgemm_tiled_kernel"),
    ("ch06", "BM_sgemm/blocktile_2d/4096", "sgemm_blocktile_2d_kernel"),
    ("ch06", "BM_sgemm/vectorized/4096", "sgemm_vectorized_kernel"),
    ("ch06", "BM_sgemm/warptile/4096", "sgemm_warptile_kernel"),
    ("ch09", "BM_scale_rows", "scale_rows_kernel"),
    ("ch09", "BM_scale_rows [starter]", "scale_rows_kernel"),  # exercise 9.1's profile, as handed out
    ("ch11", "BM_gemv/fp16/8192x8192", "gemv_fp16_kernel"),
    ("ch11", "BM_gemv/int8/8192x8192", "gemv_int8_kernel"),
]

PERM = "ERR_NVGPUCTRPERM"


def parse_raw_csv(text: str) -> list[dict[str, str]]:
    """`ncu --csv --page raw` output -> one dict per profiled kernel (metric name -> value text).
    Lines before the header (the program's own output, ==PROF== lines) are skipped; the row after
    the header holds the units and is dropped."""
    lines = text.splitlines()
    start = next((i for i, l in enumerate(lines) if l.startswith('"ID"')), None)
    if start is None:
        return []
    rows = list(csv.reader(io.StringIO("\n".join(lines[start:]))))
    header, body = rows[0], rows[1:]
    if body and not body[0][0].strip().isdigit():
        body = body[1:]  # units
    return [dict(zip(header, r)) for r in body if r and r[0].strip().isdigit()]


def number(text: str | None) -> float | None:
    """A metric value as ncu prints it ("1,234,567", "12.5", "n/a") -> float or None."""
    if text is None:
        return None
    t = text.replace(",", "").strip()
    try:
        return float(t)
    except ValueError:
        return None


def flops(m: dict[str, float | None]) -> float:
    """CUDA-core FLOPs from the instruction counters (NERSC's formula: 2 fma + add + mul), FP32
    and FP16. Tensor-core work is not in these counters."""
    g = lambda k: m.get(f"sm__sass_thread_inst_executed_op_{k}_pred_on.sum") or 0.0  # noqa: E731
    return 2 * g("ffma") + g("fadd") + g("fmul") + 2 * g("hfma") + g("hadd") + g("hmul")


def sectors_per_request(m: dict[str, float | None], op: str) -> float | None:
    s, r = m.get(f"l1tex__t_sectors_pipe_lsu_mem_global_op_{op}.sum"), m.get(f"l1tex__t_requests_pipe_lsu_mem_global_op_{op}.sum")
    return s / r if s is not None and r else None


def fingerprints(rows: dict[str, dict]) -> list[tuple[str, bool | None, str]]:
    """(check, verdict, what was read) for the course's classic bugs; None: a row is missing."""
    def m(row: str) -> dict | None:
        return rows.get(row, {}).get("metrics")

    out = []
    bank = "bank conflicts per tile load: unpadded >= 16, padded < 1"
    c1, c32 = m("BM_strided_copy/stride:1"), m("BM_strided_copy/stride:32")
    if c1 and c32:
        a, b = sectors_per_request(c1, "ld"), sectors_per_request(c32, "ld")
        ok = a is not None and b is not None and a <= 4.5 and b >= 16
        out.append(("coalesced copy ~4 sectors/request, stride 32 >= 16", ok, f"stride 1: {a}, stride 32: {b}"))
    else:
        out.append(("coalesced copy ~4 sectors/request, stride 32 >= 16", None, "rows not profiled"))
    t0, t1, t2 = (m(f"BM_transpose/variant:{v}/rows:8192/cols:8192") for v in (0, 1, 2))
    if t1 and t2:
        # The tile's column read is the access the padding fixes: unpadded, the 32 lanes of a warp
        # read one bank (31 extra wavefronts per request); padded, one lane per bank. The counter is
        # not 0 on a conflict-free access (on the H200 the padded tile read ~0.3 per request, and the
        # unpadded tile's row-wise stores ~0.06): it also counts the data-bank cycles that shared
        # accesses lose to the global traffic through the same L1. So the criterion is per request:
        # every element is read once from the tile and stored once, so the tile's load requests are
        # the kernel's global store requests.
        def per_request(x):
            reqs = x.get("l1tex__t_requests_pipe_lsu_mem_global_op_st.sum") or 0
            c = x.get("l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_ld.sum")
            return None if not reqs or c is None else c / reqs
        a, b = per_request(t1), per_request(t2)
        ok = a is not None and b is not None and a >= 16 and b < 1
        out.append((bank, ok, f"conflicts per tile load: unpadded {a if a is None else round(a, 2)}, "
                    f"padded {b if b is None else round(b, 2)}"))
    else:
        out.append((bank, None, "rows not profiled"))
    if t0 and t1:
        a, b = sectors_per_request(t0, "st"), sectors_per_request(t1, "st")
        ok = a is not None and b is not None and a >= 16 and b <= 4.5
        out.append(("transpose store: naive >= 16 sectors/request, tiled ~4", ok, f"naive {a}, tiled {b}"))
    else:
        out.append(("transpose store: naive >= 16 sectors/request, tiled ~4", None, "rows not profiled"))
    return out


def occupancy_check(metrics: dict | None, calc: dict | None, cc: int) -> tuple[str, bool | None, str]:
    """The register-heavy probe: chapter 5's calculator, given ncu's registers per thread, must
    predict ncu's theoretical occupancy and the register limit, and the achieved occupancy cannot
    exceed it (it is lower by the tail and launch ramps)."""
    name = "occupancy: calculator = ncu theoretical >= achieved, register-limited"
    if not metrics or not calc:
        return name, None, "row not profiled or calculator not built"
    theo = (metrics.get("sm__maximum_warps_per_active_cycle_pct") or 0) / 100
    achieved = (metrics.get("sm__warps_active.avg.pct_of_peak_sustained_active") or 0) / 100
    ok = abs(calc["occupancy"] - theo) < 0.01 and achieved <= theo + 0.01 and calc["limiter"] == "registers"
    return name, ok, (f"cc {cc}, {metrics.get('launch__registers_per_thread'):.0f} regs x "
                      f"{metrics.get('launch__block_size'):.0f} threads: calculator {calc['occupancy']:.3f} "
                      f"({calc['limiter']}), ncu theoretical {theo:.3f}, achieved {achieved:.3f}")


def run_calculator(build: Path, cc: int, metrics: dict | None) -> dict | None:
    exe = build / "chapters" / "09_profiling" / "ch09_occupancy_calc"
    if not metrics or not exe.is_file():
        return None
    p = subprocess.run([str(exe), str(cc), str(int(metrics.get("launch__block_size") or 0)),
                        str(int(metrics.get("launch__registers_per_thread") or 0)), "0"],
                       capture_output=True, text=True)
    return json.loads(p.stdout) if p.returncode == 0 else None


def compute_capability() -> int:
    p = subprocess.run(["nvidia-smi", "--query-gpu=compute_cap", "--format=csv,noheader"], capture_output=True, text=True)
    try:
        return int(round(float(p.stdout.split()[0]) * 10))
    except (IndexError, ValueError):
        return 90


def ncu_version(ncu: str) -> str:
    p = subprocess.run([ncu, "--version"], capture_output=True, text=True)
    return (p.stdout.strip().splitlines() or ["?"])[-1]


def profile(ncu: str, exe: Path, row: str, kernel: str, log: Path) -> tuple[dict | None, str]:
    """One ncu run of one benchmark row; (metrics, '') or (None, why)."""
    cmd = [ncu, "--clock-control", "none", "--kernel-name", f"regex:{kernel}", "--launch-count", "1",
           "--metrics", ",".join(COUNT_METRICS + PRINT_METRICS), "--csv", "--page", "raw", "--print-units", "base",
           str(exe), f"--benchmark_filter=^{re.escape(row)}(/manual_time)?$", "--benchmark_min_time=1x"]
    try:
        p = subprocess.run(cmd, capture_output=True, text=True, timeout=120)
        text, rc = p.stdout + p.stderr, p.returncode
    except subprocess.TimeoutExpired:
        text, rc = "timed out after 120 s", None
    log.write_text("$ " + " ".join(cmd) + "\n" + text)
    if PERM in text:
        return None, f"skipped: {PERM}: the driver keeps the GPU counters for admin users (see README, 'Counters and their traps')"
    got = parse_raw_csv(text)
    if not got:
        return None, f"ncu exited {rc} with no kernel of /{kernel}/ profiled (see {log.name})"
    return {k: number(v) for k, v in got[0].items() if k in COUNT_METRICS + PRINT_METRICS} | \
        {"kernel": got[0].get("Kernel Name", "")}, ""


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--build", type=Path, required=True, help="the build directory (build/gpu)")
    ap.add_argument("--out", type=Path, required=True)
    ap.add_argument("--only", help="profile only the rows matching this regex")
    ap.add_argument("--ncu", default=shutil.which("ncu"))
    args = ap.parse_args(argv)
    args.out.mkdir(parents=True, exist_ok=True)
    if not args.ncu:
        print("ncu                                SKIP     skipped: ncu not found")
        return 0
    version = ncu_version(args.ncu)
    rows: dict[str, dict] = {}
    skipped = None
    for chapter, row, kernel in ROWS:
        if args.only and not re.search(args.only, row):
            continue
        starter = row.endswith(" [starter]")
        exe = args.build / "bench" / f"bench_{chapter}{'_starter' if starter else ''}"
        if not exe.is_file():
            rows[row] = {"chapter": chapter, "kernel_regex": kernel, "error": f"{exe} not built"}
            continue
        log = args.out / f"ncu_{chapter}_{re.sub(r'[^A-Za-z0-9]+', '_', row)}.log"
        metrics, why = profile(args.ncu, exe, row.removesuffix(" [starter]"), kernel, log)
        if metrics is None and why.startswith("skipped"):
            skipped = why
            break
        rows[row] = {"chapter": chapter, "kernel_regex": kernel, **({"metrics": metrics} if metrics else {"error": why})}
    if skipped:
        print(f"{'ncu counted vs measured':34} SKIP     {skipped}")
        (args.out / "ch09_ncu.json").write_text(json.dumps({"skipped": skipped, "ncu": version}, indent=1) + "\n")
        return 0
    for r in rows.values():
        if "metrics" in r:
            r["metrics"]["flops"] = flops(r["metrics"])
    doc = {"clock_control": "none", "cache_control": "all (ncu default: caches flushed before each pass)",
           "ncu": version, "launch": "the first launch of the row's kernel (a warm-up launch of bench::run)",
           "rows": rows}
    (args.out / "ch09_ncu.json").write_text(json.dumps(doc, indent=1, sort_keys=True) + "\n")
    good = sum("metrics" in r for r in rows.values())
    print(f"{'ncu counted vs measured':34} {'PASS' if good >= 20 else 'FAIL':8} {good} of {len(rows)} rows profiled "
          f"(clock-control none) -> ch09_ncu.json")
    for r, v in rows.items():
        if "error" in v:
            print(f"{'  ncu ' + r[:28]:34} FAIL     {v['error']}")
    status = 0 if good >= 20 else 1
    for name in ("BM_scale_rows [starter]", "BM_scale_rows"):
        m = rows.get(name, {}).get("metrics")
        if m:
            print(f"{'profile 9.1 ' + ('starter' if 'starter' in name else 'reference'):34} INFO     "
                  f"{sectors_per_request(m, 'ld')} sectors/request (loads), "
                  f"DRAM {m.get('dram__throughput.avg.pct_of_peak_sustained_elapsed')}% of peak, "
                  f"{(m.get('gpu__time_duration.sum') or 0) / 1e3:.0f} us")
    occ = rows.get("BM_occupancy/keep128_t256_dyn0K", {}).get("metrics")
    cc = compute_capability()
    calc = run_calculator(args.build, cc, occ)
    doc["occupancy_calculator"] = calc
    (args.out / "ch09_ncu.json").write_text(json.dumps(doc, indent=1, sort_keys=True) + "\n")
    for name, ok, what in [*fingerprints(rows), occupancy_check(occ, calc, cc)]:
        verdict = "SKIP" if ok is None else ("PASS" if ok else "FAIL")
        print(f"{'fingerprint ' + name[:22]:34} {verdict:8} {name}: {what}")
        status |= 1 if ok is False else 0
    return status


if __name__ == "__main__":
    sys.exit(main())
