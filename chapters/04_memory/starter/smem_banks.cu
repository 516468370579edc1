// Starter track — write your code at the TODO marks; the tests of each exercise
// fail until you do. (Generated from chapters/04_memory/reference/smem_banks.cu by scripts/variants.py.)
// Bank conflicts made visible: a kernel that does nothing but read shared memory (worked example).
//
// Launch shape: `blocks` blocks of kSmemThreads = 256 threads (8 warps). Each block fills
// buf[32][kMaxSmemStride] with buf[k] = k, then lane l of warp w reads, at iteration t,
// buf[l * stride + (t + w) % 32]: a warp reads one column of a [32][stride] array.
//   stride 32: words 32 l + c all sit in bank c -> 32-way conflict, 32 passes per load;
//   stride 33: bank (l + c) % 32, all different -> 1 pass;
//   stride 2 or 16: 2-way or 16-way (bank_conflict_ways in bank_model.cpp predicts each).
// No global traffic besides one float per thread at the end: the time is the time of the loads,
// so time(stride 32) / time(stride 33) approaches the conflict degree.
#include "ch04/ch04.hpp"
#include "cudalab/check.hpp"

namespace cudalab::ch04 {
namespace {

constexpr int kBufWords = 32 * kMaxSmemStride;  // (32 lanes, kMaxSmemStride words per row)
static_assert(kSmemThreads % 32 == 0 && kSmemThreads <= 1024);
// The largest word read is 31 * stride + 31 < kBufWords for every stride <= kMaxSmemStride.
static_assert(31 * kMaxSmemStride + 31 < kBufWords);

__global__ void __launch_bounds__(kSmemThreads)
    smem_column_read_kernel(float* __restrict__ out, int stride, int iterations) {
  __shared__ float buf[kBufWords];
  for (int k = threadIdx.x; k < kBufWords; k += kSmemThreads) buf[k] = static_cast<float>(k);
  __syncthreads();  // the reads below touch words other threads stored
  const int lane = threadIdx.x % 32, warp = threadIdx.x / 32;
  const int row = lane * stride;
  float acc = 0.0f;
#pragma unroll 4
  for (int t = 0; t < iterations; ++t) acc += buf[row + ((t + warp) & 31)];
  out[std::size_t{blockIdx.x} * kSmemThreads + threadIdx.x] = acc;
}

}  // namespace

void smem_column_read(float* out, unsigned blocks, int stride, int iterations,
                      cudaStream_t stream) {
  require(stride >= 1 && stride <= kMaxSmemStride, "stride", "must be in 1..kMaxSmemStride (33)");
  require(iterations >= 0 && iterations <= kMaxSmemIterations, "iterations",
          "must be in 0..kMaxSmemIterations (8192): larger sums are no longer exact floats");
  require(blocks <= 0x7FFFFFFFu, "blocks", "at most 2^31 - 1");
  require_device_pointer(out, std::size_t{blocks} * kSmemThreads, "out");
  if (blocks == 0) return;
  smem_column_read_kernel<<<blocks, kSmemThreads, 0, stream>>>(out, stride, iterations);
  CUDALAB_CHECK_LAUNCH();
}

float smem_column_read_oracle(std::size_t thread, int stride, int iterations) {
  const std::size_t local = thread % kSmemThreads;
  const int lane = static_cast<int>(local % 32), warp = static_cast<int>(local / 32);
  double acc = 0;  // integers below 2^24: exact in float and in double, in any order
  for (int t = 0; t < iterations; ++t) acc += lane * stride + ((t + warp) & 31);
  return static_cast<float>(acc);
}

}  // namespace cudalab::ch04
