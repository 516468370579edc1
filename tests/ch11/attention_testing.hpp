// Shared by the chapter 11 attention tests (decode and prefill): half and bf16 values as the
// 16-bit patterns the kernels' caches store.
#pragma once

#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include <cstdint>

#include "ch11/ch11.hpp"

namespace ch11_test {

// x rounded to nearest-even in t (kF16 or kBF16), as its bit pattern.
inline std::uint16_t to_bits(float x, cudalab::ch11::DType t) {
  if (t == cudalab::ch11::DType::kF16) return static_cast<__half_raw>(__float2half_rn(x)).x;
  return static_cast<__nv_bfloat16_raw>(__float2bfloat16_rn(x)).x;
}

// The value of bit pattern b of type t (exact in float).
inline float from_bits(std::uint16_t b, cudalab::ch11::DType t) {
  if (t == cudalab::ch11::DType::kF16) {
    __half_raw r;
    r.x = b;
    return __half2float(__half(r));
  }
  __nv_bfloat16_raw r;
  r.x = b;
  return __bfloat162float(__nv_bfloat16(r));
}

}  // namespace ch11_test
