// KV-cache arithmetic (kv_cache.hpp) on published configurations, worked by hand in the comments.
#include <gtest/gtest.h>

#include "ch11/kv_cache.hpp"
#include "cudalab/testing.hpp"

using namespace cudalab;
using namespace cudalab::ch11;

TEST(KvCalc, BytesPerTokenWithGqa) {
  // 2 (K and V) * 32 layers * 8 KV heads * 128 dims * 2 bytes = 131072 = 128 KiB per token.
  EXPECT_EQ(kv_bytes_per_token(llama3_8b(), Precision::kBF16), 131072u);
  EXPECT_EQ(kv_bytes_per_token(mistral_7b(), Precision::kFP16), 131072u);
  // 2 * 80 * 8 * 128 * 2 = 327680 = 320 KiB per token.
  EXPECT_EQ(kv_bytes_per_token(llama3_70b(), Precision::kBF16), 327680u);
  // FP8 halves it, FP32 doubles it.
  EXPECT_EQ(kv_bytes_per_token(llama3_70b(), Precision::kFP8), 163840u);
  EXPECT_EQ(kv_bytes_per_token(llama3_8b(), Precision::kFP32), 262144u);
}

TEST(KvCalc, GqaDividesTheCacheByTheGroup) {
  ModelConfig mha = llama3_8b();
  mha.kv_heads = mha.q_heads;  // what Llama-2-7B did: 32 KV heads
  EXPECT_EQ(kv_bytes_per_token(mha, Precision::kBF16),
            4 * kv_bytes_per_token(llama3_8b(), Precision::kBF16));
}

TEST(KvCalc, PerSequence) {
  // 128 KiB * 8192 tokens = 1 GiB exactly.
  EXPECT_EQ(kv_bytes_per_sequence(llama3_8b(), Precision::kBF16, 8192), 1ull << 30);
  EXPECT_EQ(kv_bytes_per_sequence(llama3_70b(), Precision::kBF16, 0), 0u);
}

TEST(KvCalc, SequencesBesideTheWeightsOnOneH200) {
  // 141e9 bytes, 10% reserved: 126.9e9 usable; bf16 weights 2 * 8030261248 = 16060522496 bytes;
  // free 110839477504 bytes / 1 GiB per 8192-token sequence = 103.2 -> 103 sequences.
  const Deployment d{Precision::kBF16, Precision::kBF16, 1, 141'000'000'000ull, 0.1};
  const KvBudget b = kv_budget(llama3_8b(), d, 8192);
  EXPECT_EQ(b.weight_bytes_per_gpu, 16'060'522'496ull);
  EXPECT_EQ(b.free_bytes_per_gpu, 110'839'477'504ull);
  EXPECT_EQ(b.sequences, 103u);
  EXPECT_EQ(b.tokens, 110'839'477'504ull / 131072);
  // FP8 KV: twice the sequences (one byte per element), within the floor.
  Deployment d8 = d;
  d8.kv = Precision::kFP8;
  EXPECT_EQ(kv_budget(llama3_8b(), d8, 8192).sequences, 206u);
}

TEST(KvCalc, SeventyBDoesNotFitOnOneGpuInBf16) {
  const Deployment d{Precision::kBF16, Precision::kBF16, 1, 141'000'000'000ull, 0.1};
  const KvBudget b = kv_budget(llama3_70b(), d, 4096);
  EXPECT_EQ(b.free_bytes_per_gpu, 0u);
  EXPECT_EQ(b.sequences, 0u);
}

TEST(KvCalc, TensorParallelSplitsHeadsAndWeights) {
  // 8 GPUs, FP8 weights: 70553706496 / 8 = 8819213312 bytes each; one KV head per GPU:
  // 2 * 80 * 1 * 128 * 2 = 40960 bytes per token per GPU.
  const Deployment d{Precision::kFP8, Precision::kBF16, 8, 141'000'000'000ull, 0.1};
  const KvBudget b = kv_budget(llama3_70b(), d, 8192);
  EXPECT_EQ(b.weight_bytes_per_gpu, 8'819'213'312ull);
  EXPECT_EQ(b.kv_bytes_per_token_per_gpu, 40960u);
  EXPECT_EQ(b.sequences, (126'900'000'000ull - 8'819'213'312ull) / (40960ull * 8192));
  // 16 GPUs: still one head each (replicated), weights halved again.
  Deployment d16 = d;
  d16.gpus = 16;
  EXPECT_EQ(kv_budget(llama3_70b(), d16, 8192).kv_bytes_per_token_per_gpu, 40960u);
}

TEST(KvCalc, ArgumentsAreNamed) {
  Deployment d{Precision::kBF16, Precision::kBF16, 3, 141'000'000'000ull, 0.1};
  cudalab::testing::expect_throws_naming([&] { kv_budget(llama3_8b(), d, 8192); }, "gpus");
  d.gpus = 1;
  cudalab::testing::expect_throws_naming([&] { kv_budget(llama3_8b(), d, 0); }, "context");
  d.gpu_bytes = 0;
  cudalab::testing::expect_throws_naming([&] { kv_budget(llama3_8b(), d, 1); }, "gpu_bytes");
  d.gpu_bytes = 1;
  d.reserved_fraction = 1.0;
  cudalab::testing::expect_throws_naming([&] { kv_budget(llama3_8b(), d, 1); },
                                         "reserved_fraction");
  ModelConfig bad = llama3_8b();
  bad.kv_heads = 5;
  cudalab::testing::expect_throws_naming([&] { kv_bytes_per_token(bad, Precision::kBF16); }, "m");
}
