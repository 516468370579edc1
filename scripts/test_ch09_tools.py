#!/usr/bin/env python3
"""Unit tests of chapter 9's GPU-side tools on recorded or synthetic outputs (no GPU):
tools/sancheck.py (does a compute-sanitizer report name the planted bug's class and kernel; is a
run clean), and the table of cases against apps/hunt.cpp's.

    python3 scripts/test_ch09_tools.py
"""
from __future__ import annotations

import importlib.util
import re
import sys
import unittest
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
TOOLS = ROOT / "chapters/09_profiling/tools"


def load(name: str):
    spec = importlib.util.spec_from_file_location(f"ch09_{name}", TOOLS / f"{name}.py")
    mod = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = mod
    spec.loader.exec_module(mod)
    return mod


sancheck = load("sancheck")
ncu_check = load("ncu_check")
counted = load("counted")
trace_check = load("trace_check")

# `ncu --csv --page raw --print-units base` as it prints: the program's output first, the header,
# the units row, one row per kernel (values with thousands separators).
NCU_RAW = """==PROF== Connected to process 4242
BM_strided_copy/stride:1/manual_time  140 us
"ID","Process ID","Process Name","Host Name","Kernel Name","Context","Stream","dram__bytes_read.sum","dram__bytes_write.sum","l1tex__t_requests_pipe_lsu_mem_global_op_ld.sum","l1tex__t_sectors_pipe_lsu_mem_global_op_ld.sum","sm__sass_thread_inst_executed_op_ffma_pred_on.sum","sm__sass_thread_inst_executed_op_fadd_pred_on.sum"
"","","","","","","","byte","byte","","sector","inst","inst"
"0","4242","bench_ch04","vm","strided_copy_kernel","1","13","268,500,992","268,435,456","2,097,152","8,388,608","1,000","10"
"""


class NcuCheck(unittest.TestCase):
    def test_the_raw_page_parses_past_the_program_output_and_the_units(self):
        [row] = ncu_check.parse_raw_csv(NCU_RAW)
        self.assertEqual(row["Kernel Name"], "strided_copy_kernel")
        self.assertEqual(ncu_check.number(row["dram__bytes_read.sum"]), 268500992.0)
        self.assertIsNone(ncu_check.number("n/a"))
        self.assertEqual(ncu_check.parse_raw_csv("==ERROR== ERR_NVGPUCTRPERM"), [])

    def test_flops_are_two_per_fma_and_sectors_per_request_divide(self):
        m = {k: ncu_check.number(v) for k, v in ncu_check.parse_raw_csv(NCU_RAW)[0].items()}
        self.assertEqual(ncu_check.flops(m), 2010.0)
        self.assertEqual(ncu_check.sectors_per_request(m, "ld"), 4.0)
        self.assertIsNone(ncu_check.sectors_per_request(m, "st"))

    def test_fingerprints_judge_the_classic_bugs_and_say_when_rows_are_missing(self):
        def spr(ld=None, st=None, conflicts=None):
            m = {}
            if ld:
                m |= {"l1tex__t_sectors_pipe_lsu_mem_global_op_ld.sum": 1000 * ld, "l1tex__t_requests_pipe_lsu_mem_global_op_ld.sum": 1000}
            if st:
                m |= {"l1tex__t_sectors_pipe_lsu_mem_global_op_st.sum": 1000 * st, "l1tex__t_requests_pipe_lsu_mem_global_op_st.sum": 1000}
            if conflicts is not None:
                m["l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_ld.sum"] = conflicts
            return {"metrics": m}
        rows = {"BM_strided_copy/stride:1": spr(ld=4), "BM_strided_copy/stride:32": spr(ld=32),
                "BM_transpose/variant:0/rows:8192/cols:8192": spr(st=32),
                # 1000 tile loads each; per load, what the H200 counted: unpadded 31.7 (a 32-way
                # conflict), padded 0.29 (the background the counter has on a conflict-free access).
                "BM_transpose/variant:1/rows:8192/cols:8192": spr(st=4, conflicts=31700),
                "BM_transpose/variant:2/rows:8192/cols:8192": spr(st=4, conflicts=290)}
        # Chapter 2's L2 row: what the H100 counted at 16 MiB (99.4% of the requested sectors at
        # the L2 for one block per tile, 88.8% for a resident grid re-reading its slab).
        rows["BM_l2_read/bytes:16777216/tiles"] = {"metrics": {
            "l1tex__t_sectors_pipe_lsu_mem_global_op_ld.sum": 1000, "lts__t_sectors_srcunit_tex_op_read.sum": 994}}
        self.assertEqual([ok for _, ok, _ in ncu_check.fingerprints(rows)], [True, True, True, True])
        rows["BM_l2_read/bytes:16777216/tiles"]["metrics"]["lts__t_sectors_srcunit_tex_op_read.sum"] = 888
        self.assertFalse(ncu_check.fingerprints(rows)[3][1])
        del rows["BM_l2_read/bytes:16777216/tiles"]["metrics"]["lts__t_sectors_srcunit_tex_op_read.sum"]
        self.assertFalse(ncu_check.fingerprints(rows)[3][1], "the counter missing: no verdict of health")
        # A padding that leaves a 2-way conflict (one extra wavefront per load) is caught.
        rows["BM_transpose/variant:2/rows:8192/cols:8192"] = spr(st=4, conflicts=1000)
        self.assertFalse(ncu_check.fingerprints(rows)[1][1])
        rows["BM_transpose/variant:2/rows:8192/cols:8192"] = spr(st=4)  # the counter missing: no verdict of health
        self.assertFalse(ncu_check.fingerprints(rows)[1][1])
        self.assertEqual([ok for _, ok, _ in ncu_check.fingerprints({})], [None, None, None, None])

    def test_the_occupancy_check_compares_the_calculator_with_ncu(self):
        m = {"sm__maximum_warps_per_active_cycle_pct": 12.5, "sm__warps_active.avg.pct_of_peak_sustained_active": 11.9,
             "launch__registers_per_thread": 152, "launch__block_size": 256}
        calc = {"occupancy": 0.125, "limiter": "registers"}
        self.assertTrue(ncu_check.occupancy_check(m, calc, 90)[1])
        self.assertFalse(ncu_check.occupancy_check(m, {"occupancy": 0.25, "limiter": "registers"}, 90)[1])
        self.assertIsNone(ncu_check.occupancy_check(None, calc, 90)[1])

    def test_at_least_20_profiled_rows_are_on_the_committed_roofline(self):
        self.assertEqual(len({r for _, r, _ in ncu_check.ROWS}), len(ncu_check.ROWS))
        decl = counted.declared(ROOT, "H200")
        on_roofline = [r for ch, r, _ in ncu_check.ROWS if decl.get((ch, r), {}).get("flops", 0) > 0]
        self.assertGreaterEqual(len(on_roofline), 20, on_roofline)
        missing = [r for ch, r, _ in ncu_check.ROWS if ch != "ch09" and (ch, r) not in decl]
        self.assertEqual(missing, [], "rows not in the committed benchmark JSON")


class Counted(unittest.TestCase):
    def test_within_ten_percent_agrees_and_each_way_of_differing_is_named(self):
        decl = {"bytes": 1e9, "flops": 2.5e8, "median_us": 250.0}
        ok = counted.compare(decl, {"dram__bytes_read.sum": 5.2e8, "dram__bytes_write.sum": 5e8, "flops": 2.5e8})
        self.assertTrue(ok["agree"])
        self.assertAlmostEqual(ok["bytes_ratio"], 1.02)
        low = counted.compare(decl, {"dram__bytes_read.sum": 1e8, "dram__bytes_write.sum": 5e8, "flops": 2.5e8})
        self.assertFalse(low["agree"])
        self.assertIn("L2", low["verdict"])
        high = counted.compare(decl, {"dram__bytes_read.sum": 4e9, "dram__bytes_write.sum": 5e8, "flops": 2.5e8})
        self.assertIn("more bytes", high["verdict"])
        flop = counted.compare(decl, {"dram__bytes_read.sum": 5e8, "dram__bytes_write.sum": 5e8, "flops": 0.0})
        self.assertIn("FLOPs differ", flop["verdict"])
        nof = counted.compare({"bytes": 1e9, "flops": 0.0, "median_us": 1.0}, {"dram__bytes_read.sum": 1e9, "flops": 3.0})
        self.assertTrue(nof["agree"])  # no FLOPs declared: bytes alone decide
        self.assertIsNone(counted.compare(None, {})["agree"])

    def test_without_a_committed_ncu_run_the_block_says_so(self):
        self.assertIn("Not measured yet", counted.block_text(ROOT, "B999"))

MEMCHECK_OOB = """========= COMPUTE-SANITIZER
========= Invalid __global__ write of size 4 bytes
=========     at cudalab::ch09::<unnamed>::shift_kernel(const float *, float *, unsigned long)+0x90 in hunt_01_shift.cu:25
=========     by thread (231,0,0) in block (3,0,0)
=========     Address 0x7f3a4e000fa0 is out of bounds
=========     and is 1 bytes after the nearest allocation at 0x7f3a4e000000 of size 4000 bytes
case shift: right answer: n = 1000 matched
========= ERROR SUMMARY: 1 error
"""
CLEAN = "========= COMPUTE-SANITIZER\ncase shift: right answer: n = 1000 matched\n========= ERROR SUMMARY: 0 errors\n"
RACE = """========= Error: Race reported between Write access at cudalab::ch09::<unnamed>::neighbor_diff_kernel(const float *, float *, unsigned long)+0x80 in hunt_03_neighbor_diff.cu:28
=========     and Read access at cudalab::ch09::<unnamed>::neighbor_diff_kernel(const float *, float *, unsigned long)+0x120 in hunt_03_neighbor_diff.cu:36 [248 hazards]
========= RACECHECK SUMMARY: 1 hazard displayed (1 error, 0 warnings)
"""


class Sancheck(unittest.TestCase):
    def test_a_report_with_the_class_and_the_kernel_is_found(self):
        v = sancheck.judge_found(sancheck.CASES["shift"], 99, MEMCHECK_OOB)
        self.assertTrue(v.ok, v.why)
        self.assertIn("shift_kernel", v.why)

    def test_a_report_of_another_kernel_or_class_is_not_found(self):
        other = MEMCHECK_OOB.replace("shift_kernel", "some_other_kernel")
        self.assertFalse(sancheck.judge_found(sancheck.CASES["shift"], 99, other).ok)
        self.assertFalse(sancheck.judge_found(sancheck.CASES["two_stage"], 99, MEMCHECK_OOB).ok)  # a read expected

    def test_a_clean_run_finds_nothing_and_a_missing_summary_is_never_clean(self):
        self.assertFalse(sancheck.judge_found(sancheck.CASES["shift"], 0, CLEAN).ok)
        self.assertTrue(sancheck.judge_clean("memcheck", 0, CLEAN).ok)
        self.assertFalse(sancheck.judge_clean("memcheck", 99, MEMCHECK_OOB).ok)
        self.assertFalse(sancheck.judge_clean("memcheck", None, "timed out after 240 s").ok)
        self.assertFalse(sancheck.judge_clean("memcheck", 1, CLEAN.replace("right answer", "WRONG ANSWER")).ok)

    def test_a_leak_counts_by_its_leak_summary(self):
        out = ("========= Leaked 4 bytes at 0x7f0000000000\n=========     Saved host backtrace up to driver entry point\n"
               "=========         Host Frame: cudaMalloc [0x4f0b0] in libcudart.so.13\n"
               "========= LEAK SUMMARY: 4 bytes leaked in 1 allocations\n========= ERROR SUMMARY: 0 errors\n")
        self.assertTrue(sancheck.judge_found(sancheck.CASES["normalize"], 0, out).ok)
        self.assertFalse(sancheck.judge_found(sancheck.CASES["normalize"], 0, CLEAN).ok)

    def test_racecheck_hazards_count(self):
        self.assertTrue(sancheck.judge_found(sancheck.CASES["neighbor_diff"], 99, RACE).ok)
        self.assertFalse(sancheck.judge_clean("racecheck", 99, RACE).ok)

    def test_the_plain_run_case_is_found_by_its_wrong_answer(self):
        case = sancheck.CASES["readback"]
        out = "case readback: WRONG ANSWER: read before the copy ended: i = 0: got nan, want 0\n"
        self.assertTrue(sancheck.judge_found(case, 1, out).ok)
        self.assertFalse(sancheck.judge_found(case, 0, "case readback: right answer: n = 1024 matched\n").ok)
        self.assertTrue(sancheck.judge_clean("plain", 0, "").ok)

    def test_every_tool_of_a_case_is_one_the_runner_knows(self):
        for name, c in sancheck.CASES.items():
            self.assertIn(c.tool, ("memcheck", "leak", "racecheck", "synccheck", "initcheck", "plain"), name)
            re.compile(c.klass), re.compile(c.where)
        self.assertEqual(sancheck.tool_args("leak"), ["--tool", "memcheck", "--leak-check", "full"])
        self.assertEqual(sancheck.tool_args("plain"), [])

    def test_the_cases_are_those_of_hunt_cu_and_each_has_its_exercise_region(self):
        table = (ROOT / "chapters/09_profiling/reference/hunt.cu").read_text()
        self.assertEqual(re.findall(r'\{"(\w+)", hunt_\w+\}', table), list(sancheck.CASES))
        ref = ROOT / "chapters/09_profiling/reference"
        regions = {m for f in ref.glob("hunt_*.cu") for m in re.findall(r"BEGIN EXERCISE (\d+\.\d+)", f.read_text())}
        self.assertEqual(regions, {c.exercise for c in sancheck.CASES.values()})

    def test_usage_errors_exit_2(self):
        self.assertEqual(sancheck.main(["--case", "shift"]), 2)
        self.assertEqual(sancheck.main(["--exe", "/nonexistent", "--case", "shift", "--expect", "clean"]), 2)
        self.assertEqual(sancheck.main(["--exe", "/bin/true", "--case", "shift", "--expect", "found", "--all-tools"]), 2)



def ev(cat: str, ts: float, dur: float, tid: int = 1, name: str = "x") -> dict:
    return {"name": name, "cat": cat, "ph": "X", "ts": ts, "dur": dur, "pid": 0, "tid": tid}


class TraceCheck(unittest.TestCase):
    def test_sequential_copies_and_kernels_do_not_overlap(self):
        s = trace_check.summary([ev("memcpy", 0, 10), ev("kernel", 10, 5), ev("memcpy", 15, 10),
                                 ev("nvtx", 0, 1, name="ch07 serial pipeline")])
        self.assertEqual(s["overlap_us"], 0)
        self.assertEqual((s["copy_us"], s["kernel_us"], s["copies"], s["kernels"]), (20, 5, 2, 1))
        self.assertEqual(s["ranges"], ["ch07 serial pipeline"])

    def test_a_copy_under_a_kernel_of_another_stream_overlaps_by_the_shared_time(self):
        # copies [0,10) and [8,20) on stream 1 (busy [0,20)), kernels [5,12) and [15,16) on stream 2
        s = trace_check.summary([ev("memcpy", 0, 10), ev("memcpy", 8, 12), ev("kernel", 5, 7, 2), ev("kernel", 15, 1, 2)])
        self.assertEqual(s["copy_us"], 20)
        self.assertEqual(s["overlap_us"], 8)  # [5,12) + [15,16)
        self.assertAlmostEqual(s["overlap_fraction"], 0.4)
        self.assertEqual(s["streams"], [1, 2])

    def test_the_verdicts(self):
        serial = trace_check.summary([ev("memcpy", 0, 10), ev("kernel", 10, 5), ev("nvtx", 0, 1, name="ch07 serial pipeline")])
        piped = trace_check.summary([ev("memcpy", 0, 10), ev("kernel", 5, 10, 2), ev("nvtx", 0, 1, name="ch07 chunked pipeline")])
        self.assertEqual([ok for _, ok, _ in trace_check.judge(serial, piped)], [True, True, True])
        self.assertEqual([ok for _, ok, _ in trace_check.judge(piped, serial)], [False, False, False])

    def test_a_file_round_trip_and_usage(self):
        import json
        import tempfile
        with tempfile.TemporaryDirectory() as d:
            f = Path(d) / "t.json"
            f.write_text(json.dumps({"traceEvents": [ev("memcpy", 0, 1), {"name": "process_name", "ph": "M", "pid": 0}]}))
            self.assertEqual(len(trace_check.load(f)), 1)
            self.assertEqual(trace_check.main([str(f)]), 0)
            self.assertEqual(trace_check.main([str(Path(d) / "missing.json")]), 2)
            for name, text in (("bad.json", "{not json"), ("list.json", "[1]"), ("noev.json", "{}")):
                (Path(d) / name).write_text(text)
                with self.assertRaises(ValueError):
                    trace_check.load(Path(d) / name)
                self.assertEqual(trace_check.main([str(Path(d) / name)]), 2, name)
        self.assertEqual(trace_check.main([]), 2)


if __name__ == "__main__":
    unittest.main()
