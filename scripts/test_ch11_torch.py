#!/usr/bin/env python3
"""Unit tests of chapters/11_llm_serving/tools/ch11_torch.py (no torch, no GPU): the shape and FLOP
count against the bench's source and JSON, reading a bench_ch11 JSON (with and without
aggregates), the table, the ratios' direction and the goal, the command line's errors, the
measurement's control flow on a fake torch (a refusing backend, GQA refused, no device), the
path without torch, and scripts/gpu_acceptance's torch step."""
from __future__ import annotations

import contextlib
import io
import json
import re
import subprocess
import sys
import tempfile
import unittest
import warnings
from contextlib import redirect_stderr, redirect_stdout
from pathlib import Path
from types import SimpleNamespace
from unittest import mock

ROOT = Path(__file__).resolve().parents[1]
TOOL = ROOT / "chapters" / "11_llm_serving" / "tools" / "ch11_torch.py"
sys.path.insert(0, str(TOOL.parent))
import ch11_torch as t  # noqa: E402


def torch_installed() -> bool:
    try:
        import torch  # noqa: F401
        return True
    except ImportError:
        return False


def row(length: int, us: float, **extra) -> dict:
    """A Google Benchmark row of BM_prefill_tc as bench_ch11 writes it (flops: the bench's count)."""
    name = f"BM_prefill_tc/b1_len{length}/manual_time"
    return {"name": name, "run_name": name, "run_type": "iteration", "median_us": us, "flops": t.flops(length),
            "TFLOP/s": t.tflops(length, us), **extra}


def aggregate(length: int, kind: str, us: float) -> dict:
    b = row(length, us)
    return b | {"name": b["name"] + "_" + kind, "run_type": "aggregate", "aggregate_name": kind}


class Fixture(unittest.TestCase):
    def setUp(self):
        self.tmp = tempfile.TemporaryDirectory()
        self.dir = Path(self.tmp.name)

    def tearDown(self):
        self.tmp.cleanup()

    def bench_json(self, benchmarks: list[dict], gpu: str = "NVIDIA Test GPU") -> Path:
        f = self.dir / "bench_ch11.json"
        f.write_text(json.dumps({"context": {"gpu": gpu}, "benchmarks": benchmarks}))
        return f

    def main(self, *argv: str) -> tuple[int, str, str]:
        out, err = io.StringIO(), io.StringIO()
        with redirect_stdout(out), redirect_stderr(err):
            try:
                rc = t.main(list(argv))
            except SystemExit as e:  # argparse
                rc = e.code
        return rc, out.getvalue(), err.getvalue()


class TheBenchsShape(unittest.TestCase):
    def test_shape_and_lengths_are_the_benchs(self):
        hpp = (ROOT / "bench" / "ch11" / "ch11_bench.hpp").read_text()
        m = re.search(r"constexpr int kQHeads = (\d+), kKvHeads = (\d+), kDim = (\d+)", hpp)
        self.assertIsNotNone(m, "ch11_bench.hpp no longer declares kQHeads, kKvHeads, kDim: read it again")
        self.assertEqual((t.Q_HEADS, t.KV_HEADS, t.HEAD_DIM), tuple(int(x) for x in m.groups()))
        self.assertIn("kType = ch11::DType::kF16", hpp)
        self.assertEqual(t.DTYPE, "fp16")
        src = (ROOT / "bench" / "ch11" / "prefill.cpp").read_text()
        m = re.search(r"for \(int len : \{([\d, ]+)\}\)\s*add\(\"BM_prefill_tc/b1_len", src)
        self.assertIsNotNone(m, "prefill.cpp's BM_prefill_tc lengths moved: read them again")
        self.assertEqual(t.LENGTHS, tuple(int(x) for x in m.group(1).split(",")))
        self.assertIn("4.0 * dim * kQHeads * (0.5 * len * (len + 1.0))", src, "the bench counts FLOPs otherwise")
        self.assertIn("std::size_t dim = kDim", src, "the rows torch is set beside no longer default to kDim")

    def test_flops_are_the_causal_half(self):
        self.assertEqual(t.flops(1), 4 * 128 * 32)  # one query, one key
        self.assertEqual(t.flops(4096), 4 * 128 * 32 * 4096 * 4097 / 2)
        self.assertAlmostEqual(t.tflops(4096, 1000.0), 4 * 128 * 32 * 4096 * 4097 / 2 / 1e-3 / 1e12)

    def test_flops_agree_with_the_committed_runs(self):
        seen = 0
        for f in sorted((ROOT / "docs" / "results" / "raw").glob("*/bench_ch11.json")):
            for b in json.loads(f.read_text())["benchmarks"]:
                m = t.ROW.match(re.sub(r"/manual_time$", "", b.get("run_name", "")))
                if m and b.get("run_type") == "iteration":
                    self.assertEqual(b["flops"], t.flops(int(m.group(1))), f"{f}: {b['name']}")
                    self.assertAlmostEqual(b["TFLOP/s"], t.tflops(int(m.group(1)), b["median_us"]), places=6)
                    seen += 1
        if not seen:
            self.skipTest("no committed bench_ch11.json holds BM_prefill_tc rows")


class LabRows(Fixture):
    def test_the_median_aggregate_when_there_are_repetitions(self):
        f = self.bench_json([row(4096, 500.0), row(4096, 700.0), row(4096, 600.0), aggregate(4096, "mean", 999.0),
                             aggregate(4096, "median", 610.0), aggregate(4096, "stddev", 1.0)])
        rows, gpu = t.lab_rows(f)
        self.assertEqual(rows, {4096: t.Cell(610.0)})
        self.assertEqual(gpu, "NVIDIA Test GPU")

    def test_without_aggregates_the_median_of_the_repetitions(self):
        f = self.bench_json([row(1024, 40.0), row(1024, 60.0), row(1024, 45.0), row(16384, 8000.0)])
        self.assertEqual(t.lab_rows(f)[0], {1024: t.Cell(45.0), 16384: t.Cell(8000.0)})

    def test_aggregates_only(self):
        f = self.bench_json([aggregate(4096, "mean", 520.0), aggregate(4096, "median", 510.0)])
        self.assertEqual(t.lab_rows(f)[0], {4096: t.Cell(510.0)})

    def test_other_rows_are_left_out_and_errors_kept(self):
        fp32 = row(4096, 13000.0) | {"name": "BM_prefill/b1_len4096/manual_time",
                                     "run_name": "BM_prefill/b1_len4096/manual_time"}
        bad = {"name": "BM_prefill_tc/b1_len1024/manual_time", "run_type": "iteration", "error_occurred": True,
               "error_message": "prefill 1024: query 0, head 3 | off"}
        rows, _ = t.lab_rows(self.bench_json([fp32, bad, row(4096, 537.0)]))
        self.assertEqual(set(rows), {1024, 4096})
        self.assertIsNone(rows[1024].us)
        self.assertIn("query 0, head 3 / off", rows[1024].why)

    def test_a_row_counting_other_flops_is_refused(self):
        wrong = row(4096, 537.0) | {"flops": 4.0 * 128 * 32 * 4096 * 4096 / 2}  # L^2 / 2, not L (L + 1) / 2
        with self.assertRaisesRegex(t.InputError, "the bench's shape is not this tool's"):
            t.lab_rows(self.bench_json([wrong]))

    def test_missing_and_malformed_files(self):
        (self.dir / "bad.json").write_text('{"benchmarks": [')
        (self.dir / "list.json").write_text("[1, 2]")
        for name, words in (("missing.json", "cannot read"), ("bad.json", "not JSON"),
                            ("list.json", "not a Google Benchmark JSON")):
            with self.subTest(name=name):
                with self.assertRaisesRegex(t.InputError, words):
                    t.lab_rows(self.dir / name)
                rc, out, err = self.main("--cpp", str(self.dir / name))
                self.assertEqual(rc, 2)
                self.assertIn(words, err)
                self.assertEqual(len(err.strip().splitlines()), 1, err)


class TableAndGoal(unittest.TestCase):
    def results(self, lab_us: float, cudnn_us: float, flash_us: float) -> dict:
        return {"lab": {4096: t.Cell(lab_us)}, "cudnn": {4096: t.Cell(cudnn_us)}, "flash": {4096: t.Cell(flash_us)},
                "efficient": {4096: t.Cell(why="Memory efficient kernel not used because: x")}}

    def test_cells_are_tflops_and_ratios_are_speeds(self):
        res = self.results(lab_us=1000.0, cudnn_us=400.0, flash_us=2000.0)
        text = t.markdown(res, [4096])
        lab, cudnn, flash = (f"{t.tflops(4096, us):.1f}" for us in (1000.0, 400.0, 2000.0))
        # lab / cuDNN = 400 / 1000 (the lab is slower), lab / FA2 = 2000 / 1000
        self.assertIn(f"| 4096 | {lab} | {cudnn} | {flash} | n/a | 0.40x | 2.00x |", text)
        self.assertIn("- memory-efficient at 4096: n/a, Memory efficient kernel not used because: x", text)
        self.assertEqual(text.splitlines()[0].count("|"), 8)

    def test_a_length_without_rows_is_a_dash(self):
        text = t.markdown({"lab": {1024: t.Cell(45.0)}}, [1024, 4096])
        self.assertIn(f"| 1024 | {t.tflops(1024, 45.0):.1f} | — | — | — | — | — |", text)
        self.assertIn("| 4096 | — | — | — | — | — | — |", text)

    def test_a_starred_cell_says_how(self):
        res = {"cudnn": {4096: t.Cell(400.0, f"{t.KV_REPEATED} (GQA refused: no)")}}
        text = t.markdown(res, [4096])
        self.assertIn(f"{t.tflops(4096, 400.0):.1f}*", text)
        self.assertIn(f"- cuDNN SDPA at 4096: {t.KV_REPEATED}", text)

    def test_goal_met_at_half_and_missed_below(self):
        met = t.goal(self.results(lab_us=1000.0, cudnn_us=500.0, flash_us=900.0))
        self.assertEqual((met["ratio"], met["met"]), (0.5, True))
        self.assertIn("0.50x, met", met["text"])
        missed = t.goal(self.results(lab_us=1000.0, cudnn_us=400.0, flash_us=300.0))
        self.assertEqual((missed["ratio"], missed["met"]), (0.4, False))
        self.assertIn("0.40x, MISSED", missed["text"])
        fast = t.goal(self.results(lab_us=400.0, cudnn_us=1000.0, flash_us=300.0))
        self.assertEqual((fast["ratio"], fast["met"]), (2.5, True))

    def test_goal_not_measured_says_why(self):
        g = t.goal({"lab": {4096: t.Cell(537.0)}, "cudnn": {4096: t.Cell(why="No available kernel")}})
        self.assertIsNone(g["met"])
        self.assertIn("not measured (cuDNN SDPA: No available kernel)", g["text"])
        self.assertIn("no lab row", t.goal({"cudnn": {4096: t.Cell(400.0)}})["text"])

    def test_json(self):
        doc = t.to_json(self.results(lab_us=1000.0, cudnn_us=400.0, flash_us=2000.0), [4096], {"torch": "x"})
        r = doc["rows"]["4096"]
        self.assertEqual(r["lab / cuDNN"], 0.4)
        self.assertEqual(r["lab / FA2"], 2.0)
        self.assertEqual(r["cudnn"]["TFLOP/s"], t.tflops(4096, 400.0))
        self.assertIn("n/a", r["efficient"])
        self.assertEqual(doc["shape"], {"batch": 1, "q_heads": 32, "kv_heads": 8, "head_dim": 128, "dtype": "fp16",
                                        "causal": True})
        self.assertFalse(doc["goal"]["met"])


class Arguments(Fixture):
    def test_bad_values_are_one_line_and_exit_2(self):
        for argv, words in ((["--reps", "0"], "argument --reps"), (["--reps", "x"], "argument --reps"),
                            (["--lengths", "0"], "argument --lengths"), (["--lengths", "4096", "-5"], "--lengths"),
                            (["--lengths", str(t.MAX_LEN + 1)], "argument --lengths"),
                            (["--json", str(self.dir / "no" / "out.json")], "argument --json"),
                            (["--bogus"], "unrecognized arguments")):
            with self.subTest(argv=argv):
                p = subprocess.run([sys.executable, str(TOOL), *argv], capture_output=True, text=True, timeout=60)
                self.assertEqual(p.returncode, 2, p.stderr)
                self.assertIn(words, p.stderr)
                self.assertNotIn("Traceback", p.stderr)
                self.assertEqual(len(p.stderr.strip().splitlines()), 1, p.stderr)

    def test_good_values(self):
        rc, out, err = self.main("--lengths", "4096", "1024", "4096", "--reps", "3",
                                 "--cpp", str(self.bench_json([row(1024, 45.0), row(4096, 537.0)])))
        self.assertEqual((rc, err), (0, ""))
        self.assertLess(out.index("| 4096 |"), out.index("| 1024 |"), "the lengths in the order given")
        self.assertEqual(out.count("| 4096 |"), 1, "a length given twice is one row")


# ---- a fake torch: the measurement's control flow without a GPU ---------------------------------

def fake_torch(us: dict[tuple[str, int], float], refuse: set[str] = frozenset(), refuse_gqa: set[str] = frozenset(),
               members: tuple[str, ...] = ("CUDNN_ATTENTION", "FLASH_ATTENTION", "EFFICIENT_ATTENTION"),
               cuda: bool = True):
    """(torch, sdpa, sdpa_kernel, SDPBackend) whose every SDPA call advances a clock by
    us[(backend, length)] and whose CUDA events read that clock; a backend of `refuse` (or of
    `refuse_gqa` when called with enable_gqa) warns its reason and raises, as torch does."""
    state = {"clock": 0.0, "backend": None, "calls": [], "sleeps": 0}

    class Tensor:
        def __init__(self, shape):
            self.shape = list(shape)

        def uniform_(self, lo, hi):
            return self

        def transpose(self, a, b):
            s = self.shape[:]
            s[a], s[b] = s[b], s[a]
            return Tensor(s)

        def repeat_interleave(self, r, dim):
            s = self.shape[:]
            s[dim] *= r
            return Tensor(s)

    class Event:
        def __init__(self, enable_timing=False):
            self.at = None

        def record(self):
            self.at = state["clock"]

        def elapsed_time(self, end):  # ms, as torch's
            return (end.at - self.at) / 1e3

    @contextlib.contextmanager
    def sdpa_kernel(backends):
        state["backend"] = backends[0]
        yield
        state["backend"] = None

    def sdpa(q, k, v, is_causal=False, enable_gqa=False):
        be, n = state["backend"], q.shape[2]
        assert is_causal and q.shape == [1, 32, n, 128], q.shape
        assert k.shape == v.shape == [1, 8 if enable_gqa else 32, n, 128], (k.shape, enable_gqa)
        if be in refuse or (enable_gqa and be in refuse_gqa):
            warnings.warn(f"{be} kernel not used because: the fake refuses it")
            raise RuntimeError("No available kernel. Aborting execution.")
        state["calls"].append((be, n, enable_gqa))
        state["clock"] += us[(be, n)]

    def sleep(cycles):  # a spin before the timed calls: it must stay outside their events
        state["sleeps"] += 1
        state["clock"] += cycles / 1e3

    torch = SimpleNamespace(
        __version__="0.0+fake", float16="fp16", device=lambda name: name, manual_seed=lambda s: None,
        empty=lambda *shape, device=None, dtype=None: Tensor(shape), inference_mode=contextlib.nullcontext,
        cuda=SimpleNamespace(is_available=lambda: cuda, get_device_name=lambda: "Fake GPU", synchronize=lambda: None,
                             Event=Event, empty_cache=lambda: None, _sleep=lambda cycles: sleep(cycles)))
    return (torch, sdpa, sdpa_kernel, SimpleNamespace(**{m: m for m in members})), state


class FakeTorch(Fixture):
    US = {("CUDNN_ATTENTION", 4096): 400.0, ("FLASH_ATTENTION", 4096): 800.0, ("EFFICIENT_ATTENTION", 4096): 1600.0,
          ("CUDNN_ATTENTION", 1024): 30.0, ("FLASH_ATTENTION", 1024): 60.0, ("EFFICIENT_ATTENTION", 1024): 90.0}

    def run_with(self, fake, *argv: str) -> tuple[int, str, str]:
        with mock.patch.object(t, "load_torch", lambda: fake):
            return self.main(*argv)

    def test_every_backend_timed_with_gqa(self):
        fake, state = fake_torch(self.US)
        out_json = self.dir / "out.json"
        with mock.patch.object(t, "SLEEP_EVERY", 1):  # a spin before every timed call: never inside its events
            rc, out, err = self.run_with(fake, "--cpp", str(self.bench_json([row(4096, 800.0)], gpu="Fake GPU")),
                                         "--reps", "7", "--json", str(out_json))
        self.assertEqual((rc, err), (0, ""))
        cells = [f"{t.tflops(4096, us):.1f}" for us in (800.0, 400.0, 800.0, 1600.0)]
        self.assertIn(f"| 4096 | {' | '.join(cells)} | 0.50x | 1.00x |", out)
        self.assertIn("0.50x, met", out)
        self.assertNotIn("two GPUs", out)
        # warm-up and --reps calls per backend, every one with GQA, the timed ones behind a spin
        self.assertEqual(len(state["calls"]), 3 * (t.WARMUP + 7))
        self.assertEqual(state["sleeps"], 3 * 7)
        self.assertTrue(all(gqa for _, _, gqa in state["calls"]))
        doc = json.loads(out_json.read_text())
        self.assertEqual(doc["gpu"], "Fake GPU")
        self.assertEqual(doc["rows"]["4096"]["cudnn"]["median_us"], 400.0)
        self.assertTrue(doc["goal"]["met"])

    def test_refusals_are_na_or_kv_repeated_never_a_traceback(self):
        fake, _ = fake_torch(self.US, refuse={"EFFICIENT_ATTENTION"}, refuse_gqa={"CUDNN_ATTENTION"},
                             members=("CUDNN_ATTENTION", "EFFICIENT_ATTENTION"))
        rc, out, err = self.run_with(fake, "--lengths", "1024", "--reps", "3",
                                     "--cpp", str(self.bench_json([row(1024, 60.0)])))
        self.assertEqual((rc, err), (0, ""))
        self.assertIn(f"| 1024 | {t.tflops(1024, 60.0):.1f} | {t.tflops(1024, 30.0):.1f}* | n/a | n/a | 0.50x | — |",
                      out)
        self.assertIn(f"cuDNN SDPA at 1024: {t.KV_REPEATED} (GQA refused: CUDNN_ATTENTION kernel not used because",
                      out)
        self.assertIn("FlashAttention-2 at 1024: n/a, this torch (0.0+fake) has no SDPBackend.FLASH_ATTENTION", out)
        self.assertIn("memory-efficient at 1024: n/a, EFFICIENT_ATTENTION kernel not used because: the fake", out)
        self.assertIn("the lab's rows were measured on NVIDIA Test GPU", out)
        self.assertIn("not measured (no lab row (--cpp); cuDNN SDPA not run)", out, "1024 only: no goal length")

    def test_without_a_cuda_device_the_lab_rows_and_exit_0(self):
        fake, state = fake_torch(self.US, cuda=False)
        rc, out, _ = self.run_with(fake, "--cpp", str(self.bench_json([row(4096, 537.0)])))
        self.assertEqual(rc, 0)
        self.assertIn("no CUDA device", out)
        self.assertIn(f"| 4096 | {t.tflops(4096, 537.0):.1f} | — |", out)
        self.assertEqual(state["calls"], [])


class WithoutTorch(Fixture):
    def setUp(self):
        super().setUp()
        if torch_installed():
            self.skipTest("torch is installed here")

    def test_it_says_so_prints_the_lab_rows_and_exits_0(self):
        out_json = self.dir / "out.json"
        rc, out, err = self.main("--cpp", str(self.bench_json([row(4096, 537.0), aggregate(4096, "median", 537.0)])),
                                 "--json", str(out_json))
        self.assertEqual((rc, err), (0, ""))
        self.assertIn("torch is not installed", out)
        self.assertIn(f"| 4096 | {t.tflops(4096, 537.0):.1f} | — | — | — | — | — |", out)
        self.assertIn("not measured", out)
        doc = json.loads(out_json.read_text())
        self.assertIsNone(doc["torch"])
        self.assertEqual(doc["rows"]["4096"]["lab"]["median_us"], 537.0)

    def test_without_cpp_either(self):
        rc, out, _ = self.main()
        self.assertEqual(rc, 0)
        self.assertIn("torch is not installed", out)
        self.assertNotIn("| tokens |", out)

    def test_the_acceptance_torch_step_runs_it(self):
        acc = self.dir / "acc"
        p = subprocess.run([str(ROOT / "scripts" / "gpu_acceptance"), str(acc), "torch"], capture_output=True,
                           text=True, timeout=300)
        self.assertEqual(p.returncode, 0, p.stderr)
        progress = (acc / "progress").read_text()
        self.assertIn("=== torch: exit 0", progress)
        self.assertIn("=== torch_ch11: exit 0", progress)
        self.assertIn("torch is not installed", (acc / "torch_ch11.log").read_text())
        doc = json.loads((acc / "ch11_torch.json").read_text())
        committed = sorted((ROOT / "docs" / "results" / "raw").glob("*/bench_ch11.json"))
        if committed:  # no bench step in this run: the first committed bench_ch11.json, as ch01's
            self.assertEqual(ROOT / doc["cpp"], committed[0])


if __name__ == "__main__":
    unittest.main()
