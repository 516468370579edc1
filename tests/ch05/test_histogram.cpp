// Exercise 5.10 — histograms against an exact integer oracle, on uniform and skewed inputs, with
// out-of-range values that must be ignored, any n and bin counts from 1 to kHistMaxBins.
#include <gtest/gtest.h>

#include <cstdint>
#include <string>
#include <tuple>
#include <vector>

#include "ch05/histogram.hpp"
#include "cudalab/random.hpp"
#include "cudalab/testing.hpp"

using namespace cudalab;

namespace {

struct Case {
  std::size_t n;
  int bins;
  bool skewed;
};

const std::vector<Case> kCases{{1, 1, false},
                               {31, 7, false},
                               {33, 256, true},
                               {255, 1, true},
                               {257, 33, false},
                               {1000, 2, true},
                               {4097, 256, true},
                               {4097, 257, false},
                               {100003, 8192, false},
                               {100003, 8192, true},
                               {(1u << 20) + 5, 100, true},
                               {(1u << 20) + 5, 4096, false}};

std::string case_name(const ::testing::TestParamInfo<std::tuple<ch05::HistogramVariant, Case>>& p) {
  const Case c = std::get<1>(p.param);
  return std::string(ch05::to_string(std::get<0>(p.param))) + "_n_" + std::to_string(c.n) +
         "_bins_" + std::to_string(c.bins) + (c.skewed ? "_skewed" : "_uniform");
}

// Values mostly in [0, bins); 1 in 64 outside it (negative or >= bins) to check they are ignored.
// Skewed: 7 in 8 values in the first min(4, bins) bins: the atomics contend.
std::vector<std::int32_t> make_input(Rng& rng, const Case& c) {
  std::vector<std::int32_t> v(c.n);
  const int hot = c.bins < 4 ? c.bins : 4;
  for (auto& x : v) {
    const int kind = rng.scalar(0, 63);
    if (kind == 0)
      x = rng.scalar(0, 1) ? -rng.scalar(1, 1000) : c.bins + rng.scalar(0, 1000);
    else if (c.skewed && kind % 8 != 0)
      x = rng.scalar(0, hot - 1);
    else
      x = rng.scalar(0, c.bins - 1);
  }
  return v;
}

}  // namespace

class HistogramGpu : public ::testing::TestWithParam<std::tuple<ch05::HistogramVariant, Case>> {};

TEST_P(HistogramGpu, MatchesOracle) {
  CUDALAB_REQUIRE_GPU();
  const auto [variant, c] = GetParam();
  Rng rng;
  const auto values = make_input(rng, c);
  std::vector<std::uint32_t> want(c.bins, 0);
  for (const auto x : values)
    if (x >= 0 && x < c.bins) ++want[x];
  auto dv = to_device(values);
  cudalab::testing::GuardedOutput<std::uint32_t> hist(c.bins);  // poisoned: the API must zero it
  ch05::histogram(dv.data(), c.n, hist.data(), c.bins, variant);
  CUDALAB_CHECK(cudaDeviceSynchronize());
  EXPECT_MATCHES(compare(hist.result(), want, {},
                         "histogram " + case_name({GetParam(), 0}) + " (exercise 5.10)"));
  EXPECT_TRUE(hist.guard_intact());
}

INSTANTIATE_TEST_SUITE_P(
    Cases, HistogramGpu,
    ::testing::Combine(::testing::Values(ch05::HistogramVariant::kGlobalAtomics,
                                         ch05::HistogramVariant::kPrivatized),
                       ::testing::ValuesIn(kCases)),
    case_name);

// Views that start 0..3 values past a 16-byte boundary, with lengths that end anywhere: a
// kernel that reads the input 16 bytes at a time must count the head before the first boundary
// and the tail after the last whole vector exactly once, and read nothing past the view.
// The stream contract (cudalab/testing.hpp, replay_from_capture): every variant's kernels and the
// zeroing of hist on the caller's stream; the replay of a capture must give a plain call's bits.
TEST(HistogramStreamGpu, AllWorkOnTheCallersStream) {
  CUDALAB_REQUIRE_GPU();
  const std::size_t n = 100'003;
  const int bins = 1000;
  DeviceBuffer<std::int32_t> dv(n);
  ch05::fill_histogram_input(dv.data(), n, bins, ch05::HistogramInput::kSkewed, Rng().seed());
  cudalab::testing::GuardedOutput<std::uint32_t> hist(static_cast<std::size_t>(bins));
  for (const auto v : {ch05::HistogramVariant::kGlobalAtomics, ch05::HistogramVariant::kPrivatized})
    EXPECT_TRUE(cudalab::testing::replay_matches_plain_call(
        [&](cudaStream_t s) { ch05::histogram(dv.data(), n, hist.data(), bins, v, s); }, hist,
        std::string("histogram ") + (v == ch05::HistogramVariant::kGlobalAtomics
                                         ? "global_atomics"
                                         : "privatized (exercise 5.10)")));
}

class HistogramViewsGpu : public ::testing::TestWithParam<ch05::HistogramVariant> {};

TEST_P(HistogramViewsGpu, MisalignedViewsMatchOracle) {
  CUDALAB_REQUIRE_GPU();
  constexpr int kBins = 37;
  constexpr std::size_t kMaxOffset = 3;
  Rng rng;
  for (const std::size_t n :
       {std::size_t{1}, std::size_t{3}, std::size_t{7}, std::size_t{4099}, std::size_t{100003}}) {
    const auto values = make_input(rng, {n + kMaxOffset, kBins, true});
    auto dv = to_device(values);
    for (std::size_t off = 0; off <= kMaxOffset; ++off) {
      std::vector<std::uint32_t> want(kBins, 0);
      for (std::size_t i = off; i < off + n; ++i)
        if (values[i] >= 0 && values[i] < kBins) ++want[static_cast<std::size_t>(values[i])];
      cudalab::testing::GuardedOutput<std::uint32_t> hist(kBins);
      ch05::histogram(dv.data() + off, n, hist.data(), kBins, GetParam());
      CUDALAB_CHECK(cudaDeviceSynchronize());
      EXPECT_MATCHES(compare(hist.result(), want, {},
                             "histogram of a view at +" + std::to_string(off) +
                                 " values, n = " + std::to_string(n) + " (exercise 5.10)"));
      EXPECT_TRUE(hist.guard_intact());
    }
  }
}

INSTANTIATE_TEST_SUITE_P(Variants, HistogramViewsGpu,
                         ::testing::Values(ch05::HistogramVariant::kGlobalAtomics,
                                           ch05::HistogramVariant::kPrivatized));

class HistogramEmptyGpu : public ::testing::TestWithParam<ch05::HistogramVariant> {};

TEST_P(HistogramEmptyGpu, ZeroElementsGiveZeroCounts) {
  CUDALAB_REQUIRE_GPU();
  cudalab::testing::GuardedOutput<std::uint32_t> hist(300);
  ch05::histogram(nullptr, 0, hist.data(), 300, GetParam());
  CUDALAB_CHECK(cudaDeviceSynchronize());
  EXPECT_MATCHES(compare(hist.result(), std::vector<std::uint32_t>(300, 0), {},
                         "histogram of 0 values (exercise 5.10)"));
}

INSTANTIATE_TEST_SUITE_P(Variants, HistogramEmptyGpu,
                         ::testing::Values(ch05::HistogramVariant::kGlobalAtomics,
                                           ch05::HistogramVariant::kPrivatized));

TEST(HistogramInputGpu, DeviceInputIsInRangeAndSkewed) {
  CUDALAB_REQUIRE_GPU();
  const std::size_t n = 100000;
  DeviceBuffer<std::int32_t> v(n);
  ch05::fill_histogram_input(v.data(), n, 1000, ch05::HistogramInput::kSkewed, 42);
  const auto h = v.to_host();
  std::size_t hot = 0;
  for (const auto x : h) {
    ASSERT_GE(x, 0);
    ASSERT_LT(x, 1000);
    hot += x < 4 ? 1 : 0;
  }
  EXPECT_GT(hot, n * 8 / 10) << "7 in 8 values should fall in the 4 hot bins";
}

TEST(HistogramArgs, RejectsBadArgumentsByName) {
  const auto throws_naming = [](auto&& call, const char* arg) {
    cudalab::testing::expect_throws_naming(call, arg);
  };
  const auto g = ch05::HistogramVariant::kGlobalAtomics;
  throws_naming([&] { ch05::histogram(nullptr, 0, nullptr, 0, g); }, "num_bins");
  throws_naming([&] { ch05::histogram(nullptr, 0, nullptr, ch05::kHistMaxBins + 1, g); },
                "num_bins");
  throws_naming([&] { ch05::histogram(nullptr, std::size_t{1} << 32, nullptr, 10, g); }, "n");
  throws_naming([&] { ch05::histogram(nullptr, 10, nullptr, 10, g); }, "values");
  throws_naming(
      [&] { ch05::histogram(nullptr, 1, nullptr, 10, static_cast<ch05::HistogramVariant>(4)); },
      "variant");
}
