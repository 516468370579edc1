// The decode split planner (decode_plan.hpp, plan_decode_splits): the H200's measured best split
// counts, the bounds every plan keeps (blocks per SM, tokens per chunk, the cap), monotonicity, and
// bad arguments refused by name. CPU only.
#include <gtest/gtest.h>

#include <algorithm>
#include <climits>

#include "ch11/decode_plan.hpp"
#include "cudalab/testing.hpp"

using namespace cudalab::ch11;

namespace {
constexpr int kH200Sms = 132;
}

TEST(DecodePlan, TheH200SweepsBestCounts) {
  // bench_ch11 on the H200 (32 query heads, 8 KV heads): unsplit 0.97x of a copy at 64 x 8192;
  // 4 splits 0.98x at 16 x 32768 (unsplit 0.39x); 32 splits 0.96x at 2 x 131072 (64: 0.91x).
  EXPECT_EQ(plan_decode_splits(64, 8, 8192, kH200Sms), 1);
  EXPECT_EQ(plan_decode_splits(16, 8, 32768, kH200Sms), 4);
  EXPECT_EQ(plan_decode_splits(2, 8, 131072, kH200Sms), 33);
}

TEST(DecodePlan, EveryPlanKeepsItsBounds) {
  for (int sms : {1, 16, 108, 132, 170})
    for (int batch : {0, 1, 2, 3, 7, 16, 64, 256, 4096})
      for (int kv : {1, 2, 8, 32})
        for (long long cap : {0LL, 1LL, 255LL, 256LL, 511LL, 4096LL, 131072LL, 1LL << 31}) {
          const int s = plan_decode_splits(batch, kv, cap, sms);
          const long long blocks = static_cast<long long>(batch) * kv;
          SCOPED_TRACE(::testing::Message() << "batch " << batch << " kv " << kv << " cap " << cap
                                            << " sms " << sms << ": " << s << " splits");
          ASSERT_GE(s, 1);
          ASSERT_LE(s, kMaxDecodeSplits);
          const long long target = static_cast<long long>(kDecodeBlocksPerSm) * sms;
          if (s > 1) {
            EXPECT_GE(cap / s, kMinSplitTokens) << "a chunk shorter than kMinSplitTokens";
            EXPECT_LE(blocks * s, target) << "more blocks than the target";
          }
          const long long room = std::min<long long>(cap / kMinSplitTokens, kMaxDecodeSplits);
          if (blocks > 0 && s < room) {
            EXPECT_GT(blocks * (s + 1), target)
                << "one more split would still fit the target: the plan stopped short";
          }
        }
}

TEST(DecodePlan, MoreSmsNeverFewerSplitsMoreSequencesNeverMore) {
  for (long long cap : {4096LL, 131072LL}) {
    int last = 1;
    for (int sms = 1; sms <= 256; ++sms) {
      const int s = plan_decode_splits(2, 8, cap, sms);
      EXPECT_GE(s, last) << sms << " SMs";
      last = s;
    }
    last = kMaxDecodeSplits;
    for (int batch = 1; batch <= 512; ++batch) {
      const int s = plan_decode_splits(batch, 8, cap, 132);
      EXPECT_LE(s, last) << "batch " << batch;
      last = s;
    }
  }
}

TEST(DecodePlan, SizesPastIntRange) {
  // batch x kv_heads past 2^31 (an int product would wrap negative): one split, no overflow.
  EXPECT_EQ(plan_decode_splits(INT_MAX, 64, 1LL << 40, 132), 1);
  EXPECT_EQ(plan_decode_splits(1, 1, 1LL << 40, INT_MAX), kMaxDecodeSplits);
}

TEST(DecodePlan, BadArgumentsAreRefusedByName) {
  using cudalab::testing::expect_throws_naming;
  expect_throws_naming([] { (void)plan_decode_splits(-1, 8, 1024, 132); }, "batch");
  expect_throws_naming([] { (void)plan_decode_splits(1, 0, 1024, 132); }, "kv_heads");
  expect_throws_naming([] { (void)plan_decode_splits(1, 8, -1, 132); }, "capacity_tokens");
  expect_throws_naming([] { (void)plan_decode_splits(1, 8, 1024, 0); }, "sm_count");
}
