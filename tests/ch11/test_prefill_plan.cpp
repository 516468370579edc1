// The row planner of the tensor-core prefill (prefill_plan.hpp, plan_flash_rows_per_warp): the
// H100 measurements it encodes, the rule's boundary, monotonicity, and bad arguments refused by
// name. CPU only.
#include <gtest/gtest.h>

#include "ch11/prefill_plan.hpp"
#include "cudalab/testing.hpp"

using namespace cudalab::ch11;

namespace {
constexpr int kH100Sms = 132;
}

TEST(PrefillPlan, TheH100MeasurementsItEncodes) {
  // Batch 1, 32 query heads, measured side by side: at head_dim 64, 32 rows a warp ran slower at
  // 1024 tokens and faster at 4096 and 16384; at head_dim 128, 16 rows ran faster at 4096.
  EXPECT_EQ(plan_flash_rows_per_warp(1, 32, 64, 1024, kH100Sms), 16);
  EXPECT_EQ(plan_flash_rows_per_warp(1, 32, 64, 4096, kH100Sms), 32);
  EXPECT_EQ(plan_flash_rows_per_warp(1, 32, 64, 16384, kH100Sms), 32);
  EXPECT_EQ(plan_flash_rows_per_warp(1, 32, 128, 4096, kH100Sms), 16);
  EXPECT_EQ(plan_flash_rows_per_warp(1, 32, 128, 16384, kH100Sms), 16);
}

TEST(PrefillPlan, WideRowsFromTheWaveCountOn) {
  // The 128-row grid of batch x heads x ceil(len / 128) blocks against waves of
  // kFlashBlocksPerSm blocks on every SM: one block short of kFlashWideRowWaves waves keeps 16.
  for (int sms : {1, 16, 108, 132, 170}) {
    const long long need = static_cast<long long>(kFlashWideRowWaves) * kFlashBlocksPerSm * sms;
    SCOPED_TRACE(::testing::Message() << sms << " SMs, " << need << " blocks needed");
    // batch `need` x 1 head x 1 tile (len 1..128), then one fewer sequence.
    ASSERT_LE(need, 1 << 30);
    EXPECT_EQ(plan_flash_rows_per_warp(static_cast<int>(need), 1, 64, 128, sms), 32);
    EXPECT_EQ(plan_flash_rows_per_warp(static_cast<int>(need) - 1, 1, 64, 128, sms), 16);
    // The tiles are ceil(len / 128): 129 tokens are two tiles.
    EXPECT_EQ(plan_flash_rows_per_warp(static_cast<int>((need + 1) / 2), 1, 64, 129, sms), 32);
    EXPECT_EQ(plan_flash_rows_per_warp(static_cast<int>((need + 1) / 2), 1, 64, 128, sms), 16);
  }
}

TEST(PrefillPlan, EmptyAndHugeProblems) {
  EXPECT_EQ(plan_flash_rows_per_warp(0, 32, 64, 4096, kH100Sms), 16);
  EXPECT_EQ(plan_flash_rows_per_warp(1, 0, 64, 4096, kH100Sms), 16);
  EXPECT_EQ(plan_flash_rows_per_warp(1, 32, 64, 0, kH100Sms), 16);
  // batch x heads x tiles past 2^31 blocks counts in 64 bits.
  EXPECT_EQ(plan_flash_rows_per_warp(1 << 20, 1 << 10, 64, 1 << 20, kH100Sms), 32);
}

TEST(PrefillPlan, MoreTokensOrSequencesNeverNarrowerMoreSmsNeverWider) {
  int last = 16;
  for (int len = 1; len <= 32768; len += 97) {
    const int r = plan_flash_rows_per_warp(1, 32, 64, len, kH100Sms);
    EXPECT_GE(r, last) << len << " tokens";
    last = r;
  }
  last = 16;
  for (int batch = 1; batch <= 256; ++batch) {
    const int r = plan_flash_rows_per_warp(batch, 8, 64, 300, kH100Sms);
    EXPECT_GE(r, last) << batch << " sequences";
    last = r;
  }
  last = 32;
  for (int sms = 1; sms <= 512; ++sms) {
    const int r = plan_flash_rows_per_warp(4, 32, 64, 2048, sms);
    EXPECT_LE(r, last) << sms << " SMs";
    last = r;
  }
}

TEST(PrefillPlan, BadArgumentsNamed) {
  using cudalab::testing::expect_throws_naming;
  expect_throws_naming([] { plan_flash_rows_per_warp(-1, 32, 64, 16, 132); }, "batch");
  expect_throws_naming([] { plan_flash_rows_per_warp(1, -1, 64, 16, 132); }, "q_heads");
  expect_throws_naming([] { plan_flash_rows_per_warp(1, 32, 96, 16, 132); }, "head_dim");
  expect_throws_naming([] { plan_flash_rows_per_warp(1, 32, 64, -1, 132); }, "len");
  expect_throws_naming([] { plan_flash_rows_per_warp(1, 32, 64, 16, 0); }, "sm_count");
}
