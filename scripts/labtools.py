"""The shared helpers of the lab's scripts (lab, grade, gpu_suite, report, variants, handout), one
module per concern in the package scripts/cudalab/:

  core      the repository root, presets and build folders, running a command, the GPU check, exit
            statuses
  args      the command line's checks (chapters, exercises, output folders, CUDALAB_SEED)
  build     configure and build; the pristine-starter fallback when a learner's file does not compile
  testrun   ctest labels, one process per test executable, the per-exercise and per-pitfall tables
  junit     JUnit XML of the results
  verdicts  compute-sanitizer summaries, pitfall and mutant verdicts, the mutants' schema
  deps      the system packages (scripts/deps.txt)
  fmt       the clang-format check

This module gathers their public names under one, so that a script writes `lt.run_tests(...)`
without knowing which module owns it; a fact is defined in its module only. Standard library
only."""
from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from cudalab.core import *  # noqa: E402,F401,F403
from cudalab.args import *  # noqa: E402,F401,F403
from cudalab.build import *  # noqa: E402,F401,F403
from cudalab.testrun import *  # noqa: E402,F401,F403
from cudalab.junit import *  # noqa: E402,F401,F403
from cudalab.verdicts import *  # noqa: E402,F401,F403
from cudalab.deps import *  # noqa: E402,F401,F403
from cudalab.fmt import *  # noqa: E402,F401,F403
