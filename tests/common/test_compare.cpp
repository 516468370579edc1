// compare(): the diagnostics students act on — index, values, poison, tolerance.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <limits>
#include <vector>

#include "cudalab/compare.hpp"

using namespace cudalab;

TEST(Compare, EqualVectorsMatch) {
  const std::vector<float> a{1, 2, 3};
  const CompareResult r = compare(a, a);
  EXPECT_TRUE(r.ok());
  EXPECT_TRUE(r.message.empty());
}

TEST(Compare, ReportsFirstMismatchAndCounts) {
  const std::vector<float> want{1, 2, 3, 4, 5};
  const std::vector<float> got{1, 2, 3.5f, 4, 6};
  const CompareResult r = compare(got, want, {}, "demo (n = 5)");
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.mismatches, 2u);
  EXPECT_EQ(r.first_index, 2u);
  EXPECT_EQ(r.first_got, 3.5);
  EXPECT_EQ(r.first_want, 3.0);
  EXPECT_EQ(r.max_abs_index, 4u);
  EXPECT_NE(r.message.find("demo (n = 5): 2 of 5 elements differ"), std::string::npos) << r.message;
  EXPECT_NE(r.message.find("first mismatch at index 2: got 3.5, want 3"), std::string::npos)
      << r.message;
}

TEST(Compare, ToleranceIsAbsPlusRelative) {
  const std::vector<double> want{100.0, 1e-9};
  const std::vector<double> got{100.0 + 1e-4, 2e-9};
  EXPECT_TRUE(compare(got, want, {.abs = 1e-8, .rel = 1e-6}).ok());
  EXPECT_FALSE(compare(got, want, {.abs = 0, .rel = 1e-7}).ok());
}

TEST(Compare, PoisonedElementsAreCalledUnwritten) {
  std::vector<float> got(8, 1.0f);
  poison(std::span<float>(got).subspan(5));
  const std::vector<float> want(8, 1.0f);
  const CompareResult r = compare(got, want);
  EXPECT_EQ(r.mismatches, 3u);
  EXPECT_EQ(r.poisoned, 3u);
  EXPECT_TRUE(r.first_got_poison);
  EXPECT_NE(r.message.find("never written"), std::string::npos) << r.message;
  EXPECT_NE(r.message.find("ceil-div"), std::string::npos) << r.message;
}

TEST(Compare, NaNNeverPasses) {
  const float nan = std::numeric_limits<float>::quiet_NaN();
  EXPECT_FALSE(
      compare(std::vector<float>{nan}, std::vector<float>{1.0f}, {.abs = 1e30, .rel = 1}).ok());
  EXPECT_FALSE(compare(std::vector<float>{nan}, std::vector<float>{nan}).ok());
}

TEST(Compare, IntegersAreExactAndPoisonIsAllOnes) {
  std::vector<std::uint8_t> got{10, 20, 0xFF};
  const std::vector<std::uint8_t> want{10, 21, 30};
  const CompareResult r = compare(got, want);
  EXPECT_EQ(r.mismatches, 2u);
  EXPECT_EQ(r.poisoned, 1u);
  EXPECT_TRUE(is_poison(got[2]));
  EXPECT_FALSE(is_poison(got[0]));
}

TEST(Compare, SizeMismatchIsReported) {
  const CompareResult r = compare(std::vector<int>{1, 2}, std::vector<int>{1, 2, 3});
  EXPECT_FALSE(r.ok());
  EXPECT_NE(r.message.find("got 2 elements, want 3"), std::string::npos) << r.message;
}

TEST(Compare, HalfAndBfloat16AreReadAsNumbers) {
  // 1.5 in binary16 is 0x3E00; in bfloat16 0x3FC0.
  const std::vector<std::uint16_t> h{0x3E00}, b{0x3FC0};
  EXPECT_TRUE(compare_raw(ElementKind::kF16, h.data(), h.data(), 1, {}, "h").ok());
  const std::vector<std::uint16_t> h2{0x3E01};
  const CompareResult r = compare_raw(ElementKind::kF16, h2.data(), h.data(), 1, {}, "h");
  EXPECT_FALSE(r.ok());
  EXPECT_DOUBLE_EQ(r.first_want, 1.5);
  const CompareResult rb = compare_raw(ElementKind::kBF16, h.data(), b.data(), 1, {}, "b");
  EXPECT_DOUBLE_EQ(rb.first_want, 1.5);
}

TEST(Compare, OverwrittenGuardIsCounted) {
  std::vector<int> v(10);
  poison(std::span<int>(v));
  v[7] = 3;
  EXPECT_EQ(count_overwritten(std::span<const int>(v), 5, 10), 1u);
  EXPECT_EQ(count_overwritten(std::span<const int>(v), 0, 5), 0u);
}
