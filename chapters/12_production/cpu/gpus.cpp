// Host facts of chapter 12's budget (ch12.hpp): activations per token, GPUs by name.
#include <fmt/format.h>

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "ch12/ch12.hpp"
#include "cudalab/check.hpp"

namespace cudalab::ch12 {
namespace {

// Total memory as cudaMemGetInfo reports it (MiB): the H200's 143,071 MiB is cudaDeviceProp's
// total on the lab's H200 (shared/anchors); the others are the spec sheets' GiB or GB, less what
// the driver keeps, as nvidia-smi lists them (80 GB H100 SXM 81,559 MiB; A100 80 GB 81,920; A100
// 40 GB 40,960) — check yours with `scripts/lab doctor`.
const std::vector<std::pair<std::string, std::uint64_t>>& gpu_table() {
  static const std::vector<std::pair<std::string, std::uint64_t>> t = {
      {"h200", 143071}, {"h100-80", 81559}, {"a100-80", 81920}, {"a100-40", 40960}};
  return t;
}

}  // namespace

std::uint64_t activation_bytes_per_token(const ch11::ModelConfig& m, std::uint64_t intermediate,
                                         std::uint64_t vocab, ch11::Precision p) {
  require(m.q_heads > 0 && m.head_dim > 0, "m", "q_heads and head_dim must be positive");
  const std::uint64_t hidden = static_cast<std::uint64_t>(m.q_heads) * m.head_dim;
  const auto bytes = static_cast<std::uint64_t>(ch11::bytes_per_element(p));
  return bytes * (4 * hidden + 2 * intermediate) + 4 * vocab;
}

std::uint64_t gpu_memory_bytes(const std::string& gpu) {
  for (const auto& [name, mib] : gpu_table())
    if (name == gpu) return mib << 20;
  std::string known;
  for (const auto& n : known_gpus()) known += (known.empty() ? "" : ", ") + n;
  throw_invalid_argument("gpu",
                         "unknown GPU '" + gpu + "' (known: " + known + ", or a size in GiB)");
}

ServedModel model_by_name(const std::string& model) {
  // intermediate_size and vocab_size of each model's config.json.
  if (model == "llama3-8b") return {ch11::llama3_8b(), 14336, 128256};
  if (model == "llama3-70b") return {ch11::llama3_70b(), 28672, 128256};
  if (model == "mistral-7b") return {ch11::mistral_7b(), 14336, 32000};
  throw_invalid_argument(
      "model", "unknown model '" + model + "' (known: llama3-8b, llama3-70b, mistral-7b)");
}

ch11::Precision precision_by_name(const std::string& p) {
  if (p == "fp32") return ch11::Precision::kFP32;
  if (p == "fp16") return ch11::Precision::kFP16;
  if (p == "bf16") return ch11::Precision::kBF16;
  if (p == "fp8") return ch11::Precision::kFP8;
  if (p == "int8") return ch11::Precision::kINT8;
  throw_invalid_argument("precision",
                         "unknown precision '" + p + "' (fp32, fp16, bf16, fp8, int8)");
}

BudgetInputs serving_inputs(const ServedModel& m, std::uint64_t gpu_bytes,
                            std::uint64_t context_tokens) {
  BudgetInputs in;
  in.model = m.config;
  in.deployment.gpu_bytes = gpu_bytes;
  in.context_tokens = context_tokens;
  in.activation_bytes_per_token =
      activation_bytes_per_token(m.config, m.intermediate, m.vocab, in.deployment.weights);
  in.prefill_tokens = 2048;
  in.cuda_context_bytes = 600ull << 20;
  in.workspace_bytes = 256ull << 20;
  in.fragmentation_reserve = 0.05;
  return in;
}

std::string budget_json(const MemoryBudget& b) {
  return fmt::format(
      R"({{"gpu_bytes": {}, "weights": {}, "cuda_context": {}, "workspace": {}, "reserve": {}, )"
      R"("prefill_activations": {}, "fixed": {}, "kv_per_sequence": {}, "per_sequence": {}, "max_batch": {}}})",
      b.gpu_bytes, b.weights, b.cuda_context, b.workspace, b.reserve, b.prefill_activations,
      b.fixed, b.kv_per_sequence, b.per_sequence, b.max_batch);
}

std::vector<std::string> known_gpus() {
  std::vector<std::string> out;
  for (const auto& e : gpu_table()) out.push_back(e.first);
  return out;
}

}  // namespace cudalab::ch12
