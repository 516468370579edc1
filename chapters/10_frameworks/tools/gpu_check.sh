#!/usr/bin/env bash
# Chapter 10's GPU evidence in one run (H200, PyTorch in python3, nothing downloaded):
#   chapters/10_frameworks/tools/gpu_check.sh OUT
# after `cmake --preset gpu && cmake --build --preset gpu` (build/gpu). It runs the C++ GPU tests
# of chapter 10 (reference, and the pitfalls, each of which must fail a test), bench_ch10 and ncu
# on its fused forward, builds the PyTorch operator with the machine's torch
# (torch.utils.cpp_extension, into build/torch_ch10), runs the torch tests (opcheck, gradcheck, values, compile: graph breaks and
# recompiles; the planted bug; the silent losses), the speed comparison (bench_op.py), the
# silent-loss measurements (silent_losses.py) and prints a summary. Logs and JSON under OUT.
set -uo pipefail
cd "$(dirname "$0")/../../.."
if [ $# -ne 1 ]; then
  echo "usage: $0 OUT   (a folder for the logs and JSON; created)" >&2
  exit 2
fi
out=$1
mkdir -p "$out" || { echo "gpu_check: cannot create $out" >&2; exit 2; }
build=${BUILD_DIR:-build/gpu}
declare -A status

# CH10_SKIP="NAME ...": steps not run this time (a rerun after a change that cannot affect them);
# the summary says "skipped (CH10_SKIP)", never pass.
step() {  # step NAME LOG command...: runs it, records pass/FAIL, keeps the log
  local name=$1 log=$2
  shift 2
  if [[ " ${CH10_SKIP:-} " == *" $name "* ]]; then
    status[$name]="skipped (CH10_SKIP)"
    echo "gpu_check: $name: ${status[$name]}"
    return 0
  fi
  local t0=$SECONDS
  if "$@" >"$out/$log" 2>&1; then status[$name]="pass ($((SECONDS - t0)) s)"
  else status[$name]="FAIL rc=$? ($((SECONDS - t0)) s, $log)"; fi
  echo "gpu_check: $name: ${status[$name]}"
}

if [ ! -d "$build" ]; then
  echo "gpu_check: $build is missing: run cmake --preset gpu && cmake --build --preset gpu" >&2
  exit 2
fi
step build build.log cmake --build "$build" --target reference_ch10_test_bias_gelu \
  reference_ch10_test_autograd reference_ch10_test_mixed_precision \
  pitfall_half_accumulator_ch10_test_bias_gelu pitfall_grad_overwrite_ch10_test_autograd \
  pitfall_scaler_grows_on_inf_ch10_test_mixed_precision bench_ch10 -j 16
step ctest_reference ctest_reference.log ctest --test-dir "$build" -L ch10 -L reference \
  --output-on-failure -j 4

# Each pitfall must fail at least one of its tests (a pitfall nothing catches is a failure here).
pitfalls_log="$out/ctest_pitfalls.log"
: >"$pitfalls_log"
pit_ok=0
pit_n=0
for p in half_accumulator grad_overwrite scaler_grows_on_inf; do
  pit_n=$((pit_n + 1))
  if ctest --test-dir "$build" -L "pitfall:ch10.$p" >>"$pitfalls_log" 2>&1; then
    echo "pitfall $p: NOT caught (every test passed)" | tee -a "$pitfalls_log"
  else
    pit_ok=$((pit_ok + 1))
    echo "pitfall $p: caught" >>"$pitfalls_log"
  fi
done
status[pitfalls]="$pit_ok/$pit_n caught"
[ "$pit_ok" -eq "$pit_n" ] || status[pitfalls]="FAIL ${status[pitfalls]}"
echo "gpu_check: pitfalls: ${status[pitfalls]}"

step bench bench_ch10.log "$build/bench/bench_ch10" --benchmark_out="$out/bench_ch10.json" \
  --benchmark_out_format=json

# Nsight Compute on the fused forward, bf16 and fp32 (one launch each, the row's first): what
# bounds the bf16 kernel, which takes 1.7-1.8x a copy of its bytes where fp32 runs at copy speed
# (speed of light, memory and compute workload, occupancy, launch shape, warp stalls).
# --clock-control none: ncu never sets the clocks.
ncu_forward() {
  local t
  for t in bf16 f32; do
    echo "### BM_bias_gelu/fused/$t"
    ncu --clock-control none --kernel-name regex:rowwise_kernel --launch-count 1 \
      --section SpeedOfLight --section MemoryWorkloadAnalysis --section ComputeWorkloadAnalysis \
      --section Occupancy --section LaunchStats --section WarpStateStats \
      "$build/bench/bench_ch10" --benchmark_filter="^BM_bias_gelu/fused/$t" || return 1
  done
}
if command -v ncu >/dev/null; then
  step ncu_forward ncu_forward.log ncu_forward
else
  status[ncu_forward]="skipped (ncu is not installed)"
fi

export TORCH_CUDA_ARCH_LIST=${TORCH_CUDA_ARCH_LIST:-9.0}
export MAX_JOBS=${MAX_JOBS:-16}
step torch_build torch_build.log python3 chapters/10_frameworks/torch/ops.py
# One process per test class, with faulthandler; a class whose process crashes is run again one
# process per method, so that the crash names its test and the class's other tests still run (a
# segfault in one Op test once took opcheck, gradcheck, compile and values down with it). A method
# that crashes is run once more under gdb (or cuda-gdb, which the GPU image has instead), so that
# the log holds the native backtrace (OUT/torch_crash_<test>.gdb.log).
torch_list() {  # torch_list [CLASS]: the test classes, or the methods of CLASS
  (cd chapters/10_frameworks/torch && python3 - "$@" <<'PY'
import sys, unittest
import test_op, test_silent_losses
loader = unittest.TestLoader()
for mod, classes in ((test_op, ("MiniAutogradBesideTorch", "Op", "PlantedBug", "ErrorPaths")),
                     (test_silent_losses, ("GraphBreaks", "Recompiles", "NonContiguousIntoTheOp",
                                           "MixedPrecisionInTorch", "CudaTraps"))):
    for c in classes:
        name = f"{mod.__name__}.{c}"
        if len(sys.argv) == 1:
            print(name)
        elif sys.argv[1] == name:
            for m in loader.getTestCaseNames(getattr(mod, c)):
                print(f"{name}.{m}")
PY
  )
}
torch_run() {  # torch_run TEST: one unittest process; echoes its status line, returns its rc
  echo "### $1"
  (cd chapters/10_frameworks/torch && python3 -X faulthandler -m unittest -v "$1") 2>&1
  local r=$?
  echo "### $1: rc=$r"
  return $r
}
torch_tests() {
  local rc=0 c t r dbg classes methods
  dbg=$(command -v gdb || command -v cuda-gdb || true)  # the GPU image has cuda-gdb, not gdb
  classes=$(torch_list) || { echo "torch_tests: could not list the tests"; return 1; }
  for c in $classes; do
    torch_run "$c" && continue
    r=$?
    rc=1
    [ "$r" -ge 128 ] || continue
    echo "### $c crashed: its methods one process each"
    methods=$(torch_list "$c") || return 1
    for t in $methods; do
      torch_run "$t" && continue
      r=$?
      if [ "$r" -ge 128 ] && [ -n "$dbg" ]; then
        (cd chapters/10_frameworks/torch && timeout 300 "$dbg" -q -batch -ex run -ex bt -ex "info sharedlibrary" \
          --args python3 -m unittest -v "$t") >"$out/torch_crash_${t##*.}.gdb.log" 2>&1
        echo "### $t: native backtrace in torch_crash_${t##*.}.gdb.log"
      fi
    done
  done
  return $rc
}
step torch_tests torch_tests.log torch_tests
step bench_op bench_op.log python3 chapters/10_frameworks/torch/bench_op.py --json "$out/bench_op.json"
step xla_fusion xla_fusion.log python3 chapters/10_frameworks/torch/xla_fusion.py
step silent_losses silent_losses.log python3 chapters/10_frameworks/torch/silent_losses.py \
  --json "$out/silent_losses.json"

echo
echo "## chapter 10 GPU check ($(nvidia-smi --query-gpu=name --format=csv,noheader 2>/dev/null | head -1), torch $(python3 -c 'import torch; print(torch.__version__)' 2>/dev/null))"
echo
echo "| step | result |"
echo "| --- | --- |"
for k in build ctest_reference pitfalls bench ncu_forward torch_build torch_tests bench_op xla_fusion \
  silent_losses; do
  echo "| $k | ${status[$k]:-not run} |"
done
echo
grep -E "tests passed|tests failed" "$out/ctest_reference.log" | tail -1
grep -E "^### .*: rc=[1-9]" "$out/torch_tests.log" || echo "every torch test process exited 0"
grep -E "^(Ran|OK|FAILED)" "$out/torch_tests.log" | paste -sd' ' | sed 's/^/torch tests: /'
grep -cE "skipped" "$out/torch_tests.log" | sed 's/^/torch tests mentioning "skipped": /'
echo
[ -f "$out/ncu_forward.log" ] && grep -E "^### |Duration|DRAM Throughput|Compute \(SM\) Throughput|Registers Per Thread|Achieved Occupancy|Theoretical Occupancy|Waves Per SM|Issue Slots Busy|Warp Cycles Per Issued Instruction" "$out/ncu_forward.log"
echo
[ -f "$out/bench_op.log" ] && sed -n '/^## bias/,$p' "$out/bench_op.log"
echo
[ -f "$out/silent_losses.log" ] && sed -n '/^## silent/,$p' "$out/silent_losses.log"
echo
[ -f "$out/xla_fusion.log" ] && grep -E "^(XLA|Inductor)|^  [a-z_]+: " "$out/xla_fusion.log"
fail=0
for k in "${!status[@]}"; do case "${status[$k]}" in FAIL*) fail=1 ;; esac; done
exit $fail
