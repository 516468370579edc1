// Exercise 4.3 — the bank-conflict model (CPU: runs on CI) and the shared-memory kernel whose
// timing it predicts (GPU: the sums are small integers, exact in float).
#include <gtest/gtest.h>

#include <array>
#include <cstdint>
#include <numeric>
#include <string>
#include <vector>

#include "ch04/ch04.hpp"
#include "cudalab/testing.hpp"

using namespace cudalab;

namespace {
std::array<std::uint32_t, 32> strided_words(std::uint32_t stride, std::uint32_t base = 0) {
  std::array<std::uint32_t, 32> w{};
  for (std::uint32_t l = 0; l < 32; ++l) w[l] = base + l * stride;
  return w;
}
}  // namespace

TEST(BankModel, UnitStrideAndPaddedColumnAreConflictFree) {
  EXPECT_EQ(ch04::bank_conflict_ways(strided_words(1)), 1) << "32 consecutive words: 32 banks";
  EXPECT_EQ(ch04::bank_conflict_ways(strided_words(33)), 1) << "column of a [32][33] tile";
  EXPECT_EQ(ch04::bank_conflict_ways(strided_words(1, 17)), 1) << "offset start, still 32 banks";
}

TEST(BankModel, ColumnOfUnpaddedTileIs32Way) {
  EXPECT_EQ(ch04::bank_conflict_ways(strided_words(32)), 32) << "words 0, 32, 64, ...: all bank 0";
  EXPECT_EQ(ch04::bank_conflict_ways(strided_words(2)), 2);
  EXPECT_EQ(ch04::bank_conflict_ways(strided_words(16)), 16);
}

TEST(BankModel, SameWordIsABroadcastNotAConflict) {
  std::array<std::uint32_t, 32> same{};
  same.fill(7);
  EXPECT_EQ(ch04::bank_conflict_ways(same), 1) << "32 lanes, one word: one pass (broadcast)";
  // Lanes 0..15 read word 0, lanes 16..31 read word 32: same bank, two different words.
  std::array<std::uint32_t, 32> two{};
  for (std::uint32_t l = 0; l < 32; ++l) two[l] = l < 16 ? 0 : 32;
  EXPECT_EQ(ch04::bank_conflict_ways(two), 2);
}

TEST(BankModel, PartialWarpsAndEmptyAccess) {
  EXPECT_EQ(ch04::bank_conflict_ways({}), 0);
  const std::vector<std::uint32_t> three{5, 37, 69};  // all bank 5
  EXPECT_EQ(ch04::bank_conflict_ways(three), 3);
  const std::vector<std::uint32_t> too_many(33, 0);
  EXPECT_THROW(ch04::bank_conflict_ways(too_many), std::invalid_argument);
}

TEST(BankModel, ColumnReadFollowsTheGcdRule) {
  // A column of a [32][s] array: the 32 words l * s fall into 32 / gcd(s, 32) banks, gcd(s, 32)
  // words each. Padding to an odd row length always gives 1.
  for (int s = 1; s <= 96; ++s)
    EXPECT_EQ(ch04::column_read_conflict_ways(s), std::gcd(s, 32)) << "row_words = " << s;
  EXPECT_THROW(ch04::column_read_conflict_ways(0), std::invalid_argument);
}

class SmemColumnGpu : public ::testing::TestWithParam<int> {};

TEST_P(SmemColumnGpu, SumsTheColumnItReads) {
  CUDALAB_REQUIRE_GPU();
  const int stride = GetParam();
  const unsigned blocks = 3;
  const int iterations = 1000;
  cudalab::testing::GuardedOutput<float> out(std::size_t{blocks} * ch04::kSmemThreads);
  ch04::smem_column_read(out.data(), blocks, stride, iterations);
  CUDALAB_CHECK(cudaDeviceSynchronize());
  std::vector<float> want(out.size());
  for (std::size_t t = 0; t < want.size(); ++t)
    want[t] = ch04::smem_column_read_oracle(t, stride, iterations);
  EXPECT_MATCHES(compare(out.result(), want, {},
                         "smem_column_read (stride = " + std::to_string(stride) + ")"));
  EXPECT_TRUE(out.guard_intact());
}

INSTANTIATE_TEST_SUITE_P(Strides, SmemColumnGpu, ::testing::Values(1, 2, 16, 32, 33),
                         [](const ::testing::TestParamInfo<int>& p) {
                           return "stride_" + std::to_string(p.param);
                         });

// The stream contract (cudalab/testing.hpp, replay_from_capture): all the work on the caller's
// stream. A launch without the stream argument runs on the legacy default stream while the call is
// recorded, not in the recorded graph, so the replay leaves the output poisoned.
TEST(SmemColumnStreamGpu, AllWorkOnTheCallersStream) {
  CUDALAB_REQUIRE_GPU();
  const unsigned blocks = 3;
  const int stride = 33, iterations = 100;
  cudalab::testing::GuardedOutput<float> out(std::size_t{blocks} * ch04::kSmemThreads);
  cudalab::testing::replay_from_capture(
      [&](cudaStream_t s) { ch04::smem_column_read(out.data(), blocks, stride, iterations, s); },
      [&] { out.repoison(); });
  std::vector<float> want(out.size());
  for (std::size_t t = 0; t < want.size(); ++t)
    want[t] = ch04::smem_column_read_oracle(t, stride, iterations);
  EXPECT_MATCHES(
      compare(out.result(), want, {}, "smem_column_read replayed from a capture of its stream"));
}

TEST(SmemColumnArgs, RejectsBadStridesAndIterations) {
  EXPECT_THROW(ch04::smem_column_read(nullptr, 1, 0, 10), std::invalid_argument);
  EXPECT_THROW(ch04::smem_column_read(nullptr, 1, ch04::kMaxSmemStride + 1, 10),
               std::invalid_argument);
  EXPECT_THROW(ch04::smem_column_read(nullptr, 1, 32, ch04::kMaxSmemIterations + 1),
               std::invalid_argument);
  EXPECT_THROW(ch04::smem_column_read(nullptr, 1, 32, 10), std::invalid_argument);  // null out
  EXPECT_NO_THROW(ch04::smem_column_read(nullptr, 0, 32, 10));
  EXPECT_EQ(ch04::smem_column_read_oracle(0, 32, 3), 0.0f + 1.0f + 2.0f);  // lane 0, warp 0
}
