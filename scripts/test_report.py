#!/usr/bin/env python3
"""Unit tests of report.py's tables (no GPU, no build): python3 scripts/test_report.py"""
from __future__ import annotations

import sys
import unittest
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import report  # noqa: E402

ROWS = [
    ("BM_sgemm_cublas/4096/manual_time", "", 50.0),
    ("BM_sgemm/naive/4096/manual_time", "naive", 0.5),
    ("BM_sgemm/warptile/4096/manual_time", "warptile", 44.0),
    ("BM_sgemm/warptile/1024/manual_time", "warptile", 16.0),
    ("BM_sgemm/warptile/4095/manual_time", "warptile", 38.0),
    ("BM_sgemm_cublas/4095/manual_time", "", 47.5),
    ("BM_tc_gemm/wgmma_bf16/8192/manual_time", "", 640.0),
    ("BM_tc_gemm_cublas/bf16/8192/manual_time", "", 650.0),
    ("BM_tc_gemm_cublas/fp16/8192/manual_time", "", 600.0),
]
DATA = {"benchmarks": [{"name": n, "label": l, "TFLOP/s": v} for n, l, v in ROWS]}


class LadderTables(unittest.TestCase):
    def test_each_step_is_beside_the_vendor_row_of_its_own_size(self):
        text = "\n".join(report.ladder_tables("ch06", DATA))
        self.assertIn("| step | 1024 | 4095 | 4096 |", text)  # sizes sorted as numbers
        self.assertIn("| warptile | 16.00 | 38.00 (80.0%) | 44.00 (88.0%) |", text)  # no cuBLAS row at 1024
        self.assertIn("| naive |  |  | 0.50 (1.0%) |", text)

    def test_tensor_core_rows_use_the_vendor_row_of_the_same_type(self):
        text = "\n".join(report.ladder_tables("ch06", DATA))
        self.assertIn("| wgmma_bf16 | 640.00 (98.5%) |", text)

    def test_a_chapter_without_ladder_rows_adds_nothing(self):
        self.assertEqual(report.ladder_tables("ch03", DATA), [])
        self.assertEqual(report.ladder_tables("ch06", {"benchmarks": []}), [])


if __name__ == "__main__":
    unittest.main()
