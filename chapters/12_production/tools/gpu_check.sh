#!/usr/bin/env bash
# Chapter 12 on a GPU, in one go (under 4 minutes on an H200), after
#   cmake --preset gpu && cmake --build --preset gpu
# Usage: chapters/12_production/tools/gpu_check.sh OUT
# Writes under OUT: doctor.txt/.json (+ h200_live.json, the live fixture), the chapter's GPU tests,
# the OOM drill beside the estimator, the exporter scraped while a kernel runs and the utilization
# trap, a 20 s throttle watch, the torch allocator check and the go-live checklist; then a summary.
# Observe only: nothing here changes clocks, power limits or MIG.
set -u
OUT=${1:?usage: $0 OUT}
mkdir -p "$OUT"
ROOT=$(cd "$(dirname "$0")/../../.." && pwd)
cd "$ROOT"
B=build/gpu
T=chapters/12_production/tools
APP=$B/chapters/12_production
declare -a SUMMARY
step() {  # step NAME CMD... : runs it, logs to OUT/NAME.log, records its exit status
  local name=$1; shift
  local t0=$SECONDS
  "$@" >"$OUT/$name.log" 2>&1
  local rc=$?
  SUMMARY+=("$(printf '%-18s rc=%-3s %4ss' "$name" "$rc" $((SECONDS - t0)))")
  return $rc
}

step doctor python3 $T/doctor.py --build-dir $B --json "$OUT/doctor.json" --record "$OUT/h200_live.json"
cp "$OUT/doctor.log" "$OUT/doctor.txt"
step tests_ref bash -c "$B/tests/ch12/reference_ch12_test_budget && $B/tests/ch12/reference_ch12_test_retry"
step tests_pitfalls bash -c "! $B/tests/ch12/pitfall_budget_forgets_context_ch12_test_budget >/dev/null && \
  ! $B/tests/ch12/pitfall_retry_keeps_partial_blocks_ch12_test_retry >/dev/null && echo 'both pitfalls caught'"
step estimator $APP/ch12_mem_budget --gpu h200 --context 8192 --json "$OUT/estimator.json"
step oom_drill $APP/ch12_oom_drill --context 8192 --json "$OUT/oom_drill.json"
[ -f $T/exporter.py ] && step exporter_scrape python3 $T/exporter.py --selftest-live --load $APP/ch12_load \
  --out "$OUT/scrape.json"
[ -f $T/util_trap.py ] && step util_trap python3 $T/util_trap.py --load $APP/ch12_load --out "$OUT/util_trap.json"
[ -f $T/throttle_watch.py ] && step throttle_watch python3 $T/throttle_watch.py --seconds 20 --hz 10 \
  --load "$APP/ch12_load --seconds 20" --out "$OUT/throttle.json"
[ -f $T/torch_alloc.py ] && step torch_alloc python3 $T/torch_alloc.py --out "$OUT/torch_alloc.json"
[ -f $T/golive.py ] && step golive python3 $T/golive.py --build-dir $B --out "$OUT/golive.json"

echo
echo "== chapter 12 GPU check ($OUT)"
printf '%s\n' "${SUMMARY[@]}"
echo "-- doctor:"; tail -n 25 "$OUT/doctor.txt"
echo "-- oom drill:"; cat "$OUT/oom_drill.log"
for f in exporter_scrape util_trap throttle_watch torch_alloc golive; do
  [ -f "$OUT/$f.log" ] && { echo "-- $f:"; tail -n 12 "$OUT/$f.log"; }
done
