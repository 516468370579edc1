// Starter track — write your code at the TODO marks; the tests of each exercise
// fail until you do. (Generated from chapters/03_first_kernels/reference/errors.cu by scripts/variants.py.)
// Exercise 3.6 — errors you only see if you ask.
//
// Two kinds of failure, reported at two different moments:
//  * launch errors (bad configuration, no kernel image for this GPU, too many resources): the
//    launch returns nothing, the error waits in a per-thread slot that cudaGetLastError() reads
//    and clears. Unchecked, it silently turns into "the output is garbage".
//  * execution faults (illegal address, misaligned access, trap): the launch succeeded; the kernel
//    faults later on the GPU, and the error surfaces at the next synchronizing call — in whatever
//    code happens to call it. These errors are *sticky*: the context is dead, every later CUDA
//    call in the process returns the same error, and only a new process recovers.
// Exercise 3.6: make each of the two surface where it happens (README, section 3).
#include "ch03/ch03.hpp"
#include "cudalab/check.hpp"

namespace cudalab::ch03 {
namespace {

__global__ void fill_kernel(float* __restrict__ out, std::size_t n, float value) {
  const std::size_t i = std::size_t{blockIdx.x} * blockDim.x + threadIdx.x;
  if (i < n) out[i] = value;
}

// Writes through a pointer no allocation covers: the GPU's memory protection raises a fault.
__global__ void faulty_kernel(float* bad) {
  bad[threadIdx.x] = 1.0f;
}

}  // namespace

void fill(float* out, std::size_t n, float value, unsigned threads_per_block, cudaStream_t stream) {
  require_device_pointer(out, n, "out");
  if (n == 0) return;
  // No validation of threads_per_block here on purpose: the driver is the one that refuses it.
  const std::size_t blocks =
      threads_per_block == 0 ? 1 : (n + threads_per_block - 1) / threads_per_block;
  require(blocks <= 0x7FFFFFFFu, "n", "needs more than 2^31 - 1 blocks");
  fill_kernel<<<static_cast<unsigned>(blocks), threads_per_block, 0, stream>>>(out, n, value);
  // TODO(3.6): fill() must not return normally after a launch the driver refused.
  //   Contract: with threads_per_block = 0 or 2048 (or any other bad configuration), fill() throws
  //     cudalab::CudaError carrying the driver's error; with a good one it returns without waiting
  //     for the kernel (asynchronous, as before).
  //   Constraints: use the repository's error macros (cudalab/check.hpp); no synchronization here.
  //   Goal: correctness only (`scripts/lab check 3.6`).
}

void launch_faulty_kernel(cudaStream_t stream) {
  // 0x10 is never a valid device address (page zero is unmapped on every GPU).
  faulty_kernel<<<1, 32, 0, stream>>>(reinterpret_cast<float*>(0x10));
  CUDALAB_CHECK_LAUNCH();  // passes: the launch itself was fine
  // TODO(3.6): launch_faulty_kernel() must report the fault its kernel causes.
  //   Contract: it throws cudalab::CudaError (cudaErrorIllegalAddress) before it returns, instead
  //     of leaving a sticky error for whatever CUDA call comes next.
  //   Constraints: use the repository's error macros; wait for `stream` only, not the whole device.
  //   Goal: correctness only (`scripts/lab check 3.6`).
}

}  // namespace cudalab::ch03
