// Chapter 11 benchmarks, what the decode and prefill rows share (decode_attention.cpp,
// prefill.cpp): one Llama-3-8B layer's attention shape (32 query heads, 8 KV heads, head_dim 128),
// fp16, KV cache blocks of 16 tokens, and the seeds of the inputs the host recomputes.
#pragma once

#include <cstdint>

#include "ch11/ch11.hpp"

namespace cudalab::bench_ch11 {

constexpr int kQHeads = 32, kKvHeads = 8, kDim = 128, kBlockSize = 16;
constexpr ch11::DType kType = ch11::DType::kF16;
constexpr std::uint64_t kSeedQ = 11, kSeedK = 12, kSeedV = 13;

}  // namespace cudalab::bench_ch11
