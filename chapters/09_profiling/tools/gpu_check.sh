#!/usr/bin/env bash
# Chapter 9 on a GPU: every check of the chapter that needs the device, in one go (< 5 minutes on
# an H200). Run from the repository root after `cmake --preset gpu && cmake --build --preset gpu`:
#
#     chapters/09_profiling/tools/gpu_check.sh OUT
#
# Writes logs and JSON under OUT and prints a summary table. Never changes clocks (ncu runs with
# --clock-control none), never resets the GPU. Each step says "skipped: <reason>" when a tool is
# missing or refuses (ERR_NVGPUCTRPERM), and a skip is never counted as a pass.
set -u
OUT=${1:?usage: chapters/09_profiling/tools/gpu_check.sh OUT}
BUILD=${BUILD:-build/gpu}
mkdir -p "$OUT"
SUMMARY="$OUT/summary.txt"
: > "$SUMMARY"
status=0
note() { printf '%-34s %-8s %s\n' "$1" "$2" "$3" | tee -a "$SUMMARY"; [ "$2" = FAIL ] && status=1; return 0; }

# ctest's own summary counts a skipped test as not failed: say how many were skipped, and SKIP
# when nothing ran.
ctest_note() {  # name log rc
  local summary skipped total
  summary=$(grep -E 'tests passed|tests failed' "$2" | tail -1)
  total=$(echo "$summary" | grep -Eo 'out of [0-9]+' | grep -Eo '[0-9]+')
  skipped=$(grep -cE '\(Skipped\)' "$2")
  if [ "$3" -ne 0 ]; then note "$1" FAIL "$summary, $skipped skipped (see $(basename "$2"))"
  elif [ -n "$total" ] && [ "$skipped" -ge "$total" ]; then note "$1" SKIP "all $total skipped ($(basename "$2"))"
  else note "$1" PASS "$summary, $skipped skipped"; fi
}

if [ ! -d "$BUILD" ]; then
  echo "gpu_check: no build directory $BUILD (cmake --preset gpu && cmake --build --preset gpu)" >&2
  exit 2
fi

# 1. The chapter's GPU tests (reference track) and the sanitizer bug hunt.
# (-LE: the sanitizer and hunt tests run below / are the learner's: 50 sanitizer runs)
t0=$SECONDS
ctest --test-dir "$BUILD" -L ch09 -L reference -LE 'sanitizer|hunt|trace' --output-on-failure > "$OUT/ctest_ch09.log" 2>&1
ctest_note "ctest -L ch09 -L reference" "$OUT/ctest_ch09.log" $?
if ctest --test-dir "$BUILD" -N -L sanitizer | grep -q 'Total Tests: [1-9]'; then
  ctest --test-dir "$BUILD" -L sanitizer -j4 --output-on-failure -V > "$OUT/ctest_sanitizer.log" 2>&1
  ctest_note "ctest -L sanitizer" "$OUT/ctest_sanitizer.log" $?
  grep -h '^[0-9]*: sancheck: ' "$OUT/ctest_sanitizer.log" | sed 's/^[0-9]*: /  /' | tee -a "$SUMMARY"
else
  note "ctest -L sanitizer" SKIP "skipped: no sanitizer tests registered (compute-sanitizer not found at configure time?)"
fi

# 2. The CUPTI timeline of chapter 7's overlap lab: the traces come back in OUT/trace/.
TRACE_EXE="$BUILD/chapters/09_profiling/ch09_trace_pipeline"
if [ -x "$TRACE_EXE" ]; then
  python3 chapters/09_profiling/tools/trace_check.py --run "$TRACE_EXE" --out "$OUT/trace" > "$OUT/trace_check.log" 2>&1
  rc=$?
  if grep -q '^skipped: ' "$OUT/trace_check.log"; then
    note "CUPTI trace (ch07 pipeline)" SKIP "$(grep '^skipped: ' "$OUT/trace_check.log" | head -1)"
  elif [ $rc -eq 0 ]; then
    note "CUPTI trace (ch07 pipeline)" PASS "$(grep -c PASS "$OUT/trace_check.log") checks; $(grep 'copies overlap' "$OUT/trace_check.log" | sed 's/.*: overlap/overlap/')"
  else
    note "CUPTI trace (ch07 pipeline)" FAIL "$(grep -E 'FAIL|error' "$OUT/trace_check.log" | head -2 | tr '\n' ' ') (trace_check.log)"
  fi
else
  note "CUPTI trace (ch07 pipeline)" SKIP "skipped: ch09_trace_pipeline not built (no CUPTI at configure time)"
fi

# 3. The benchmark of exercise 9.1, reference and starter (the profile exercise), one repetition.
for exe in bench_ch09 bench_ch09_starter; do
  "$BUILD/bench/$exe" --benchmark_out="$OUT/$exe.json" --benchmark_out_format=json > "$OUT/$exe.log" 2>&1
  rc=$?
  got=$(python3 -c "import json,sys; d=json.load(open(sys.argv[1])); r=[b for b in d['benchmarks'] if b['name'].startswith('BM_scale_rows') and 'GB/s' in b]; print(f\"{r[0]['GB/s']:.0f} GB/s, {r[0].get('pct_of_copy', 0):.0f}% of the copy\" if r else '')" "$OUT/$exe.json" 2>/dev/null)
  if [ $rc -ne 0 ]; then note "$exe" FAIL "exited $rc (see $exe.log)"
  elif [ -z "$got" ]; then note "$exe" SKIP "skipped: no BM_scale_rows row measured ($(grep -Ei 'skip|no gpu' "$OUT/$exe.log" | head -1))"
  else note "$exe" PASS "BM_scale_rows $got"; fi
done

note "  (time so far)" INFO "$((SECONDS - t0)) s"

# 4. ncu: counted against measured, and the fingerprints (tools/ncu_check.py).
if [ -x chapters/09_profiling/tools/ncu_check.py ]; then
  python3 chapters/09_profiling/tools/ncu_check.py --build "$BUILD" --out "$OUT" >> "$SUMMARY" 2>&1 || status=1
else
  note "ncu counted vs measured" SKIP "skipped: tools/ncu_check.py not in this checkout"
fi

# 5. cuda-gdb on a broken kernel, and the core-dump route (tools/cuda_gdb_check.sh).
if [ -x chapters/09_profiling/tools/cuda_gdb_check.sh ]; then
  chapters/09_profiling/tools/cuda_gdb_check.sh "$BUILD" "$OUT" >> "$SUMMARY" 2>&1 || status=1
else
  note "cuda-gdb" SKIP "skipped: tools/cuda_gdb_check.sh not in this checkout"
fi

note "  (total time)" INFO "$((SECONDS - t0)) s"
echo
echo "== chapter 9 GPU check: summary ($OUT/summary.txt) =="
cat "$SUMMARY"
exit $status
