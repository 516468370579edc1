// Starter track — write your code at the TODO marks; the tests of each exercise
// fail until you do. (Generated from chapters/12_production/reference/busy.cu by scripts/variants.py.)
// The busy kernel (ch12.hpp): `blocks` x `threads` threads run dependent FMAs until the GPU's
// global timer (nanoseconds, the same on every SM, independent of the SM clock) passes a deadline.
//
// Launch shape: 1D, any block count and size up to 1024. One block keeps one SM busy: NVML counts
// the GPU as 100 % utilized all the same ("a kernel was running during the sample period"), the
// trap the utilization demo shows. Blocks = 4 x SMs, 256 threads: the whole GPU at full power, the
// throttle watch's load. Chapter 7's spin() occupies SMs with an empty loop and draws little
// power; a throttle watch needs the FMA pipe busy (power and heat), hence a kernel of its own.
#include <cuda_runtime_api.h>

#include <cstdint>

#include "ch12/ch12.hpp"
#include "cudalab/check.hpp"

namespace cudalab::ch12 {
namespace {

__device__ __forceinline__ std::uint64_t global_ns() {
  std::uint64_t t;
  asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
  return t;
}

__global__ void busy_kernel(std::uint64_t duration_ns, float* sink) {
  // Every block reads its own start: blocks that start late (more blocks than fit) still spin for
  // the duration, so a kernel over-subscribing the GPU lasts a multiple of it.
  const std::uint64_t end = global_ns() + duration_ns;
  float a = threadIdx.x * 1e-3f, b = 1.0001f, c = 1e-7f;
  while (global_ns() < end) {
#pragma unroll 16
    for (int i = 0; i < 256; ++i) a = fmaf(a, b, c);  // a dependent chain: the FMA pipe, no memory
  }
  if (a == 12345.0f) sink[blockIdx.x] = a;  // keeps the chain alive; practically never written
}

}  // namespace

void busy(unsigned blocks, unsigned threads, double milliseconds, float* sink,
          cudaStream_t stream) {
  require(blocks > 0, "blocks", "must be positive");
  require(threads > 0 && threads <= 1024, "threads", "must be in [1, 1024]");
  require(milliseconds >= 0 && milliseconds < 3.6e6, "milliseconds", "must be in [0, 1 hour)");
  require_device_pointer(sink, blocks, "sink");
  busy_kernel<<<blocks, threads, 0, stream>>>(static_cast<std::uint64_t>(milliseconds * 1e6), sink);
  CUDALAB_CHECK_LAUNCH();
}

}  // namespace cudalab::ch12
