// Starter track — write your code at the TODO marks; the tests of each exercise
// fail until you do. (Generated from chapters/11_llm_serving/reference/gemv_int8.cu by scripts/variants.py.)
// Exercise 11.4 — INT8 weight-only GEMV, and the fp16 GEMV it is compared with.
//
// Decode multiplies every weight matrix by one activation vector per sequence: at batch 1 a GEMV,
// 2 FLOPs per weight. Reading the weights is the whole cost, so storing them in 8 bits instead of
// 16 halves the time, if the kernel dequantizes in registers (never writes fp16 weights back).
// Per-channel scales factor out of the row's sum: y[r] = scale[r] * sum_c q[r][c] x[c].
//
// Decomposition: one warp per row, 8 rows per block; each lane reads 16 weights (16 bytes) per
// step, the warp a contiguous 512 bytes; a shuffle reduction ends the row.
#include <cuda_fp16.h>

#include <cstdint>

#include "ch11/ch11.hpp"
#include "cudalab/check.hpp"
#include "cudalab/math.hpp"
#include "vec8.cuh"

namespace cudalab::ch11 {
namespace {

constexpr int kRowsPerBlock = 8;
constexpr int kThreads = 32 * kRowsPerBlock;

__device__ __forceinline__ float warp_sum(float v) {
#pragma unroll
  for (int off = 16; off > 0; off /= 2) v += __shfl_xor_sync(0xffffffffu, v, off);
  return v;
}

// 8 halves of x starting at x + c (16-byte aligned) as floats.
__device__ __forceinline__ void load_x8(const __half* x, int c, float* f) {
  float v[8];
  detail::unpack8<__half>(__ldg(reinterpret_cast<const uint4*>(x + c)), v);
#pragma unroll
  for (int i = 0; i < 8; ++i) f[i] = v[i];
}

// kVec: cols % 16 == 0 (every row 16-byte aligned); else element by element.
template <bool kVec>
__global__ void __launch_bounds__(kThreads)
    gemv_int8_kernel(const std::int8_t* __restrict__ q, const float* __restrict__ scale,
                     const __half* __restrict__ x, __half* __restrict__ y, int rows, int cols) {
  const int lane = threadIdx.x % 32;
  const int r = blockIdx.x * kRowsPerBlock + threadIdx.x / 32;
  if (r >= rows) return;  // whole warps leave together: the shuffles below stay converged
  const std::int8_t* row = q + static_cast<std::size_t>(r) * cols;
  float sum = 0;
  // TODO(11.4): sum = sum over c of float(row[c]) * float(x[c]) for this warp's row, then y[r] =
  //   scale[r] * (the warp's total), rounded to fp16.
  //   Constraints: read each weight once, as int8, 16 bytes per lane per load when kVec (the
  //   warp reading 512 contiguous bytes); dequantize in registers (no fp16 copy of the weights);
  //   fp32 accumulation; any cols (kVec false: element by element).
  //   Goal: >= 1.3x the fp16 GEMV's speed at 14336 x 4096 (bench/ch11/ch11.toml). Hints:
  //   scripts/lab hint 11.4
  (void)row, (void)x, (void)lane;
  if (lane == 0) y[r] = __float2half_rn(sum * scale[r]);
}

template <bool kVec>
__global__ void __launch_bounds__(kThreads)
    gemv_fp16_kernel(const __half* __restrict__ w, const __half* __restrict__ x,
                     __half* __restrict__ y, int rows, int cols) {
  const int lane = threadIdx.x % 32;
  const int r = blockIdx.x * kRowsPerBlock + threadIdx.x / 32;
  if (r >= rows) return;
  const __half* row = w + static_cast<std::size_t>(r) * cols;
  float sum = 0;
  if constexpr (kVec) {
#pragma unroll 4
    for (int c = lane * 8; c < cols; c += 32 * 8) {
      float wf[8], xf[8];
      load_x8(row, c, wf);
      load_x8(x, c, xf);
#pragma unroll
      for (int i = 0; i < 8; ++i) sum = fmaf(wf[i], xf[i], sum);
    }
  } else {
    for (int c = lane; c < cols; c += 32) sum = fmaf(__half2float(row[c]), __half2float(x[c]), sum);
  }
  sum = warp_sum(sum);
  if (lane == 0) y[r] = __float2half_rn(sum);
}

void check_gemv(int rows, int cols) {
  require(rows >= 0, "rows", "must not be negative");
  require(cols >= 0, "cols", "must not be negative");
}

}  // namespace

void gemv_int8_weight_only(const std::int8_t* q, const float* scale, const void* x, void* y,
                           int rows, int cols, cudaStream_t stream) {
  check_gemv(rows, cols);
  if (rows == 0) return;
  require_device_pointer(q, static_cast<std::size_t>(rows) * cols, "q");
  require_device_pointer(scale, static_cast<std::size_t>(rows), "scale");
  require_device_pointer(x, static_cast<std::size_t>(cols), "x");
  require_device_pointer(y, static_cast<std::size_t>(rows), "y");
  const auto* xh = static_cast<const __half*>(x);
  auto* yh = static_cast<__half*>(y);
  const unsigned blocks = static_cast<unsigned>(ceil_div(rows, kRowsPerBlock));
  if (cols % 16 == 0 && is_aligned(q, 16) && is_aligned(x, 16))
    gemv_int8_kernel<true><<<blocks, kThreads, 0, stream>>>(q, scale, xh, yh, rows, cols);
  else
    gemv_int8_kernel<false><<<blocks, kThreads, 0, stream>>>(q, scale, xh, yh, rows, cols);
  CUDALAB_CHECK_LAUNCH();
}

void gemv_fp16(const void* w, const void* x, void* y, int rows, int cols, cudaStream_t stream) {
  check_gemv(rows, cols);
  if (rows == 0) return;
  require_device_pointer(w, static_cast<std::size_t>(rows) * cols, "w");
  require_device_pointer(x, static_cast<std::size_t>(cols), "x");
  require_device_pointer(y, static_cast<std::size_t>(rows), "y");
  const auto* wh = static_cast<const __half*>(w);
  const auto* xh = static_cast<const __half*>(x);
  auto* yh = static_cast<__half*>(y);
  const unsigned blocks = static_cast<unsigned>(ceil_div(rows, kRowsPerBlock));
  if (cols % 8 == 0 && is_aligned(w, 16) && is_aligned(x, 16))
    gemv_fp16_kernel<true><<<blocks, kThreads, 0, stream>>>(wh, xh, yh, rows, cols);
  else
    gemv_fp16_kernel<false><<<blocks, kThreads, 0, stream>>>(wh, xh, yh, rows, cols);
  CUDALAB_CHECK_LAUNCH();
}

}  // namespace cudalab::ch11
