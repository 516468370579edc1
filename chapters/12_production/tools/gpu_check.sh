#!/usr/bin/env bash
# Chapter 12 on a GPU, in one go (under 4 minutes on an H200), after
#   cmake --preset gpu && cmake --build --preset gpu
# Usage: chapters/12_production/tools/gpu_check.sh OUT
# Writes under OUT: doctor.txt/.json (+ h200_live.json, the live fixture), the chapter's tests and
# pitfalls, the estimator, the exporter scraped while a kernel runs, the utilization trap (with
# ncu), the benchmark JSON's clock context, and the go-live checklist for real (golive/: the OOM
# drill, the torch allocator check, a short soak, the serving budget), a throttle watch of
# CH12_WATCH_S seconds (default 20; the lesson's sustained load is 60), with its plot where
# matplotlib is installed; then a summary.
# Observe only: nothing here changes clocks, power limits or MIG.
set -u
W=${CH12_WATCH_S:-20}
if ! [[ $W =~ ^[1-9][0-9]*$ ]]; then
  echo "gpu_check.sh: CH12_WATCH_S='$W' is not a whole number of seconds" >&2
  exit 2
fi
OUT=${1:?usage: $0 OUT}
mkdir -p "$OUT"
ROOT=$(cd "$(dirname "$0")/../../.." && pwd)
cd "$ROOT"
B=${CUDALAB_BUILD:-build/gpu}  # the build to check (CUDALAB_BUILD=build/ci: a dry run without a GPU)
T=chapters/12_production/tools
APP=$B/chapters/12_production
declare -a SUMMARY=() FAILED=()  # empty, not unset: set -u reads ${#FAILED[@]} below
step() {  # step NAME CMD... : runs it, logs to OUT/NAME.log, records its exit status
  local name=$1; shift
  local t0=$SECONDS
  "$@" >"$OUT/$name.log" 2>&1
  local rc=$?
  SUMMARY+=("$(printf '%-18s rc=%-3s %4ss' "$name" "$rc" $((SECONDS - t0)))")
  [ "$rc" -eq 0 ] || FAILED+=("$name")
  return $rc
}

step doctor python3 $T/doctor.py --build-dir $B --json "$OUT/doctor.json" --record "$OUT/h200_live.json"
cp "$OUT/doctor.log" "$OUT/doctor.txt"
step tests_ref ctest --test-dir $B -L ch12 -L reference --output-on-failure
# A pitfall is caught when its test executable exists and fails (a missing one is not "caught").
caught() {
  [ -x "$1" ] || { echo "$1: not built"; return 1; }
  if "$1" >/dev/null; then echo "$1: every test passed (NOT caught)"; return 1; fi
  echo "$(basename "$1"): caught"
}
pitfalls_caught() {
  caught "$B/tests/ch12/pitfall_budget_forgets_context_ch12_test_budget" &&
    caught "$B/tests/ch12/pitfall_retry_keeps_partial_blocks_ch12_test_retry"
}
step tests_pitfalls pitfalls_caught
step estimator $APP/ch12_mem_budget --gpu h200 --context 8192 --json "$OUT/estimator.json"
step exporter_scrape python3 $T/exporter.py --interval 0.25 --during-load "$APP/ch12_load --seconds 6" \
  --out "$OUT/scrape.json"
step util_trap python3 $T/util_trap.py --load $APP/ch12_load --seconds 3 --out "$OUT/util_trap.json"
step throttle_watch python3 $T/throttle_watch.py --seconds "$W" --hz 10 --load "$APP/ch12_load --seconds $W" \
  --out "$OUT/throttle.json" --plot "$OUT/throttle.png"
step bench_context bash -c "$B/tests/ch12/reference_ch12_test_bench_context && \
  $B/bench/bench_ch03 --benchmark_filter='^BM_(vector_add|saxpy)/' \
    --benchmark_out=$OUT/bench_ch03_context.json --benchmark_out_format=json > /dev/null && \
  python3 $T/bench_flags.py $OUT/bench_ch03_context.json"
# The checklist for real: it also runs the OOM drill (golive/oom.json), the torch allocator check
# (golive/torch_alloc.json), a 5 s soak (golive/throttle.json; the 20 s watch is above) and the
# serving budget.
step golive python3 $T/golive.py --build-dir $B --soak 5 --out "$OUT/golive"
echo
echo "== chapter 12 GPU check ($OUT)"
printf '%s\n' "${SUMMARY[@]}"
echo "-- doctor:"; tail -n 25 "$OUT/doctor.txt"
echo "-- estimator vs the OOM drill:"; cat "$OUT/estimator.json" "$OUT/golive/oom.json" 2>/dev/null
for f in estimator exporter_scrape util_trap throttle_watch torch_alloc bench_context golive; do
  [ -f "$OUT/$f.log" ] && { echo "-- $f:"; tail -n 24 "$OUT/$f.log"; }
done
echo
if [ ${#FAILED[@]} -gt 0 ]; then
  echo "chapter 12 GPU check: steps with a non-zero exit: ${FAILED[*]}"
  exit 1
fi
echo "chapter 12 GPU check: every step exited 0"
