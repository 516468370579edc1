// The attention oracles (attention_oracle.hpp), in double: softmax with the maximum subtracted, two
// passes; and random_at (ch11.hpp), the host twin of fill_random, from which the oracles' inputs
// come.
#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include <algorithm>
#include <cmath>
#include <limits>

#include "ch11/attention_oracle.hpp"
#include "ch11/ch11.hpp"
#include "cudalab/check.hpp"
#include "cudalab/device_fill.hpp"

namespace cudalab::ch11 {

float random_at(std::uint64_t seed, std::size_t i, DType dtype, float lo, float hi) {
  const float x = uniform_at(seed + i / kFillChunk, i % kFillChunk, lo, hi);
  return dtype == DType::kF16 ? __half2float(__float2half_rn(x))
                              : __bfloat162float(__float2bfloat16_rn(x));
}

namespace {
void check_heads(int q_heads, int kv_heads, int head_dim) {
  require(q_heads > 0, "q_heads", "must be positive");
  require(kv_heads > 0 && q_heads % kv_heads == 0, "kv_heads", "must divide q_heads");
  require(head_dim > 0, "head_dim", "must be positive");
}
}  // namespace

std::vector<double> decode_attention_oracle(std::span<const float> q, std::span<const float> k,
                                            std::span<const float> v, int q_heads, int kv_heads,
                                            int head_dim, int len, double scale) {
  check_heads(q_heads, kv_heads, head_dim);
  require(len >= 0, "len", "must not be negative");
  const std::size_t D = static_cast<std::size_t>(head_dim), L = static_cast<std::size_t>(len);
  require(q.size() == static_cast<std::size_t>(q_heads) * D, "q", "must hold q_heads * head_dim");
  require(k.size() == static_cast<std::size_t>(kv_heads) * L * D, "k",
          "must hold kv_heads * len * head_dim");
  require(v.size() == k.size(), "v", "must hold kv_heads * len * head_dim");
  std::vector<double> out(static_cast<std::size_t>(q_heads) * D, 0.0);
  const int group = q_heads / kv_heads;
  std::vector<double> s(L);
  for (int h = 0; h < q_heads; ++h) {
    const std::size_t kh = static_cast<std::size_t>(h / group);
    double m = -std::numeric_limits<double>::infinity();
    for (std::size_t t = 0; t < L; ++t) {
      double dot = 0;
      for (std::size_t d = 0; d < D; ++d)
        dot += double{q[h * D + d]} * double{k[(kh * L + t) * D + d]};
      s[t] = scale * dot;
      m = std::max(m, s[t]);
    }
    double sum = 0;
    for (std::size_t t = 0; t < L; ++t) sum += (s[t] = std::exp(s[t] - m));
    for (std::size_t t = 0; t < L; ++t)
      for (std::size_t d = 0; d < D; ++d)
        out[h * D + d] += s[t] / sum * double{v[(kh * L + t) * D + d]};
  }
  return out;
}

std::vector<double> prefill_attention_oracle(std::span<const float> q, std::span<const float> k,
                                             std::span<const float> v, int q_heads, int kv_heads,
                                             int head_dim, int len, double scale) {
  check_heads(q_heads, kv_heads, head_dim);
  require(len >= 0, "len", "must not be negative");
  const std::size_t D = static_cast<std::size_t>(head_dim), L = static_cast<std::size_t>(len);
  const std::size_t H = static_cast<std::size_t>(q_heads), KH = static_cast<std::size_t>(kv_heads);
  require(q.size() == L * H * D, "q", "must hold len * q_heads * head_dim");
  require(k.size() == L * KH * D, "k", "must hold len * kv_heads * head_dim");
  require(v.size() == k.size(), "v", "must hold len * kv_heads * head_dim");
  std::vector<double> out(L * H * D, 0.0);
  const std::size_t group = H / KH;
  std::vector<double> s(L);
  for (std::size_t i = 0; i < L; ++i)
    for (std::size_t h = 0; h < H; ++h) {
      const std::size_t kh = h / group;
      double m = -std::numeric_limits<double>::infinity();
      for (std::size_t t = 0; t <= i; ++t) {
        double dot = 0;
        for (std::size_t d = 0; d < D; ++d)
          dot += double{q[(i * H + h) * D + d]} * double{k[(t * KH + kh) * D + d]};
        s[t] = scale * dot;
        m = std::max(m, s[t]);
      }
      double sum = 0;
      for (std::size_t t = 0; t <= i; ++t) sum += (s[t] = std::exp(s[t] - m));
      for (std::size_t t = 0; t <= i; ++t)
        for (std::size_t d = 0; d < D; ++d)
          out[(i * H + h) * D + d] += s[t] / sum * double{v[(t * KH + kh) * D + d]};
    }
  return out;
}

}  // namespace cudalab::ch11
