#!/usr/bin/env python3
"""Discovery shim: chapter 10's PyTorch tests (chapters/10_frameworks/torch/test_*.py) run with the
scripts' tests (`python3 -m unittest discover -s scripts -p 'test_*.py'`, what CI runs). Without
torch each of them is reported skipped with the reason, never passed; on the H200 they run through
chapters/10_frameworks/tools/gpu_check.sh."""
from __future__ import annotations

import importlib
import sys
import unittest
from pathlib import Path

TORCH_TESTS = Path(__file__).resolve().parent.parent / "chapters" / "10_frameworks" / "torch"


def load_tests(loader: unittest.TestLoader, standard_tests: unittest.TestSuite, pattern: str | None):
    if str(TORCH_TESTS) not in sys.path:
        sys.path.insert(0, str(TORCH_TESTS))
    suite = unittest.TestSuite()
    for f in sorted(TORCH_TESTS.glob("test_*.py")):
        suite.addTests(loader.loadTestsFromModule(importlib.import_module(f.stem)))
    return suite


if __name__ == "__main__":
    unittest.main()
