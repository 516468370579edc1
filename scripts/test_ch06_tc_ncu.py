#!/usr/bin/env python3
"""Unit tests (no GPU) of the Nsight Compute evidence of chapter 6's tensor-core steps:
chapters/09_profiling/tools/ncu_check.py --tc (its rows, metrics and command line, the raw page
with those columns, the retry without metrics this ncu does not know) and
chapters/06_libraries/tools/tc_ncu.py (the README table from a committed JSON, the block when no
JSON is committed, the hmma / gmma fallback of the tensor-pipe metric).

    python3 scripts/test_ch06_tc_ncu.py
"""
from __future__ import annotations

import importlib.util
import json
import re
import sys
import tempfile
import unittest
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def load(path: str, name: str):
    spec = importlib.util.spec_from_file_location(name, ROOT / path)
    mod = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = mod
    spec.loader.exec_module(mod)
    return mod


ncu_check = load("chapters/09_profiling/tools/ncu_check.py", "ch09_ncu_check_tc")
tc_ncu = load("chapters/06_libraries/tools/tc_ncu.py", "ch06_tc_ncu")

HMMA = "sm__pipe_tensor_op_hmma_cycles_active.avg.pct_of_peak_sustained_active"
GMMA = "sm__pipe_tensor_op_gmma_cycles_active.avg.pct_of_peak_sustained_active"


def stalls(**reasons: float) -> dict:
    return {ncu_check.stall_metric(r): v for r, v in reasons.items()}


# Values of the same order as an H100's at 4096^3 (ncu 2025.3, clocks not locked).
def fixture() -> dict:
    def m(pipe, inst, issue, smem, conflicts, ldsm, warps, regs, us, **st):
        return {HMMA: pipe, "sm__inst_executed_pipe_tensor_op_hmma.avg.pct_of_peak_sustained_active": inst,
                "smsp__issue_active.avg.pct_of_peak_sustained_active": issue,
                "l1tex__data_pipe_lsu_wavefronts_mem_shared.avg.pct_of_peak_sustained_elapsed": smem,
                "l1tex__data_bank_conflicts_pipe_lsu_mem_shared.sum": conflicts,
                "smsp__inst_executed_op_ldsm.sum": ldsm, "sm__warps_active.avg.per_cycle_active": warps,
                "launch__registers_per_thread": regs, "gpu__time_duration.sum": us * 1e3,
                **stalls(selected=1.0, **st)}
    rows = {
        "BM_tc_gemm/wmma_fp16/4096": {"step": "WMMA", "chapter": "ch06", "kernel_regex": "wmma_gemm_kernel",
                                      "kernel": "wmma_gemm_kernel",
                                      "metrics": m(40.34, 13.45, 41.08, 61.57, 9897532, 12582912, 15.59, 125, 671.6,
                                                   barrier=2.9, long_scoreboard=1.1, mio_throttle=3.4)},
        "BM_tc_gemm/mma_fp16/4096": {"step": "mma.sync", "chapter": "ch06", "kernel_regex": "mma_gemm_kernel",
                                     "kernel": "mma_gemm_kernel",
                                     "metrics": m(60.90, 20.30, 31.56, 40.89, 0, 8388608, 8.0, 228, 453.7,
                                                  math_pipe_throttle=2.2, short_scoreboard=1.5, barrier=0.7)},
        "BM_tc_gemm/wgmma_bf16/4096": {"step": "wgmma", "chapter": "ch06", "kernel_regex": "wgmma_gemm_kernel",
                                       "kernel": "wgmma_gemm_kernel",
                                       "metrics": m(88.0, 2.8, 10.9, 1.2, 0, 0, 12.0, 168, 220.0,
                                                    sleeping=9.0, wait=3.0)},
        "BM_tc_gemm_cublas/fp16/4096": {"step": "cuBLAS", "chapter": "ch06", "kernel_regex": "nvjet|xmma|gemm|cutlass",
                                        "kernel": "nvjet_sm90_hss_256x128_64x4_1x2_h_bz_coopA_NNT",
                                        "metrics": m(91.39, 2.86, 11.42, 67.92, 143583, 0, 9.36, 168, 213.5,
                                                     sleeping=8.0, long_scoreboard=4.0)},
    }
    return {"ncu": "Version 2025.3.1.0", "gpu": "NVIDIA H100 80GB HBM3", "clock_control": "none",
            "cache_control": "all", "launch": "the first launch", "order": [r for _, _, r, _ in ncu_check.TC_ROWS],
            "rows": rows}


class Renderer(unittest.TestCase):
    def write(self, root: Path, gpu: str, doc: dict) -> None:
        d = root / "docs/results/raw" / gpu
        d.mkdir(parents=True)
        (d / "ch06_tc_ncu.json").write_text(json.dumps(doc))

    def test_the_table_has_a_column_per_step_and_the_counters(self):
        with tempfile.TemporaryDirectory() as t:
            root = Path(t)
            self.write(root, "H100_80GB_HBM3", fixture())
            text = tc_ncu.block_text(root, "H200")  # H200 has none: the H100's, named
        lines = text.splitlines()
        self.assertIn("docs/results/raw/H100_80GB_HBM3/ch06_tc_ncu.json", text)
        self.assertIn("NVIDIA H100 80GB HBM3", text)
        header = next(l for l in lines if l.startswith("| |"))
        self.assertEqual([c.split(" (")[0].strip() for c in header.strip("|").split("|")[1:]],
                         ["WMMA", "mma.sync", "wgmma", "cuBLAS"])
        row = {l.split("|")[1].strip(): [c.strip() for c in l.strip("|").split("|")[1:]]
               for l in lines if l.startswith("| ") and not l.startswith(("| |", "| ---"))}
        self.assertEqual(row["tensor pipe active, % of peak"], ["40.3", "60.9", "88.0", "91.4"])
        self.assertEqual(row["issue slots busy, %"], ["41.1", "31.6", "10.9", "11.4"])
        self.assertEqual(row["shared-memory bank conflicts"], ["9,897,532", "0", "0", "143,583"])
        self.assertEqual(row["ldmatrix instructions"], ["12,582,912", "8,388,608", "0", "0"])
        self.assertEqual(row["registers per thread"], ["125", "228", "168", "168"])
        self.assertEqual(row["duration, us"], ["671.6", "453.7", "220.0", "213.5"])
        # the two largest stall reasons, "selected" (the issuing warp) left out
        self.assertEqual(row["two largest stalls (warps per issued instruction)"][:2],
                         ["mio_throttle 3.4, barrier 2.9", "math_pipe_throttle 2.2, short_scoreboard 1.5"])
        self.assertEqual(len(row), len(tc_ncu.ROWS))

    def test_a_row_not_profiled_says_why_and_dropped_metrics_are_named(self):
        doc = fixture()
        doc["rows"]["BM_tc_gemm/wgmma_bf16/4096"] = {"step": "wgmma", "error": "ncu exited 1 with no kernel"}
        doc["rows"]["BM_tc_gemm/mma_fp16/4096"]["dropped_metrics"] = [GMMA]
        with tempfile.TemporaryDirectory() as t:
            root = Path(t)
            self.write(root, "H200", doc)
            text = tc_ncu.block_text(root, "H200")
        self.assertIn("not profiled: ncu exited 1 with no kernel", text)
        self.assertIn(f"did not know (not measured): `{GMMA}`", text)

    def test_no_json_committed_says_not_measured_and_names_the_command(self):
        with tempfile.TemporaryDirectory() as t:
            root = Path(t)
            text = tc_ncu.block_text(root, None)
            self.assertIn("Not measured on this GPU yet", text)
            self.assertIn(tc_ncu.COMMAND, text)
            readme = root / tc_ncu.README
            readme.parent.mkdir(parents=True)
            readme.write_text("x\n<!-- results:ch06-tc-ncu begin -->\nold\n<!-- results:ch06-tc-ncu end -->\n")
            [(path, new)] = tc_ncu.outputs(root, "H200").items()
            self.assertEqual(path, readme)
            self.assertIn("Not measured on this GPU yet", new)
            self.assertNotIn("old", new)
            readme.write_text("no markers\n")
            self.assertEqual(tc_ncu.outputs(root, "H200"), {})
            self.write(root, "H200", {"skipped": "skipped: ERR_NVGPUCTRPERM", "ncu": "2025.3"})
            self.assertIn("The ncu run was skipped: skipped: ERR_NVGPUCTRPERM", tc_ncu.block_text(root, "H200"))

    def test_the_tensor_pipe_is_the_larger_of_the_hmma_and_gmma_metrics_present(self):
        self.assertEqual(tc_ncu.tensor_pipe({HMMA: 60.9}), (60.9, HMMA))
        self.assertEqual(tc_ncu.tensor_pipe({GMMA: 88.0}), (88.0, GMMA))  # an ncu with gmma only
        self.assertEqual(tc_ncu.tensor_pipe({HMMA: 0.0, GMMA: 88.0}), (88.0, GMMA))
        self.assertEqual(tc_ncu.tensor_pipe({HMMA: 91.4, GMMA: None}), (91.4, HMMA))
        self.assertEqual(tc_ncu.tensor_pipe({}), (None, None))
        self.assertEqual(tuple(tc_ncu.PIPE["cycles"]), tuple(ncu_check.TENSOR_PIPE_METRICS["cycles"]))
        self.assertEqual(tuple(tc_ncu.PIPE["inst"]), tuple(ncu_check.TENSOR_PIPE_METRICS["inst"]))

    def test_the_readme_block_is_the_one_results_py_writes(self):
        text = (ROOT / tc_ncu.README).read_text()
        self.assertIn("<!-- results:ch06-tc-ncu begin -->", text)
        self.assertIn(tc_ncu.COMMAND, text.split("<!-- results:ch06-tc-ncu begin -->")[0][-800:])


class NcuCheckTensorCoreRows(unittest.TestCase):
    def test_the_rows_are_the_four_steps_and_exist_in_the_bench_and_the_kernels(self):
        self.assertEqual([s for s, _, _, _ in ncu_check.TC_ROWS], ["WMMA", "mma.sync", "wgmma", "cuBLAS"])
        bench = (ROOT / "bench/ch06/tc_gemm.cpp").read_text()
        self.assertIn("for (const int size : {4096", bench)
        for _, chapter, row, kernel in ncu_check.TC_ROWS:
            self.assertEqual(chapter, "ch06")
            self.assertIn(f'add("{row.rsplit("/", 1)[0]}/" + n', bench, row)
            re.compile(kernel)
        for path, kernel in (("wmma_gemm.cu", "wmma_gemm_kernel"), ("mma_gemm.cu", "mma_gemm_kernel"),
                             ("wgmma_gemm.cu", "wgmma_gemm_kernel")):
            self.assertRegex((ROOT / "chapters/06_libraries/reference" / path).read_text(), rf"\b{kernel}\(")
            self.assertIn(kernel, [k for _, _, _, k in ncu_check.TC_ROWS])

    def test_the_cublas_regex_takes_the_gemm_not_the_operands_setup(self):
        rx = next(k for s, _, _, k in ncu_check.TC_ROWS if s == "cuBLAS")
        for name in ("nvjet_sm90_hss_256x128_64x4_1x2_h_bz_coopA_NNT",
                     "sm90_xmma_gemm_f16f16_f16f32_f32_nn_n_tilesize128x256x64_warpgroupsize2x1x1_execute_kernel",
                     "cutlass_80_tensorop_f16_s16816gemm_relu_f16_256x128_32x3_nn_align8"):
            self.assertRegex(name, rx)
        for name in ("fill_kernel", "convert_kernel"):
            self.assertNotRegex(name, rx)

    def test_the_metrics_are_well_formed_and_in_the_command(self):
        m = ncu_check.TC_METRICS
        self.assertEqual(len(set(m)), len(m))
        for name in m:
            self.assertRegex(name, r"^(sm|smsp|l1tex|launch|gpu|dram)__[a-z0-9_]+(\.[a-z0-9_]+)*$")
        for want in (HMMA, GMMA, "smsp__issue_active.avg.pct_of_peak_sustained_active",
                     "l1tex__data_pipe_lsu_wavefronts_mem_shared.avg.pct_of_peak_sustained_elapsed",
                     "l1tex__data_bank_conflicts_pipe_lsu_mem_shared.sum", "smsp__inst_executed_op_ldsm.sum",
                     "sm__warps_active.avg.per_cycle_active", "launch__registers_per_thread", "gpu__time_duration.sum",
                     *[ncu_check.stall_metric(r) for r in ("barrier", "long_scoreboard", "short_scoreboard",
                                                           "math_pipe_throttle", "mio_throttle", "wait",
                                                           "not_selected", "selected")]):
            self.assertIn(want, m)
        _, chapter, row, kernel = ncu_check.TC_ROWS[1]
        cmd = ncu_check.ncu_command("ncu", Path("build/gpu/bench/bench_ch06"), row, kernel, m)
        self.assertEqual(cmd[cmd.index("--metrics") + 1].split(","), m)
        self.assertIn(f"regex:{kernel}", cmd)
        self.assertIn("--launch-count", cmd)
        self.assertIn("--benchmark_filter=^BM_tc_gemm/mma_fp16/4096(/manual_time)?$", cmd)
        # chapter 9's rows keep their command: their metrics only
        old = ncu_check.ncu_command("ncu", Path("b"), "BM_saxpy", "saxpy_kernel",
                                    ncu_check.COUNT_METRICS + ncu_check.PRINT_METRICS)
        self.assertNotIn(HMMA, old[old.index("--metrics") + 1])

    def test_the_raw_page_with_the_tensor_core_columns_parses(self):
        cols = [HMMA, "smsp__inst_executed_op_ldsm.sum", "launch__registers_per_thread",
                ncu_check.stall_metric("long_scoreboard"), "gpu__time_duration.sum"]
        text = ("==PROF== Connected to process 7\nBM_tc_gemm/mma_fp16/4096/manual_time 460 us\n"
                + ",".join(f'"{c}"' for c in ["ID", "Process ID", "Process Name", "Host Name", "Kernel Name", *cols]) + "\n"
                + ",".join(f'"{u}"' for u in ["", "", "", "", "", "%", "inst", "register/thread", "", "nsecond"]) + "\n"
                + '"0","7","bench_ch06","vm","mma_gemm_kernel","60.90","8,388,608","228","1.52","453,696"\n')
        [row] = ncu_check.parse_raw_csv(text)
        self.assertEqual(row["Kernel Name"], "mma_gemm_kernel")
        m = {k: ncu_check.number(v) for k, v in row.items() if k in ncu_check.TC_METRICS}
        self.assertEqual(m[HMMA], 60.9)
        self.assertEqual(m["smsp__inst_executed_op_ldsm.sum"], 8388608.0)
        self.assertEqual(m["gpu__time_duration.sum"], 453696.0)
        self.assertEqual(tc_ncu.top_stalls(m), [("long_scoreboard", 1.52)])

    def test_metrics_ncu_does_not_know_are_found_in_its_error_lines(self):
        m = ncu_check.TC_METRICS
        said = f"==ERROR== Failed to find metric {GMMA.split('.')[0]}\n==ERROR== bad\nprogram output {HMMA}\n"
        self.assertEqual(ncu_check.unknown_metrics(said, m), [GMMA])
        self.assertEqual(ncu_check.unknown_metrics("==PROF== Disconnected", m), [])

    def test_profile_retries_without_the_unknown_metrics(self):
        calls = []

        class P:
            def __init__(self, out):
                self.stdout, self.stderr, self.returncode = out, "", 0

        def fake_run(cmd, **_):
            wanted = cmd[cmd.index("--metrics") + 1].split(",")
            calls.append(wanted)
            if GMMA in wanted:
                return P(f"==ERROR== Failed to find metric {GMMA}\n")
            return P(f'"ID","Kernel Name","{HMMA}"\n"","","%"\n"0","mma_gemm_kernel","60.9"\n')

        real = ncu_check.subprocess.run
        ncu_check.subprocess.run = fake_run
        try:
            with tempfile.TemporaryDirectory() as t:
                metrics, why = ncu_check.profile("ncu", Path("bench_ch06"), "BM_tc_gemm/mma_fp16/4096",
                                                 "mma_gemm_kernel", Path(t) / "x.log", ncu_check.TC_METRICS)
                self.assertEqual((Path(t) / "x.log").read_text().count("$ ncu"), 2)
        finally:
            ncu_check.subprocess.run = real
        self.assertEqual(why, "")
        self.assertEqual(len(calls), 2)
        self.assertNotIn(GMMA, calls[1])
        self.assertEqual(metrics["dropped_metrics"], [GMMA])
        self.assertEqual(metrics[HMMA], 60.9)
        self.assertEqual(metrics["kernel"], "mma_gemm_kernel")


if __name__ == "__main__":
    unittest.main()
