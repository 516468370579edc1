#!/usr/bin/env bash
# The student's copy on a GPU machine, end to end (docs/student-guide.md):
#
#   scripts/gpu_check_h24-handout.sh OUT
#
# 1. writes a fresh handout of this tree to a temporary folder (never into this tree);
# 2. runs its README commands as written: the first command (scripts/lab) and the test command
#    (scripts/lab test), with -j 16; the handout builds its own starter track, nothing is reused;
# 3. puts the reference files of exercises 5.4 and 3.2 into the HANDOUT's starter (this tree's
#    starter is never written), runs `scripts/lab check 5.4` and `scripts/grade --chapter 5` and
#    `--chapter 3` there: 5.4 and 3.2 must be done, with the speed column filled;
# 4. a student's mistakes, in the handout's copy: a compile error in 3.5's file and a crash
#    (std::abort) in 3.1's, then `scripts/grade --chapter 3 --no-bench`: 3.5 and 3.1 score 0
#    with the error and the crash in their rows, and 3.2 is still done.
# Logs and grades go to OUT (a few files); the summary table is printed at the end.
set -uo pipefail
case "${1:-}" in
  -h|--help) sed -n '2,/^set -uo/{/^set -uo/d;s/^# \{0,1\}//;p}' "$0"; exit 0 ;;
  ""|-*) echo "usage: scripts/gpu_check_h24-handout.sh OUT" >&2; exit 2 ;;
esac
root=$(cd "$(dirname "$0")/.." && pwd)
out=$(mkdir -p "$1" && cd "$1" && pwd) || { echo "cannot create $1" >&2; exit 2; }
tmp=$(mktemp -d "${TMPDIR:-/tmp}/cudalab-handout-XXXXXX")
ho="$tmp/handout"
export NCCL_NVLS_ENABLE=${NCCL_NVLS_ENABLE:-0} PYTHONUNBUFFERED=1
rows=()
status=0

step() {  # step NAME EXPECTED_RC COMMAND... (run in the handout)
  local name=$1 want=$2 t0 rc
  shift 2
  t0=$(date +%s)
  (cd "$ho" && "$@") >"$out/$name.log" 2>&1
  rc=$?
  local verdict=ok
  [ "$rc" = "$want" ] || { verdict=UNEXPECTED; status=1; }
  rows+=("$(printf '%-14s exit %-3s (want %s) %4ss  %s' "$name" "$rc" "$want" "$(($(date +%s) - t0))" "$verdict")")
  echo "${rows[-1]}"
}

# the reference files of an exercise (this tree's) into the handout's starter
solve() {
  local ex=$1 f
  for f in $(grep -l "BEGIN EXERCISE $ex\$" "$root"/chapters/*/reference/*); do
    rel=${f#"$root"/}
    cp "$f" "$ho/${rel/\/reference\//\/starter\/}"
  done
}

(cd "$root" && python3 scripts/lab handout "$ho") >"$out/handout.log" 2>&1 || { cat "$out/handout.log"; exit 1; }
git -C "$root" status --porcelain >"$out/tree-status-before.txt"
# README, quick start: the first command, then the test command (the handout's README says so)
step first 0 python3 scripts/lab -j 16
step test 0 python3 scripts/lab test -j 16
solve 5.4
solve 3.2
step check-5.4 0 python3 scripts/lab check 5.4 -j 16
step grade-ch05 1 python3 scripts/grade --chapter 5 -j 16 --out "$out/grade-ch05"
step grade-ch03 1 python3 scripts/grade --chapter 3 -j 16 --out "$out/grade-ch03"

# a student's mistakes: a compile error inside 3.5's region, a crash inside 3.1's
python3 - "$ho" <<'EOF'
import re, sys
from pathlib import Path
ho = Path(sys.argv[1])
def inject(name, ex, line):
    p = ho / "chapters/03_first_kernels/starter" / name
    t = p.read_text()
    t2 = re.sub(rf"(// BEGIN EXERCISE {re.escape(ex)}\n)", lambda m: m.group(1) + line + "\n", t, count=1)
    assert t2 != t, (name, ex)
    p.write_text(t2)
inject("rgb_to_gray.cu", "3.5", "  this_is_not_cpp;  // a student's typo")
inject("launch_config.cpp", "3.1", "  std::abort();  // a student's crash")
EOF
step grade-broken 1 python3 scripts/grade --chapter 3 --no-bench -j 16 --out "$out/grade-ch03-broken"
git -C "$root" status --porcelain >"$out/tree-status-after.txt"

python3 - "$out" <<'EOF' | tee "$out/summary.txt"
import json, sys
from pathlib import Path
out = Path(sys.argv[1])
problems = []
def load(name):
    p = out / name / "grade.json"
    return json.loads(p.read_text()) if p.exists() else None
for name in ("grade-ch05", "grade-ch03", "grade-ch03-broken"):
    g = load(name)
    print(f"\n== {name}")
    if g is None:
        problems.append(f"{name}: no grade.json")
        continue
    print((out / name / "grade.md").read_text())
    rows = {r["exercise"]: r for r in g["exercises"]}
    for need in (["5.4"] if name == "grade-ch05" else ["3.2"]):
        r = rows.get(need)
        if not r or r["state"] != "done":
            problems.append(f"{name}: {need} is not done: {r and r['state']}")
        elif name != "grade-ch03-broken" and (not r["speed"] or r["speed"]["ratio"] is None):
            problems.append(f"{name}: {need} has no measured speed")
    if name == "grade-ch03-broken":
        for ex, word in (("3.5", "does not compile"), ("3.1", "crashed")):
            r = rows.get(ex, {})
            if r.get("state") != "failing" or word not in r.get("first_failure", ""):
                problems.append(f"{name}: {ex} should fail with '{word}': {r.get('state')} {r.get('first_failure', '')[:120]}")
    for f in ("results.json", "grade.xml", "tests.xml"):
        if not (out / name / f).exists():
            problems.append(f"{name}: no {f}")
if (out / "tree-status-before.txt").read_text() != (out / "tree-status-after.txt").read_text():
    problems.append("this tree's git status changed during the run")
print("\nPROBLEMS:\n  " + "\n  ".join(problems) if problems else "\nall checks passed")
sys.exit(1 if problems else 0)
EOF
[ "${PIPESTATUS[0]}" = 0 ] || status=1
echo
printf '%s\n' "${rows[@]}"
tail -3 "$out/first.log" "$out/test.log" 2>/dev/null
rm -rf "$tmp"
exit $status
