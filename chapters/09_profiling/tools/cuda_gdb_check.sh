#!/usr/bin/env bash
# cuda-gdb on the bug hunt's graph case (a kernel node captured with a null output pointer):
#   1. a batch session that runs the -G build to the fault and prints the kernel, the block, the
#      thread, the source line and the bad address;
#   2. the core-dump route: the driver writes a GPU core dump on the exception
#      (CUDA_ENABLE_COREDUMP_ON_EXCEPTION=1) and cuda-gdb reads it back (target cudacore).
# Usage: chapters/09_profiling/tools/cuda_gdb_check.sh BUILD OUT   (called by gpu_check.sh)
# Prints one summary line per step: PASS, FAIL, or SKIP with the reason (no cuda-gdb, or a
# debugger that cannot attach here); a skip is never a pass.
set -u
BUILD=${1:?usage: cuda_gdb_check.sh BUILD OUT}
OUT=${2:?usage: cuda_gdb_check.sh BUILD OUT}
EXE="$BUILD/chapters/09_profiling/ch09_hunt_debug"
line() { printf '%-34s %-8s %s\n' "$1" "$2" "$3"; }
status=0

if ! command -v cuda-gdb > /dev/null; then
  line "cuda-gdb session" SKIP "skipped: cuda-gdb not found"
  line "cuda-gdb core dump" SKIP "skipped: cuda-gdb not found"
  exit 0
fi
if [ ! -x "$EXE" ]; then
  line "cuda-gdb session" FAIL "$EXE not built"
  exit 1
fi

# An environment that refuses the debugger (no ptrace in the container, another debugger
# attached, the driver's debugger interface off) says so in one of these phrases.
cannot_attach='ptrace|Operation not permitted|debugger interface|could not attach|cuda-gdb could not|Failed to initialize|not supported on this'

# 1. The live session.
cuda-gdb -batch -q \
  -ex 'set pagination off' \
  -ex 'run' \
  -ex 'info cuda kernels' \
  -ex 'cuda kernel block thread' \
  -ex 'bt' \
  -ex 'info line *$pc' \
  -ex 'print y' \
  -ex 'print &y[i]' \
  -ex 'kill' \
  "$EXE" > "$OUT/cuda_gdb_session.log" 2>&1
log="$OUT/cuda_gdb_session.log"
# cuda-gdb qualifies device pointers with their address space: "(@generic float * @parameter) 0x0"
# for the kernel argument, "(@generic float *) 0x2200" for the element's address.
ptr_re='\((@[a-z]+ )?float \*( @[a-z]+)?\) 0x'
if grep -q 'CUDA_EXCEPTION' "$log" && grep -q 'affine_kernel' "$log" &&
   grep -Eq 'hunt_10_graph_replay\.cu:[0-9]+' "$log" && grep -Eq 'block \(' "$log" &&
   grep -Eq 'thread \(' "$log" && grep -Eq "$ptr_re" "$log"; then
  where=$(grep -Eo 'hunt_10_graph_replay\.cu:[0-9]+' "$log" | head -1)
  exc=$(grep -Eo 'CUDA_EXCEPTION_[0-9]+, [A-Za-z ]+' "$log" | head -1)
  addr=$(grep -E "^\\\$[0-9]+ = $ptr_re" "$log" | tail -1 | sed 's/^\$[0-9]* = //')
  blk=$(grep -Eo 'block \([0-9,]+\), thread \([0-9,]+\)' "$log" | head -1)
  line "cuda-gdb session" PASS "$exc at $where, $blk, address $addr (cuda_gdb_session.log)"
elif grep -Eqi "$cannot_attach" "$log"; then
  line "cuda-gdb session" SKIP "skipped: the debugger cannot attach here: $(grep -Ei "$cannot_attach" "$log" | head -1)"
else
  line "cuda-gdb session" FAIL "no stop at the fault with kernel, line, block, thread and address (cuda_gdb_session.log)"
  status=1
fi

# 2. The core dump: only the device state that names the fault (no memory images: small file).
core_dir="$OUT/coredump"
mkdir -p "$core_dir"
CUDA_ENABLE_COREDUMP_ON_EXCEPTION=1 \
CUDA_COREDUMP_FILE="$core_dir/core_%p.nvcudmp" \
CUDA_COREDUMP_GENERATION_FLAGS='skip_nonrelocated_elf_images,skip_global_memory,skip_shared_memory,skip_local_memory,skip_constbank_memory' \
  "$EXE" > "$OUT/coredump_run.log" 2>&1
core=$(ls "$core_dir"/core_*.nvcudmp 2>/dev/null | head -1)
if [ -z "$core" ]; then
  line "cuda-gdb core dump" FAIL "no core file written (coredump_run.log: $(tail -1 "$OUT/coredump_run.log"))"
  status=1
else
  cuda-gdb -batch -q -ex "target cudacore $core" -ex 'info cuda kernels' -ex 'bt' -ex 'info symbol $errorpc' \
    "$EXE" > "$OUT/cuda_gdb_core.log" 2>&1
  if grep -q 'affine_kernel' "$OUT/cuda_gdb_core.log" && grep -Eqi 'illegal address|CUDA_EXCEPTION' "$OUT/cuda_gdb_core.log"; then
    line "cuda-gdb core dump" PASS "$(basename "$core") ($(du -k "$core" | cut -f1) KiB) read back: $(grep -Eio 'CUDA_EXCEPTION_[0-9]+[^.]*|Warp Illegal Address' "$OUT/cuda_gdb_core.log" | head -1) in affine_kernel (cuda_gdb_core.log)"
  elif grep -Eqi "$cannot_attach" "$OUT/cuda_gdb_core.log"; then
    line "cuda-gdb core dump" SKIP "skipped: $(grep -Ei "$cannot_attach" "$OUT/cuda_gdb_core.log" | head -1)"
  else
    line "cuda-gdb core dump" FAIL "the core file does not name affine_kernel and the exception (cuda_gdb_core.log)"
    status=1
  fi
  rm -f "$core_dir"/core_*.nvcudmp  # logs are the evidence; the dump is regenerated on demand
fi
exit $status
