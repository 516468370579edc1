// Chapter 11, host side: KV-cache arithmetic: bytes per token, per sequence and of the weights, and
// the budget of a deployment (how many tokens of context fit).
// Runs on the CPU (CI tests it without a GPU); bad arguments throw std::invalid_argument naming
// the argument.
#pragma once

#include <cstdint>
#include <stdexcept>
#include <string>

namespace cudalab::ch11 {

// ---------------------------------------------------------------------------------------------
// KV-cache arithmetic.
// A decoder layer keeps, per token, one key and one value vector per KV head: 2 * kv_heads *
// head_dim elements. Grouped-query attention (GQA) shares each KV head among q_heads / kv_heads
// query heads, which divides the cache by that factor (Llama-3-8B: 32 query heads, 8 KV heads).
enum class Precision { kFP32, kFP16, kBF16, kFP8, kINT8 };
double bytes_per_element(Precision p);  // 4, 2, 2, 1, 1

struct ModelConfig {
  std::string name;
  int layers = 0;
  int q_heads = 0;
  int kv_heads = 0;
  int head_dim = 0;
  std::uint64_t parameters = 0;  // total weights (embedding and output layer included)
};
// Published configurations (config.json of each model on the Hugging Face hub).
ModelConfig llama3_8b();   // 32 layers, 32 q heads, 8 KV heads, head_dim 128, 8.03e9 parameters
ModelConfig llama3_70b();  // 80 layers, 64 q heads, 8 KV heads, head_dim 128, 70.6e9 parameters
ModelConfig mistral_7b();  // 32 layers, 32 q heads, 8 KV heads, head_dim 128, 7.24e9 parameters

// Bytes of K and V for one token, all layers.
std::uint64_t kv_bytes_per_token(const ModelConfig& m, Precision kv);
// ... for a sequence of `tokens` tokens.
std::uint64_t kv_bytes_per_sequence(const ModelConfig& m, Precision kv, std::uint64_t tokens);
// Bytes of the weights at a precision.
std::uint64_t weight_bytes(const ModelConfig& m, Precision w);

// A deployment: tensor parallelism over `gpus` GPUs of `gpu_bytes` each, of which
// `reserved_fraction` is kept for activations, the CUDA context and fragmentation.
struct Deployment {
  Precision weights = Precision::kBF16;
  Precision kv = Precision::kBF16;
  int gpus = 1;                    // tensor-parallel degree: KV heads and weights split across GPUs
  std::uint64_t gpu_bytes = 0;     // memory of one GPU
  double reserved_fraction = 0.1;  // in [0, 1)
};
struct KvBudget {
  std::uint64_t weight_bytes_per_gpu = 0;
  std::uint64_t kv_bytes_per_token_per_gpu = 0;  // KV heads per GPU = kv_heads / gpus (at least 1)
  std::uint64_t kv_bytes_per_sequence_per_gpu = 0;
  std::uint64_t free_bytes_per_gpu = 0;  // after weights and the reserve (0 if they do not fit)
  std::uint64_t sequences = 0;           // whole sequences of `context` tokens that fit
  std::uint64_t tokens = 0;              // tokens of KV that fit (the paged cache's capacity)
};
// Throws std::invalid_argument naming 'gpus' when kv_heads is neither a multiple nor a divisor of
// gpus (a KV head cannot be split across GPUs), 'gpu_bytes' when 0, 'context' when 0.
KvBudget kv_budget(const ModelConfig& m, const Deployment& d, std::uint64_t context);

}  // namespace cudalab::ch11
