// KV-cache arithmetic (host.hpp): bytes per token, per sequence, per GPU, and what fits.
#include <cmath>
#include <cstdint>

#include "ch11/kv_cache.hpp"
#include "cudalab/check.hpp"

namespace cudalab::ch11 {

double bytes_per_element(Precision p) {
  switch (p) {
    case Precision::kFP32:
      return 4;
    case Precision::kFP16:
    case Precision::kBF16:
      return 2;
    case Precision::kFP8:
    case Precision::kINT8:
      return 1;
  }
  throw_invalid_argument("p", "unknown precision");
}

ModelConfig llama3_8b() {
  return {"Llama-3-8B", 32, 32, 8, 128, 8'030'261'248ull};
}
ModelConfig llama3_70b() {
  return {"Llama-3-70B", 80, 64, 8, 128, 70'553'706'496ull};
}
ModelConfig mistral_7b() {
  return {"Mistral-7B", 32, 32, 8, 128, 7'241'732'096ull};
}

namespace {
void validate(const ModelConfig& m) {
  require(m.layers > 0, "m", "layers must be positive");
  require(m.kv_heads > 0 && m.q_heads > 0 && m.q_heads % m.kv_heads == 0, "m",
          "q_heads must be a positive multiple of kv_heads");
  require(m.head_dim > 0, "m", "head_dim must be positive");
}
std::uint64_t kv_per_token_heads(const ModelConfig& m, Precision kv, int kv_heads) {
  return static_cast<std::uint64_t>(2.0 * m.layers * kv_heads * m.head_dim * bytes_per_element(kv));
}
}  // namespace

std::uint64_t kv_bytes_per_token(const ModelConfig& m, Precision kv) {
  validate(m);
  return kv_per_token_heads(m, kv, m.kv_heads);
}

std::uint64_t kv_bytes_per_sequence(const ModelConfig& m, Precision kv, std::uint64_t tokens) {
  return kv_bytes_per_token(m, kv) * tokens;
}

std::uint64_t weight_bytes(const ModelConfig& m, Precision w) {
  return static_cast<std::uint64_t>(static_cast<double>(m.parameters) * bytes_per_element(w));
}

KvBudget kv_budget(const ModelConfig& m, const Deployment& d, std::uint64_t context) {
  validate(m);
  require(d.gpus > 0 && (m.kv_heads % d.gpus == 0 || d.gpus % m.kv_heads == 0), "gpus",
          "must divide kv_heads or be a multiple of it (a KV head lives whole on one GPU)");
  require(d.gpu_bytes > 0, "gpu_bytes", "must be positive");
  require(d.reserved_fraction >= 0 && d.reserved_fraction < 1, "reserved_fraction",
          "must be in [0, 1)");
  require(context > 0, "context", "must be positive");
  KvBudget b;
  // Tensor parallelism splits every weight matrix (embeddings included) across the GPUs.
  b.weight_bytes_per_gpu = (weight_bytes(m, d.weights) + d.gpus - 1) / d.gpus;
  // More GPUs than KV heads: each GPU keeps a replica of one head.
  const int heads_per_gpu = d.gpus >= m.kv_heads ? 1 : m.kv_heads / d.gpus;
  b.kv_bytes_per_token_per_gpu = kv_per_token_heads(m, d.kv, heads_per_gpu);
  b.kv_bytes_per_sequence_per_gpu = b.kv_bytes_per_token_per_gpu * context;
  const auto usable = static_cast<std::uint64_t>(
      std::floor(static_cast<double>(d.gpu_bytes) * (1.0 - d.reserved_fraction)));
  b.free_bytes_per_gpu = usable > b.weight_bytes_per_gpu ? usable - b.weight_bytes_per_gpu : 0;
  b.sequences = b.free_bytes_per_gpu / b.kv_bytes_per_sequence_per_gpu;
  b.tokens = b.free_bytes_per_gpu / b.kv_bytes_per_token_per_gpu;
  return b;
}

}  // namespace cudalab::ch11
