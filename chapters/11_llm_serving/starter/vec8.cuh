// Starter track — write your code at the TODO marks; the tests of each exercise
// fail until you do. (Generated from chapters/11_llm_serving/reference/vec8.cuh by scripts/variants.py.)
// fp16 / bf16 to and from float for the chapter's kernels: eight values in one 16-byte word (the
// unit they load: one uint4 per lane, the widest load a thread issues), one value, and the rounding
// of their fp32 results; and the 2^x their online softmaxes take.
#pragma once

#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include <type_traits>

namespace cudalab::ch11::detail {

// The 8 values of `raw` (T = __half or __nv_bfloat16) as floats.
template <class T>
__device__ __forceinline__ void unpack8(const uint4& raw, float (&f)[8]) {
  using Pair = std::conditional_t<std::is_same_v<T, __half>, __half2, __nv_bfloat162>;
  const auto* h = reinterpret_cast<const Pair*>(&raw);
#pragma unroll
  for (int i = 0; i < 4; ++i) {
    float2 p;
    if constexpr (std::is_same_v<T, __half>)
      p = __half22float2(h[i]);
    else
      p = __bfloat1622float2(h[i]);
    f[2 * i] = p.x;
    f[2 * i + 1] = p.y;
  }
}

// One T as a float.
template <class T>
__device__ __forceinline__ float to_float(T x) {
  if constexpr (std::is_same_v<T, __half>)
    return __half2float(x);
  else
    return __bfloat162float(x);
}

// x rounded to T (to nearest even).
template <class T>
__device__ __forceinline__ T from_float(float x) {
  if constexpr (std::is_same_v<T, __half>)
    return __float2half_rn(x);
  else
    return __float2bfloat16_rn(x);
}

// 2^x in one MUFU.EX2 instruction: exp2f() adds a range fixup (a compare and two multiplies) to
// keep results below 2^-126 exact; softmax weights that small are 0 to fp32 sums anyway.
// exp2_ftz(-inf) = 0.
__device__ __forceinline__ float exp2_ftz(float x) {
  float y;
  asm("ex2.approx.ftz.f32 %0, %1;" : "=f"(y) : "f"(x));
  return y;
}

}  // namespace cudalab::ch11::detail
