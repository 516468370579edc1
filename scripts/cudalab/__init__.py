"""The lab's Python code. The commands scripts/lab, scripts/grade and scripts/gpu_suite are thin
entry points over lab.py, grade.py and gpu_suite.py here; the helpers they share are one module
per concern (core, args, build, testrun, junit, verdicts, deps, fmt), whose public names
scripts/labtools.py gathers as `lt`. Grading rules: scripts/gradelib.py."""
