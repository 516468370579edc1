// Shared by the chapter 11 attention tests (decode and prefill): half and bf16 values as the
// 16-bit patterns the kernels' caches store, and the prefill cases with their oracle check (the
// prefill kernels and cuDNN's fused attention share one layout and one contract).
#pragma once

#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime_api.h>
#include <gtest/gtest.h>

#include <cmath>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "ch11/attention_oracle.hpp"
#include "ch11/ch11.hpp"
#include "cudalab/check.hpp"
#include "cudalab/compare.hpp"
#include "cudalab/memory.hpp"
#include "cudalab/random.hpp"
#include "cudalab/testing.hpp"

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

// A causal prefill problem: `batch` sequences of `len` tokens, q_heads query heads sharing
// kv_heads key/value heads, in the prefill layout (ch11.hpp).
struct PrefillCase {
  std::string name;
  cudalab::ch11::DType dtype;
  int head_dim, q_heads, kv_heads, batch, len;
};
inline std::string prefill_case_name(const ::testing::TestParamInfo<PrefillCase>& p) {
  return p.param.name;
}
inline cudalab::ch11::DecodeShape prefill_shape(const PrefillCase& c) {
  return {c.batch, c.q_heads, c.kv_heads, c.head_dim,
          1.0f / std::sqrt(static_cast<float>(c.head_dim))};
}

// The prefill contract as a call: q, k, v, out (16-bit patterns on the device), shape, len, type,
// stream.
using PrefillCall =
    std::function<void(const void*, const void*, const void*, void*,
                       const cudalab::ch11::DecodeShape&, int, cudalab::ch11::DType, cudaStream_t)>;

// Random inputs rounded to the case's type, the call's output against the double oracle (guarded:
// nothing written past it); the tolerance, fp16 1e-3 and bf16 4e-3 (the output rounding), is
// scaled by `slack`.
inline void expect_prefill_matches_oracle(const PrefillCall& prefill, const std::string& what,
                                          const PrefillCase& c, double slack) {
  using cudalab::ch11::DType;
  cudalab::Rng rng;
  const std::size_t D = static_cast<std::size_t>(c.head_dim), L = static_cast<std::size_t>(c.len);
  const std::size_t nq = L * c.q_heads * D, nkv = L * c.kv_heads * D;
  auto rounded = [&](std::size_t n) {
    auto x = rng.uniform<float>(n, -1.0f, 1.0f);
    for (float& e : x) e = from_bits(to_bits(e, c.dtype), c.dtype);
    return x;
  };
  std::vector<float> q, k, v, want;
  const cudalab::ch11::DecodeShape shape = prefill_shape(c);
  for (int b = 0; b < c.batch; ++b) {
    const auto qb = rounded(nq), kb = rounded(nkv), vb = rounded(nkv);
    const auto o = cudalab::ch11::prefill_attention_oracle(qb, kb, vb, c.q_heads, c.kv_heads,
                                                           c.head_dim, c.len, shape.scale);
    q.insert(q.end(), qb.begin(), qb.end());
    k.insert(k.end(), kb.begin(), kb.end());
    v.insert(v.end(), vb.begin(), vb.end());
    for (double x : o) want.push_back(static_cast<float>(x));
  }
  auto bits = [&](const std::vector<float>& x) {
    std::vector<std::uint16_t> out(x.size());
    for (std::size_t i = 0; i < x.size(); ++i) out[i] = to_bits(x[i], c.dtype);
    return out;
  };
  auto dq = cudalab::to_device(bits(q)), dk = cudalab::to_device(bits(k)),
       dv = cudalab::to_device(bits(v));
  cudalab::testing::GuardedOutput<std::uint16_t> out(q.size());
  prefill(dq.data(), dk.data(), dv.data(), out.data(), shape, c.len, c.dtype, nullptr);
  CUDALAB_CHECK(cudaDeviceSynchronize());
  std::vector<float> got;
  for (std::uint16_t x : out.result()) got.push_back(from_bits(x, c.dtype));
  const cudalab::Tolerance tol{slack * (c.dtype == DType::kF16 ? 1e-3 : 4e-3), 0};
  EXPECT_MATCHES(cudalab::compare(got, want, tol, what + " " + c.name));
  EXPECT_TRUE(out.guard_intact());
}

}  // namespace ch11_test
