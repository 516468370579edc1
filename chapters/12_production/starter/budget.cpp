// Starter track — write your code at the TODO marks; the tests of each exercise
// fail until you do. (Generated from chapters/12_production/reference/budget.cpp by scripts/variants.py.)
// Exercise 12.1 — the memory budget of a serving replica (ch12.hpp): what fits beside the weights.
//
// Chapter 11's kv_budget gives the weights and the KV bytes per sequence on one GPU; a process
// also holds the CUDA context, the libraries' workspace, the activations of the tokens in flight,
// and loses a share to fragmentation. Forgetting either of the last two is how a "fits on paper"
// deployment dies with cudaErrorMemoryAllocation at its first busy minute.
#include <cmath>
#include <cstdint>

#include "ch12/ch12.hpp"
#include "cudalab/check.hpp"

namespace cudalab::ch12 {

std::uint64_t MemoryBudget::allocated_at(std::uint64_t batch) const {
  return fixed - reserve + batch * per_sequence;
}

MemoryBudget memory_budget(const BudgetInputs& in) {
  require(in.context_tokens > 0, "context_tokens", "must be positive");
  require(in.fragmentation_reserve >= 0 && in.fragmentation_reserve < 1, "fragmentation_reserve",
          "must be in [0, 1)");
  ch11::Deployment d = in.deployment;
  d.reserved_fraction = 0;  // this budget counts the reserve itself, item by item
  const ch11::KvBudget kv = ch11::kv_budget(in.model, d, in.context_tokens);
  MemoryBudget b;
  b.gpu_bytes = d.gpu_bytes;
  b.weights = kv.weight_bytes_per_gpu;
  b.kv_per_sequence = kv.kv_bytes_per_sequence_per_gpu;
  // TODO(12.1): the remaining fields of MemoryBudget (ch12.hpp documents each one and the
  // inequality every batch must satisfy): everything the process holds besides the KV cache
  // counts once, the reserve is a share of the GPU rounded down, and max_batch is the largest
  // batch that satisfies the inequality (0 when none does). All in 64-bit: a 70B model's weights
  // pass 2^32.
  (void)in;
  return b;
}

}  // namespace cudalab::ch12
