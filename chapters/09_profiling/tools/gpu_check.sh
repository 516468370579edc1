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

if [ ! -d "$BUILD" ]; then
  echo "gpu_check: no build directory $BUILD (cmake --preset gpu && cmake --build --preset gpu)" >&2
  exit 2
fi

# 1. The chapter's GPU tests (reference track) and the sanitizer bug hunt.
# (-LE: the sanitizer and hunt tests run below / are the learner's: 50 sanitizer runs)
t0=$SECONDS
if ctest --test-dir "$BUILD" -L ch09 -L reference -LE 'sanitizer|hunt' --output-on-failure > "$OUT/ctest_ch09.log" 2>&1; then
  note "ctest -L ch09 -L reference" PASS "$(grep -E 'tests passed|tests failed' "$OUT/ctest_ch09.log" | tail -1)"
else
  note "ctest -L ch09 -L reference" FAIL "$(grep -E 'tests passed|tests failed' "$OUT/ctest_ch09.log" | tail -1) (see ctest_ch09.log)"
fi
if ctest --test-dir "$BUILD" -N -L sanitizer | grep -q 'Total Tests: [1-9]'; then
  if ctest --test-dir "$BUILD" -L sanitizer -j4 --output-on-failure > "$OUT/ctest_sanitizer.log" 2>&1; then
    note "ctest -L sanitizer" PASS "$(grep -E 'tests passed|tests failed' "$OUT/ctest_sanitizer.log" | tail -1)"
  else
    note "ctest -L sanitizer" FAIL "$(grep -E 'tests passed|tests failed' "$OUT/ctest_sanitizer.log" | tail -1) (see ctest_sanitizer.log)"
  fi
else
  note "ctest -L sanitizer" SKIP "skipped: no sanitizer tests registered (compute-sanitizer not found at configure time?)"
fi

# 2. The benchmark of exercise 9.1, reference and starter (the profile exercise), one repetition.
for exe in bench_ch09 bench_ch09_starter; do
  if "$BUILD/bench/$exe" --benchmark_out="$OUT/$exe.json" --benchmark_out_format=json > "$OUT/$exe.log" 2>&1; then
    note "$exe" PASS "$(grep -E '^BM_scale_rows' "$OUT/$exe.log" | awk '{print $NF, $(NF-1)}' | head -1)"
  else
    note "$exe" FAIL "see $exe.log"
  fi
done

note "  (time so far)" INFO "$((SECONDS - t0)) s"

# 3. ncu: counted against measured, and the fingerprints (tools/ncu_check.py).
if [ -x chapters/09_profiling/tools/ncu_check.py ]; then
  python3 chapters/09_profiling/tools/ncu_check.py --build "$BUILD" --out "$OUT" >> "$SUMMARY" 2>&1 || status=1
else
  note "ncu counted vs measured" SKIP "skipped: tools/ncu_check.py not in this checkout"
fi

# 4. cuda-gdb on a broken kernel, and the core-dump route (tools/cuda_gdb_check.sh).
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
