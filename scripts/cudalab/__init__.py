"""The lab's Python code behind its commands: scripts/lab, scripts/grade and scripts/gpu_suite are
thin entry points over lab.py, grade.py and gpu_suite.py here (so every line of them is a Python
module that tools and `duplicates` read). The shared helpers are scripts/labtools.py and
scripts/gradelib.py."""
