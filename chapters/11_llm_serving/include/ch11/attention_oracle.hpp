// Chapter 11, host side: the attention oracle in double: decode (one query token) and causal
// prefill, with grouped-query heads.
// Runs on the CPU (CI tests it without a GPU); bad arguments throw std::invalid_argument naming
// the argument.
#pragma once

#include <span>
#include <vector>

namespace cudalab::ch11 {

// ---------------------------------------------------------------------------------------------
// The attention oracle (double). One query token per sequence (decode): for query head h,
// kv head kh = h / (q_heads / kv_heads),
//   out[h] = sum_t softmax_t(scale * q[h] . k[kh][t]) v[kh][t]
// q: [q_heads][head_dim]; k, v: [kv_heads][len][head_dim]; returns [q_heads][head_dim].
std::vector<double> decode_attention_oracle(std::span<const float> q, std::span<const float> k,
                                            std::span<const float> v, int q_heads, int kv_heads,
                                            int head_dim, int len, double scale);
// Causal prefill for one sequence: q: [len][q_heads][head_dim]; k, v: [len][kv_heads][head_dim];
// token i attends to tokens 0..i. Returns [len][q_heads][head_dim].
std::vector<double> prefill_attention_oracle(std::span<const float> q, std::span<const float> k,
                                             std::span<const float> v, int q_heads, int kv_heads,
                                             int head_dim, int len, double scale);

}  // namespace cudalab::ch11
