// The memory budget of a serving replica (exercise 12.1): every item of the fixed part counts, the
// largest batch is the largest that fits (and one more does not), sizes past 2^32.
#include <gtest/gtest.h>

#include <cstdint>
#include <stdexcept>

#include "ch11/host.hpp"
#include "ch12/ch12.hpp"
#include "cudalab/testing.hpp"

using namespace cudalab;
using namespace cudalab::ch12;

namespace {

BudgetInputs h200_llama8b(std::uint64_t context = 8192) {
  return serving_inputs(model_by_name("llama3-8b"), gpu_memory_bytes("h200"), context);
}

}  // namespace

TEST(Budget, Llama8bOnAnH200WorkedByHand) {
  // 143071 MiB = 150,020,816,896 bytes; bf16 weights 2 x 8,030,261,248 = 16,060,522,496 (chapter
  // 11); context 600 MiB; workspace 256 MiB; reserve floor(0.05 x total) = 7,501,040,844;
  // activations per token 2 x (4 x 4096 + 2 x 14336) + 4 x 128256 = 603,136 bytes, x 2048 prefill
  // tokens = 1,235,222,528. Fixed (with 629,145,600 + 268,435,456 of context and workspace):
  // 25,694,366,924. Per sequence: 1 GiB of KV (8192 tokens x 128 KiB) + 603,136 = 1,074,344,960.
  // (150,020,816,896 - 25,694,366,924) / 1,074,344,960 = 115.7.
  const MemoryBudget b = memory_budget(h200_llama8b());
  EXPECT_EQ(b.gpu_bytes, 150'020'816'896ull);
  EXPECT_EQ(b.weights, 16'060'522'496ull);
  EXPECT_EQ(b.kv_per_sequence, 1ull << 30);
  EXPECT_EQ(b.reserve, 7'501'040'844ull);
  EXPECT_EQ(b.prefill_activations, 1'235'222'528ull);
  EXPECT_EQ(b.fixed, 25'694'366'924ull);
  EXPECT_EQ(b.per_sequence, 1'074'344'960ull);
  EXPECT_EQ(b.max_batch, 115u);
}

TEST(Budget, FixedPartCountsEveryItem) {
  // Each fixed item, grown by exactly one sequence's bytes, costs exactly one sequence of batch.
  const BudgetInputs base = h200_llama8b();
  const MemoryBudget b0 = memory_budget(base);
  ASSERT_GT(b0.max_batch, 1u);
  BudgetInputs in = base;
  in.cuda_context_bytes += b0.per_sequence;
  EXPECT_EQ(memory_budget(in).max_batch, b0.max_batch - 1) << "the CUDA context is not counted";
  in = base;
  in.workspace_bytes += b0.per_sequence;
  EXPECT_EQ(memory_budget(in).max_batch, b0.max_batch - 1) << "the workspace is not counted";
  in = base;
  in.fragmentation_reserve = 0;
  const MemoryBudget no_reserve = memory_budget(in);
  EXPECT_EQ(no_reserve.reserve, 0u);
  EXPECT_EQ(no_reserve.fixed + b0.reserve, b0.fixed) << "the fragmentation reserve is not counted";
  in = base;
  in.prefill_tokens = 0;
  EXPECT_EQ(memory_budget(in).fixed + b0.prefill_activations, b0.fixed);
}

TEST(Budget, LargestBatchFitsAndOneMoreDoesNot) {
  for (std::uint64_t context : {1ull, 511ull, 4096ull, 8193ull, 131072ull}) {
    const MemoryBudget b = memory_budget(h200_llama8b(context));
    SCOPED_TRACE(context);
    EXPECT_LE(b.fixed + b.max_batch * b.per_sequence, b.gpu_bytes);
    EXPECT_GT(b.fixed + (b.max_batch + 1) * b.per_sequence, b.gpu_bytes);
    EXPECT_EQ(b.allocated_at(b.max_batch), b.fixed - b.reserve + b.max_batch * b.per_sequence);
  }
}

TEST(Budget, SeventyBOnOneGpuDoesNotFitAndOnFourDoes) {
  // Llama-3-70B bf16: 2 x 70,553,706,496 = 141,107,412,992 bytes of weights fit an H200's
  // 150,020,816,896 alone, but with the context, workspace, 5 % reserve and 1.42e9 of prefill
  // activations the fixed part passes the GPU: no batch at all. TP 4 splits weights and KV heads.
  BudgetInputs in = serving_inputs(model_by_name("llama3-70b"), gpu_memory_bytes("h200"), 32768);
  const MemoryBudget one = memory_budget(in);
  EXPECT_GT(one.weights, 1ull << 32);
  EXPECT_EQ(one.max_batch, 0u);
  in.deployment.gpus = 4;
  const MemoryBudget four = memory_budget(in);
  EXPECT_EQ(one.weights, 141'107'412'992ull);
  EXPECT_GT(one.fixed, one.gpu_bytes);
  EXPECT_EQ(four.weights, 35'276'853'248ull);
  EXPECT_GT(four.max_batch, 10u);
}

TEST(Budget, FixedPartLargerThanTheGpuIsZeroNotAWrap) {
  BudgetInputs in = h200_llama8b();
  in.deployment.gpu_bytes = 8ull << 30;  // 8 GiB: the 16 GB of weights do not fit
  const MemoryBudget b = memory_budget(in);
  EXPECT_GT(b.fixed, b.gpu_bytes);
  EXPECT_EQ(b.max_batch, 0u);
}

TEST(Budget, BadInputsNameTheArgument) {
  BudgetInputs in = h200_llama8b();
  in.context_tokens = 0;
  cudalab::testing::expect_throws_naming([&] { (void)memory_budget(in); }, "context_tokens");
  in = h200_llama8b();
  in.fragmentation_reserve = 1.0;
  cudalab::testing::expect_throws_naming([&] { (void)memory_budget(in); }, "fragmentation_reserve");
  cudalab::testing::expect_throws_naming([&] { (void)gpu_memory_bytes("h300"); }, "gpu");
  cudalab::testing::expect_throws_naming([&] { (void)model_by_name("gpt-5"); }, "model");
  cudalab::testing::expect_throws_naming([&] { (void)precision_by_name("fp4"); }, "precision");
}
