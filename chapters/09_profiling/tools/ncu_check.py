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

    ncu_check.py --build build/gpu --out OUT --tc [--only ROW_REGEX]

profiles, instead of the rows above, chapter 6's tensor-core GEMM steps at 4096^3 (TC_ROWS: WMMA,
mma.sync, wgmma, cuBLAS) with what limits a tensor-core kernel (TC_METRICS: tensor pipe, issue
slots, shared-memory wavefronts and bank conflicts, ldmatrix, warps, registers, warp stall
reasons) and writes OUT/ch06_tc_ncu.json (and OUT/ncu_tc_*.log); chapter 6's
tools/tc_ncu.py turns it (committed as docs/results/raw/<GPU>/ch06_tc_ncu.json) into the
README's table. Exit 0: every row profiled (or the counters not readable: skipped); 1: not.
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
    "lts__t_sectors_srcunit_tex_op_read.sum",  # the read sectors the L2 received from the SMs
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
    # At r = 3 on this 8192 x 8192 image the reference's launcher picks its strip kernel (the
    # stretch of exercise 5.5, stencil_tiled.cu) where it gives every SM a tile; else the tile kernel.
    ("ch05", "BM_stencil/tiled/r3", "conv2d_(strip|tiled)_kernel"),
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

# Chapter 2's L2 rows, profiled for one fingerprint (not for the counted-vs-measured table: their
# bytes are L2 bytes, not DRAM bytes): does the L2 receive the sectors the row's loads ask for, or
# does the SM merge requests first (then the row's GB/s is not the L2's)?
L2_ROWS = [
    ("ch02", "BM_l2_read/bytes:16777216/tiles", "l2_tiles_kernel"),
    ("ch02", "BM_l2_read/bytes:16777216/warps:64", "l2_read_kernel"),
]

PERM = "ERR_NVGPUCTRPERM"

# Chapter 6's tensor-core GEMM steps (--tc): (step, chapter, benchmark row, kernel-name regex). Each
# row's process launches its kernel first in bench::verify (the hand-written rows then cuBLAS's
# kernel for the comparison; before both only fill_kernel and convert_kernel, the operands' setup),
# so the first launch matching is the row's own kernel. cuBLAS's kernel names vary by version and
# GPU (nvjet_* on Hopper with CUDA 12.8+, sm90_xmma_gemm_* or cutlass_* before): the regex takes
# the first GEMM launch of the cuBLAS row, and the JSON records which kernel it was.
TC_ROWS = [
    ("WMMA", "ch06", "BM_tc_gemm/wmma_fp16/4096", "wmma_gemm_kernel"),
    ("mma.sync", "ch06", "BM_tc_gemm/mma_fp16/4096", "mma_gemm_kernel"),
    ("wgmma", "ch06", "BM_tc_gemm/wgmma_bf16/4096", "wgmma_gemm_kernel"),
    ("cuBLAS", "ch06", "BM_tc_gemm_cublas/fp16/4096", "nvjet|xmma|gemm|cutlass"),
]
# The tensor pipe: on sm_90 the hmma counters also count wgmma (cuBLAS's nvjet kernel reads ~90%
# active on sm__pipe_tensor_op_hmma_cycles_active); the gmma names, where this ncu has them, count
# wgmma alone. Both are asked for; a name this ncu does not know is dropped (profile()), and the
# renderer takes the larger of those present (tensor_pipe()).
TENSOR_PIPE_METRICS = {
    "cycles": ["sm__pipe_tensor_op_hmma_cycles_active.avg.pct_of_peak_sustained_active",
               "sm__pipe_tensor_op_gmma_cycles_active.avg.pct_of_peak_sustained_active"],
    "inst": ["sm__inst_executed_pipe_tensor_op_hmma.avg.pct_of_peak_sustained_active",
             "sm__inst_executed_pipe_tensor_op_gmma.avg.pct_of_peak_sustained_active"],
}
# Warp stall reasons (ncu's WarpStateStats): warps stalled per issued instruction, by reason.
# "selected" is the issuing warp itself (1 per issue), not a stall.
STALL_REASONS = ["barrier", "long_scoreboard", "short_scoreboard", "math_pipe_throttle", "mio_throttle", "wait",
                 "not_selected", "selected", "sleeping", "lg_throttle", "dispatch_stall", "no_instruction",
                 "branch_resolving", "membar"]


def stall_metric(reason: str) -> str:
    return f"smsp__average_warps_issue_stalled_{reason}_per_issue_active.ratio"


TC_METRICS = [
    *TENSOR_PIPE_METRICS["cycles"], *TENSOR_PIPE_METRICS["inst"],
    "smsp__issue_active.avg.pct_of_peak_sustained_active",
    "l1tex__data_pipe_lsu_wavefronts_mem_shared.avg.pct_of_peak_sustained_elapsed",
    "l1tex__data_pipe_lsu_wavefronts_mem_shared.sum", "l1tex__data_bank_conflicts_pipe_lsu_mem_shared.sum",
    "smsp__inst_executed_op_ldsm.sum", "smsp__inst_executed.sum",
    "sm__warps_active.avg.per_cycle_active", "sm__warps_active.avg.pct_of_peak_sustained_active",
    "launch__registers_per_thread", "launch__block_size", "launch__grid_size",
    "dram__throughput.avg.pct_of_peak_sustained_elapsed",
    *[stall_metric(r) for r in STALL_REASONS],
    "gpu__time_duration.sum",
]


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
    def arrived(x: dict | None) -> float | None:
        """The share of the sectors a kernel's loads asked for that the L2 received."""
        asked = (x or {}).get("l1tex__t_sectors_pipe_lsu_mem_global_op_ld.sum")
        got = (x or {}).get("lts__t_sectors_srcunit_tex_op_read.sum")
        return got / asked if got is not None and asked else None

    name = "L2 row: the L2 receives >= 97% of the sectors loaded"
    l2 = m("BM_l2_read/bytes:16777216/tiles")
    if l2:
        a, g = arrived(l2), arrived(m("BM_l2_read/bytes:16777216/warps:64"))
        out.append((name, a is not None and a >= 0.97,
                    f"16 MiB, one block per tile: {a if a is None else round(a, 4)} of the requested sectors; "
                    f"grid-stride, 64 warps/SM: {g if g is None else round(g, 4)}"))
    else:
        out.append((name, None, "rows not profiled"))
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


def ncu_command(ncu: str, exe: Path, row: str, kernel: str, metrics: list[str]) -> list[str]:
    """The ncu command line that profiles the first launch of /kernel/ in benchmark row `row`."""
    return [ncu, "--clock-control", "none", "--kernel-name", f"regex:{kernel}", "--launch-count", "1",
            "--metrics", ",".join(metrics), "--csv", "--page", "raw", "--print-units", "base",
            str(exe), f"--benchmark_filter=^{re.escape(row)}(/manual_time)?$", "--benchmark_min_time=1x"]


def unknown_metrics(text: str, metrics: list[str]) -> list[str]:
    """The requested metrics that ncu's ==ERROR== / ==WARNING== lines name (a metric this ncu or
    this GPU does not have, e.g. a gmma counter before Hopper)."""
    said = "\n".join(l for l in text.splitlines() if l.startswith(("==ERROR==", "==WARNING==")))
    return [m for m in metrics if m in said or re.search(re.escape(m.split(".")[0]) + r"\b", said)]


def profile(ncu: str, exe: Path, row: str, kernel: str, log: Path,
            metrics: list[str] | None = None) -> tuple[dict | None, str]:
    """One ncu run of one benchmark row; (metrics, '') or (None, why). With `metrics` given (the
    tensor-core rows), a run that profiled nothing because ncu does not know some of them is run
    again without those, and the result names them under "dropped_metrics"."""
    wanted = list(metrics) if metrics is not None else COUNT_METRICS + PRINT_METRICS
    dropped: list[str] = []
    logs = []
    while True:
        cmd = ncu_command(ncu, exe, row, kernel, wanted)
        try:
            p = subprocess.run(cmd, capture_output=True, text=True, timeout=120)
            text, rc = p.stdout + p.stderr, p.returncode
        except subprocess.TimeoutExpired:
            text, rc = "timed out after 120 s", None
        logs.append("$ " + " ".join(cmd) + "\n" + text)
        log.write_text("\n".join(logs))
        if PERM in text:
            return None, f"skipped: {PERM}: the driver keeps the GPU counters for admin users (see README, 'Counters and their traps')"
        got = parse_raw_csv(text)
        unknown = unknown_metrics(text, wanted) if metrics is not None and not got else []
        if not unknown or len(unknown) == len(wanted):
            break
        dropped += unknown
        wanted = [m for m in wanted if m not in unknown]
    if not got:
        return None, f"ncu exited {rc} with no kernel of /{kernel}/ profiled (see {log.name})"
    return {k: number(v) for k, v in got[0].items() if k in wanted} | {"kernel": got[0].get("Kernel Name", "")} | \
        ({"dropped_metrics": dropped} if dropped else {}), ""


def gpu_name() -> str:
    p = subprocess.run(["nvidia-smi", "--query-gpu=name", "--format=csv,noheader"], capture_output=True, text=True)
    return (p.stdout.strip().splitlines() or ["unknown GPU"])[0]


def tensor_core_main(args) -> int:
    """--tc: chapter 6's tensor-core steps -> OUT/ch06_tc_ncu.json."""
    version = ncu_version(args.ncu)
    rows: dict[str, dict] = {}
    order = []
    for step, chapter, row, kernel in TC_ROWS:
        if args.only and not re.search(args.only, row):
            continue
        order.append(row)
        exe = args.build / "bench" / f"bench_{chapter}"
        entry = {"step": step, "chapter": chapter, "kernel_regex": kernel}
        if not exe.is_file():
            rows[row] = entry | {"error": f"{exe} not built"}
            continue
        log = args.out / f"ncu_tc_{re.sub(r'[^A-Za-z0-9]+', '_', row)}.log"
        metrics, why = profile(args.ncu, exe, row, kernel, log, TC_METRICS)
        if metrics is None and why.startswith("skipped"):
            print(f"{'ncu tensor-core steps':34} SKIP     {why}")
            (args.out / "ch06_tc_ncu.json").write_text(json.dumps({"skipped": why, "ncu": version}, indent=1) + "\n")
            return 0
        if metrics:
            entry["kernel"] = metrics.pop("kernel")
            if "dropped_metrics" in metrics:
                entry["dropped_metrics"] = metrics.pop("dropped_metrics")
        rows[row] = entry | ({"metrics": metrics} if metrics else {"error": why})
    doc = {"clock_control": "none", "cache_control": "all (ncu default: caches flushed before each pass)",
           "ncu": version, "gpu": gpu_name(),
           "launch": "the first launch of the row's kernel (bench::verify's, before the timed loop)",
           "order": order, "rows": rows}
    (args.out / "ch06_tc_ncu.json").write_text(json.dumps(doc, indent=1, sort_keys=True) + "\n")
    good = sum("metrics" in r for r in rows.values())
    ok = good == len(rows) and good > 0
    print(f"{'ncu tensor-core steps':34} {'PASS' if ok else 'FAIL':8} {good} of {len(rows)} rows profiled "
          f"(clock-control none) -> ch06_tc_ncu.json")
    for r, v in rows.items():
        print(f"{'  ncu ' + r[:28]:34} {'INFO' if 'metrics' in v else 'FAIL':8} "
              f"{v.get('kernel', '')[:60] if 'metrics' in v else v['error']}")
    return 0 if ok else 1


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--build", type=Path, required=True, help="the build directory (build/gpu)")
    ap.add_argument("--out", type=Path, required=True)
    ap.add_argument("--only", help="profile only the rows matching this regex")
    ap.add_argument("--ncu", default=shutil.which("ncu"))
    ap.add_argument("--tc", action="store_true",
                    help="profile chapter 6's tensor-core steps (TC_ROWS) into OUT/ch06_tc_ncu.json instead")
    args = ap.parse_args(argv)
    args.out.mkdir(parents=True, exist_ok=True)
    if not args.ncu:
        print("ncu                                SKIP     skipped: ncu not found")
        return 0
    if args.tc:
        return tensor_core_main(args)
    version = ncu_version(args.ncu)
    rows: dict[str, dict] = {}
    skipped = None
    for chapter, row, kernel in ROWS + L2_ROWS:
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
    l2_rows = {r: rows.pop(r) for _, r, _ in L2_ROWS if r in rows}  # a fingerprint, not the table
    for r in rows.values():
        if "metrics" in r:
            r["metrics"]["flops"] = flops(r["metrics"])
    doc = {"clock_control": "none", "cache_control": "all (ncu default: caches flushed before each pass)",
           "ncu": version, "launch": "the first launch of the row's kernel (a warm-up launch of bench::run)",
           "rows": rows, "l2_rows": l2_rows}
    (args.out / "ch09_ncu.json").write_text(json.dumps(doc, indent=1, sort_keys=True) + "\n")
    good = sum("metrics" in r for r in rows.values())
    need = 20 if not args.only else min(1, len(rows))  # --only: the rows asked for
    if rows:
        print(f"{'ncu counted vs measured':34} {'PASS' if good >= need else 'FAIL':8} {good} of {len(rows)} rows "
              f"profiled (clock-control none) -> ch09_ncu.json")
    else:
        print(f"{'ncu counted vs measured':34} SKIP     no row of the table matches --only {args.only!r}")
    for r, v in (rows | l2_rows).items():
        if "error" in v:
            print(f"{'  ncu ' + r[:28]:34} FAIL     {v['error']}")
    status = 0 if good >= need else 1
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
    for name, ok, what in [*fingerprints(rows | l2_rows), occupancy_check(occ, calc, cc)]:
        verdict = "SKIP" if ok is None else ("PASS" if ok else "FAIL")
        print(f"{'fingerprint ' + name[:22]:34} {verdict:8} {name}: {what}")
        status |= 1 if ok is False else 0
    return status


if __name__ == "__main__":
    sys.exit(main())
