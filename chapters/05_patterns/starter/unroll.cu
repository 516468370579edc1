// Starter track — write your code at the TODO marks; the tests of each exercise
// fail until you do. (Generated from chapters/05_patterns/reference/unroll.cu by scripts/variants.py.)
// Exercise 5.6 — unrolling, __restrict__ and float4 loads, shown by their effect.
//
// SAXPY moves 12 bytes per element (x read, y read, y written) for 2 FLOPs: memory-bound. To run
// at DRAM speed an SM must keep enough bytes in flight to cover the memory latency (Little's law:
// ~4.8 TB/s x ~600 ns = ~2.9 MB over 132 SMs, ~22 KB per SM). What each variant changes:
//   kRolled           one (x, y) pair in flight per thread: 2048 threads x 8 B = 16 KB per SM.
//   kUnrolled         the loop is unrolled, but y is a plain float*: a store to y[i] may change
//                     x[i + 256] (the compiler cannot prove otherwise), so each load must wait
//                     behind the previous store. SASS: LDG, LDG, FFMA, STG, LDG, LDG, ...
//   kUnrolledRestrict the same source with const __restrict__: the compiler may hoist all 16
//                     loads above the stores. SASS: 16 x LDG.E, 8 x FFMA, 8 x STG.E. More
//                     registers (the 16 values are live at once), 8x the bytes in flight.
//   kVectorized       float4: each thread's items are 2 float4 of x and 2 of y: 4 x LDG.E.128
//                     and 2 x STG.E.128 instead of 16 + 8 scalar instructions.
// Look at it: `cmake --build build/gpu --target ch05_sass` (README, "Loop unrolling").
#include <cstdint>

#include "ch05/unroll.hpp"
#include "cudalab/check.hpp"
#include "cudalab/math.hpp"

namespace cudalab::ch05 {
namespace {

// Elements one block owns: kUnrollItems per thread, strided by the block size so that on every
// step the warp touches 32 consecutive floats (one 128-byte line: coalesced).
constexpr std::size_t kPerBlock = std::size_t{kUnrollBlock} * kUnrollItems;

__global__ void __launch_bounds__(kUnrollBlock)
    saxpy_rolled_kernel(float a, const float* x, float* y, std::size_t n) {
  const std::size_t base = blockIdx.x * kPerBlock + threadIdx.x;
#pragma unroll 1  // keep the loop: one load pair in flight per iteration
  for (int k = 0; k < kUnrollItems; ++k) {
    const std::size_t i = base + static_cast<std::size_t>(k) * kUnrollBlock;
    if (i < n) y[i] = a * x[i] + y[i];
  }
}

__global__ void __launch_bounds__(kUnrollBlock)
    saxpy_unrolled_kernel(float a, const float* x, float* y, std::size_t n) {
  const std::size_t base = blockIdx.x * kPerBlock + threadIdx.x;
#pragma unroll  // unrolled, but without __restrict__ the loads cannot move above earlier stores
  for (int k = 0; k < kUnrollItems; ++k) {
    const std::size_t i = base + static_cast<std::size_t>(k) * kUnrollBlock;
    if (i < n) y[i] = a * x[i] + y[i];
  }
}

// Same body as above; only the qualifiers differ. `const float* __restrict__` also lets the
// compiler use the read-only data path (LDG.E.CONSTANT in SASS).
__global__ void __launch_bounds__(kUnrollBlock)
    saxpy_unrolled_restrict_kernel(float a, const float* __restrict__ x, float* __restrict__ y,
                                   std::size_t n) {
  const std::size_t base = blockIdx.x * kPerBlock + threadIdx.x;
#pragma unroll
  for (int k = 0; k < kUnrollItems; ++k) {
    const std::size_t i = base + static_cast<std::size_t>(k) * kUnrollBlock;
    if (i < n) y[i] = a * x[i] + y[i];
  }
}

// float4 version over n4 = n / 4 float4 elements; the host finishes the n % 4 tail.
// A block owns kUnrollBlock x kVec4 float4 = the same kPerBlock floats as the scalar kernels.
constexpr int kVec4 = kUnrollItems / 4;  // float4 per thread
static_assert(kVec4 * 4 == kUnrollItems, "a thread's items are whole float4");

__global__ void __launch_bounds__(kUnrollBlock)
    saxpy_vectorized_kernel(float a, const float4* __restrict__ x, float4* __restrict__ y,
                            std::size_t n4) {
  // TODO(5.6): saxpy_vectorized_kernel, the float4 rung of the unrolling ladder.
  //   Contract: y = a x + y over the n4 float4 elements (the host finishes the n % 4 scalars); each
  //     block owns the same kUnrollBlock * kUnrollItems floats as the scalar kernels, i.e. kVec4
  //     float4 per thread, and must touch nothing past n4. x and y are 16-byte aligned.
  //   Constraints: 16-byte loads and stores only (LDG.E.128 / STG.E.128 in the SASS); every load of
  //     the thread issued before its first store; coalesced (a warp reads 512 contiguous bytes per
  //     instruction); no local memory (the test reads localSizeBytes).
  //   Goal: BM_unroll/vectorized_float4 >= 0.9x BM_unroll_memcpy; then read the
  //     SASS (`cmake --build build/gpu --target ch05_sass`); `scripts/lab check 5.6`.
  (void)a; (void)x; (void)y; (void)n4;
}

unsigned blocks_for(std::size_t n) {
  const std::size_t b = ceil_div(n, kPerBlock);
  require(b <= 0x7FFFFFFFu, "n", "needs more than 2^31 - 1 blocks");
  return static_cast<unsigned>(b);
}

}  // namespace

const char* to_string(UnrollVariant v) {
  switch (v) {
    case UnrollVariant::kRolled:
      return "rolled";
    case UnrollVariant::kUnrolled:
      return "unrolled";
    case UnrollVariant::kUnrolledRestrict:
      return "unrolled_restrict";
    case UnrollVariant::kVectorized:
      return "vectorized_float4";
  }
  return "?";
}

void saxpy_unrolled(float a, const float* x, float* y, std::size_t n, UnrollVariant variant,
                    cudaStream_t stream) {
  require(variant == UnrollVariant::kRolled || variant == UnrollVariant::kUnrolled ||
              variant == UnrollVariant::kUnrolledRestrict || variant == UnrollVariant::kVectorized,
          "variant", "unknown UnrollVariant");
  require_device_pointer(x, n, "x");
  require_device_pointer(y, n, "y");
  if (n == 0) return;
  if (variant == UnrollVariant::kVectorized && is_aligned(x, 16) && is_aligned(y, 16)) {
    const std::size_t n4 = n / 4, done = n4 * 4;
    if (n4 > 0) {
      saxpy_vectorized_kernel<<<blocks_for(done), kUnrollBlock, 0, stream>>>(
          a, reinterpret_cast<const float4*>(x), reinterpret_cast<float4*>(y), n4);
      CUDALAB_CHECK_LAUNCH();
    }
    if (done < n) {  // the last n % 4 (< 4) floats: one small block of the scalar kernel
      saxpy_unrolled_restrict_kernel<<<1, kUnrollBlock, 0, stream>>>(a, x + done, y + done,
                                                                     n - done);
      CUDALAB_CHECK_LAUNCH();
    }
    return;
  }
  switch (variant) {
    case UnrollVariant::kRolled:
      saxpy_rolled_kernel<<<blocks_for(n), kUnrollBlock, 0, stream>>>(a, x, y, n);
      break;
    case UnrollVariant::kUnrolled:
      saxpy_unrolled_kernel<<<blocks_for(n), kUnrollBlock, 0, stream>>>(a, x, y, n);
      break;
    default:  // kUnrolledRestrict, and kVectorized on misaligned pointers
      saxpy_unrolled_restrict_kernel<<<blocks_for(n), kUnrollBlock, 0, stream>>>(a, x, y, n);
      break;
  }
  CUDALAB_CHECK_LAUNCH();
}

KernelResources saxpy_unrolled_resources(UnrollVariant variant) {
  const void* fn = nullptr;
  switch (variant) {
    case UnrollVariant::kRolled:
      fn = reinterpret_cast<const void*>(&saxpy_rolled_kernel);
      break;
    case UnrollVariant::kUnrolled:
      fn = reinterpret_cast<const void*>(&saxpy_unrolled_kernel);
      break;
    case UnrollVariant::kUnrolledRestrict:
      fn = reinterpret_cast<const void*>(&saxpy_unrolled_restrict_kernel);
      break;
    case UnrollVariant::kVectorized:
      fn = reinterpret_cast<const void*>(&saxpy_vectorized_kernel);
      break;
  }
  require(fn != nullptr, "variant", "unknown UnrollVariant");
  cudaFuncAttributes attr{};
  CUDALAB_CHECK(cudaFuncGetAttributes(&attr, fn));
  return {attr.numRegs, attr.localSizeBytes, attr.sharedSizeBytes, attr.maxThreadsPerBlock};
}

}  // namespace cudalab::ch05
