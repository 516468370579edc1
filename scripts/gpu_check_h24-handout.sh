#!/usr/bin/env bash
# The GPU evidence of the handout work, from the repository root on a GPU machine:
#
#   scripts/gpu_check_h24-handout.sh OUT
#
# 1. scripts/handout_check OUT (the student's copy end to end; its header says what it runs and
#    checks; it builds its own handout, nothing of this tree's build is reused);
# 2. when this tree has build/gpu: the first command's key figures alone (scripts/lab's
#    key_figures: a warm-up pass, then the median of 3 repetitions of each chapter's headline rows),
#    to show whether the references meet their own goals there (OUT/key_figures.txt; at most 150 s;
#    KEY_FIGURES=0 skips it).
set -uo pipefail
case "${1:-}" in
  -h|--help) sed -n '2,/^set -uo/{/^set -uo/d;s/^# \{0,1\}//;p}' "$0"; exit 0 ;;
  ""|-*) echo "usage: scripts/gpu_check_h24-handout.sh OUT" >&2; exit 2 ;;
esac
cd "$(dirname "$0")/.."
mkdir -p "$1" || exit 2
"scripts/handout_check" "$1"
status=$?
if [ "${KEY_FIGURES:-1}" != 0 ] && [ -d build/gpu/bench ]; then
  timeout 150 python3 - "$1" <<'PY' | tee "$1/key_figures.txt"
import importlib.machinery, importlib.util, sys, time
from pathlib import Path
loader = importlib.machinery.SourceFileLoader("lab", "scripts/lab")
spec = importlib.util.spec_from_loader("lab", loader)
lab = importlib.util.module_from_spec(spec)
loader.exec_module(lab)
t0 = time.time()
work = Path(sys.argv[1]) / "key_figures"
work.mkdir(parents=True, exist_ok=True)
for ch, lines in lab.key_figures(Path("build/gpu"), work).items():
    for line in lines:
        print(f"{ch}: {line}")
print(f"key figures: {time.time() - t0:.0f} s")
PY
fi
exit $status
