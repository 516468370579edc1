// The memory budget of a serving replica (exercise 12.1), without a GPU: what the weights, the CUDA
// context, the workspace, the prefill activations and the fragmentation reserve leave for the KV
// cache, and the largest batch.
//
//   ch12_mem_budget [--model llama3-8b] [--gpu h200 | --gpu-gib 80] [--context 8192] [--tp 1]
//                   [--weights bf16] [--kv bf16] [--reserve 0.05] [--json OUT]
// Exit status: 0, 2 for a bad argument (which one, why).
#include <fmt/format.h>

#include <cstdio>
#include <exception>
#include <fstream>
#include <string>

#include "args.hpp"
#include "ch12/ch12.hpp"

using namespace cudalab;
using namespace cudalab::ch12;

int main(int argc, char** argv) {
  try {
    const Args a(argc, argv,
                 {{"model", "llama3-8b"},
                  {"gpu", "h200"},
                  {"gpu-gib", ""},
                  {"context", "8192"},
                  {"tp", "1"},
                  {"weights", "bf16"},
                  {"kv", "bf16"},
                  {"reserve", "0.05"},
                  {"json", ""}});
    const ServedModel m = model_by_name(a.str("model"));
    const std::uint64_t gpu = a.str("gpu-gib").empty()
                                  ? gpu_memory_bytes(a.str("gpu"))
                                  : static_cast<std::uint64_t>(a.real("gpu-gib") * (1ull << 30));
    BudgetInputs in = serving_inputs(m, gpu, a.u64("context"));
    in.deployment.gpus = static_cast<int>(a.u64("tp"));
    in.deployment.weights = precision_by_name(a.str("weights"));
    in.deployment.kv = precision_by_name(a.str("kv"));
    in.fragmentation_reserve = a.real("reserve");
    const MemoryBudget b = memory_budget(in);
    const double gib = 1 << 30;
    fmt::print("{} on {} ({:.1f} GiB), TP {}, {} tokens per sequence\n", m.config.name,
               a.str("gpu-gib").empty() ? a.str("gpu") : a.str("gpu-gib") + " GiB",
               b.gpu_bytes / gib, in.deployment.gpus, in.context_tokens);
    fmt::print(
        "  weights              {:8.2f} GiB\n  CUDA context         {:8.2f} GiB\n"
        "  workspace            {:8.2f} GiB\n  prefill activations  {:8.2f} GiB\n"
        "  fragmentation reserve{:8.2f} GiB\n  per sequence (KV + 1 token) {:.3f} GiB\n"
        "  largest batch        {:8d}\n",
        b.weights / gib, b.cuda_context / gib, b.workspace / gib, b.prefill_activations / gib,
        b.reserve / gib, b.per_sequence / gib, b.max_batch);
    if (!a.str("json").empty()) {
      std::ofstream f(a.str("json"));
      f << budget_json(b) << "\n";
      if (!f) throw std::invalid_argument("--json " + a.str("json") + ": cannot write");
    }
    return 0;
  } catch (const std::invalid_argument& e) {
    std::fprintf(stderr, "ch12_mem_budget: %s\n", e.what());
    return 2;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "ch12_mem_budget: %s\n", e.what());
    return 1;
  }
}
