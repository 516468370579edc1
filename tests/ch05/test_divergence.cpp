// Exercise 5.7 — divergent and warp-uniform versions compute the same outputs.
#include <gtest/gtest.h>

#include <string>
#include <tuple>
#include <vector>

#include "ch05/divergence.hpp"
#include "cudalab/random.hpp"
#include "cudalab/testing.hpp"

using namespace cudalab;

namespace {

const std::vector<std::size_t> kSizes{1, 2, 31, 32, 33, 63, 64, 65, 255, 256, 257, 1000, 100003};

std::string param_name(
    const ::testing::TestParamInfo<std::tuple<ch05::DivergenceVariant, std::size_t>>& p) {
  return std::string(ch05::to_string(std::get<0>(p.param))) + "_n_" +
         std::to_string(std::get<1>(p.param));
}

double path(double y, double c, double d) {
  for (int s = 0; s < ch05::kDivergenceSteps; ++s) y = c * y + d;
  return y;
}

}  // namespace

class BranchyGpu
    : public ::testing::TestWithParam<std::tuple<ch05::DivergenceVariant, std::size_t>> {};

TEST_P(BranchyGpu, MatchesOracle) {
  CUDALAB_REQUIRE_GPU();
  const auto [v, n] = GetParam();
  Rng rng;
  const auto in = rng.uniform<float>(n, -10.0f, 10.0f);
  auto din = to_device(in);
  cudalab::testing::GuardedOutput<float> out(n);
  ch05::branchy_transform(din.data(), out.data(), n, v);
  CUDALAB_CHECK(cudaDeviceSynchronize());
  std::vector<float> want(n);
  for (std::size_t i = 0; i < n; ++i)
    want[i] = static_cast<float>(i % 2 == 0 ? path(in[i], ch05::kPathAScale, ch05::kPathAShift)
                                            : path(in[i], ch05::kPathBScale, ch05::kPathBShift));
  // Each step y = c y + d rounds once (FMA) with |error| <= 2^-24 |y|, and the map shrinks earlier
  // errors by |c| <= 0.99: total <= 2^-24 max|y| / (1 - 0.99) = 100 x 6e-8 x 10 = 6e-5. Use 1e-4.
  EXPECT_MATCHES(compare(out.result(), want, {1e-4, 0},
                         std::string("branchy_transform ") + ch05::to_string(v) +
                             " (exercise 5.7, n = " + std::to_string(n) + ")"));
  EXPECT_TRUE(out.guard_intact());
}

INSTANTIATE_TEST_SUITE_P(
    Variants, BranchyGpu,
    ::testing::Combine(::testing::Values(ch05::DivergenceVariant::kDivergent,
                                         ch05::DivergenceVariant::kWarpUniform),
                       ::testing::ValuesIn(kSizes)),
    param_name);

// The stream contract (cudalab/testing.hpp, replay_from_capture): every variant's kernels on the
// caller's stream; the replay of a capture must give a plain call's bits.
TEST(BranchyStreamGpu, AllWorkOnTheCallersStream) {
  CUDALAB_REQUIRE_GPU();
  const std::size_t n = 4099;
  Rng rng;
  auto din = to_device(rng.uniform<float>(n, -10.0f, 10.0f));
  cudalab::testing::GuardedOutput<float> out(n);
  for (const auto v : {ch05::DivergenceVariant::kDivergent, ch05::DivergenceVariant::kWarpUniform})
    EXPECT_TRUE(cudalab::testing::replay_matches_plain_call(
        [&](cudaStream_t s) { ch05::branchy_transform(din.data(), out.data(), n, v, s); }, out,
        std::string("branchy_transform ") + (v == ch05::DivergenceVariant::kDivergent
                                                 ? "divergent"
                                                 : "warp_uniform (exercise 5.7)")));
}

TEST(BranchyArgs, RejectsBadArguments) {
  EXPECT_THROW(ch05::branchy_transform(nullptr, nullptr, 5, ch05::DivergenceVariant::kDivergent),
               std::invalid_argument);
  EXPECT_THROW(
      ch05::branchy_transform(nullptr, nullptr, 0, static_cast<ch05::DivergenceVariant>(3)),
      std::invalid_argument);
  EXPECT_NO_THROW(
      ch05::branchy_transform(nullptr, nullptr, 0, ch05::DivergenceVariant::kWarpUniform));
}
