#!/usr/bin/env python3
"""Unit tests of chapters/01_serving_latency/tools/ch01_torch.py's table and JSON reading (no torch, no GPU)."""
from __future__ import annotations

import io
import json
import sys
import tempfile
import unittest
from contextlib import redirect_stderr, redirect_stdout
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "chapters" / "01_serving_latency" / "tools"))
import ch01_torch as t  # noqa: E402


class CppRows(unittest.TestCase):
    def test_reads_medians_and_skips_errors(self):
        data = {"benchmarks": [
            {"name": "BM_block/eager/batch:4/manual_time", "median_us": 120.5},
            {"name": "BM_block/graph/batch:4/manual_time", "median_us": 30.0},
            {"name": "BM_block/fused/batch:4/manual_time", "error_occurred": True},
        ]}
        with tempfile.TemporaryDirectory() as d:
            f = Path(d) / "b.json"
            f.write_text(json.dumps(data))
            rows = t.cpp_rows(f)
        self.assertEqual(rows, {("C++ eager", 4): 120.5, ("C++ graph", 4): 30.0})
        text = t.markdown(rows, list(t.CPP_MODES.values()), [4])
        self.assertIn("| 4 | — | 120.5 | — | 30.0 |", text)

    def test_repetitions_give_their_median_not_the_last(self):
        data = {"benchmarks": [
            {"name": "BM_block/eager/batch:1/manual_time", "run_type": "iteration", "median_us": v}
            for v in (10.0, 20.0, 30.0)] + [
            {"name": "BM_block/eager/batch:1/manual_time_mean", "run_type": "aggregate",
             "aggregate_name": "mean", "median_us": 99.0},
            {"name": "BM_block/graph/batch:1/manual_time", "run_type": "iteration",
             "error_occurred": True, "error_message": "x"}]}
        with tempfile.TemporaryDirectory() as d:
            f = Path(d) / "b.json"
            f.write_text(json.dumps(data))
            self.assertEqual(t.cpp_rows(f), {("C++ eager", 1): 20.0})

    def test_without_torch_it_says_so_and_exits_0(self):
        try:
            import torch  # noqa: F401
            self.skipTest("torch is installed here")
        except ImportError:
            pass
        out = io.StringIO()
        with redirect_stdout(out):
            self.assertEqual(t.main([]), 0)
        self.assertIn("torch is not installed", out.getvalue())


class BadInput(unittest.TestCase):
    """Bad arguments are a usage error (exit 2) naming the argument, never a traceback."""

    def exit_code_and_stderr(self, argv):
        err = io.StringIO()
        with redirect_stderr(err), redirect_stdout(io.StringIO()):
            with self.assertRaises(SystemExit) as cm:
                t.main(argv)
        return cm.exception.code, err.getvalue()

    def test_unreadable_or_malformed_cpp_json(self):
        with tempfile.TemporaryDirectory() as d:
            missing = Path(d) / "missing.json"
            code, err = self.exit_code_and_stderr(["--cpp", str(missing)])
            self.assertEqual(code, 2)
            self.assertIn("--cpp", err)
            self.assertIn("cannot read", err)
            bad = Path(d) / "bad.json"
            bad.write_text("{not json")
            code, err = self.exit_code_and_stderr(["--cpp", str(bad)])
            self.assertEqual((code, "not JSON" in err), (2, True))
            wrong = Path(d) / "list.json"
            wrong.write_text("[1, 2]")
            code, err = self.exit_code_and_stderr(["--cpp", str(wrong)])
            self.assertEqual((code, "Google Benchmark" in err), (2, True))

    def test_batches_and_reps_must_be_positive_integers(self):
        for argv, name in ((["--batches", "0"], "--batches"), (["--batches", "4", "-1"], "--batches"),
                           (["--reps", "0"], "--reps"), (["--reps", "x"], "--reps")):
            code, err = self.exit_code_and_stderr(argv)
            self.assertEqual(code, 2, argv)
            self.assertIn(name, err, argv)


if __name__ == "__main__":
    unittest.main()
