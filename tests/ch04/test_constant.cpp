// Exercise 4.4 — polynomial evaluation with coefficients in global or constant memory, read by
// every lane (broadcast) or one polynomial per lane; all four must agree with a double oracle.
//
// Tolerance: Horner's rule in float with |x| < 1 and |c_k| <= 1 has a forward error below
// gamma_{2T} * sum_k |c_k| |x|^k <= 2 T u * T (u = 2^-24, T terms): 1.2e-4 for T = 32. The FMA
// variant is tighter; we allow 2 T^2 u + 1e-7.
#include <gtest/gtest.h>

#include <cmath>
#include <string>
#include <tuple>
#include <vector>

#include "ch04/ch04.hpp"
#include "cudalab/random.hpp"
#include "cudalab/testing.hpp"

using namespace cudalab;

namespace {
using Case = std::tuple<ch04::CoeffMemory, ch04::CoeffPattern, std::size_t, int>;  // + n, terms

std::vector<float> poly_oracle(const std::vector<float>& x, const std::vector<float>& c, int terms,
                               ch04::CoeffPattern pattern) {
  std::vector<float> y(x.size());
  for (std::size_t i = 0; i < x.size(); ++i) {
    const std::size_t p = pattern == ch04::CoeffPattern::kPerLane ? i % ch04::kPolys : 0;
    double acc = c[static_cast<std::size_t>(terms - 1) * ch04::kPolys + p];
    for (int k = terms - 2; k >= 0; --k)
      acc = acc * x[i] + c[static_cast<std::size_t>(k) * ch04::kPolys + p];
    y[i] = static_cast<float>(acc);
  }
  return y;
}

Tolerance poly_tolerance(int terms) {
  return {2.0 * terms * terms * std::ldexp(1.0, -24) + 1e-7, 0.0};
}

std::string label(ch04::CoeffMemory m, ch04::CoeffPattern p) {
  return std::string(m == ch04::CoeffMemory::kGlobal ? "global" : "constant") + "_" +
         (p == ch04::CoeffPattern::kBroadcast ? "broadcast" : "per_lane");
}
}  // namespace

class PolynomialGpu : public ::testing::TestWithParam<Case> {};

TEST_P(PolynomialGpu, MatchesDoubleOracle) {
  CUDALAB_REQUIRE_GPU();
  const auto [memory, pattern, n, terms] = GetParam();
  Rng rng;
  const auto x = rng.uniform<float>(n, -0.99f, 0.99f);
  const auto c = rng.uniform<float>(static_cast<std::size_t>(terms) * ch04::kPolys, -1.0f, 1.0f);
  auto dx = to_device(x), dc = to_device(c);
  cudalab::testing::GuardedOutput<float> y(n);
  ch04::eval_polynomials(dx.data(), y.data(), n, dc.data(), terms, memory, pattern);
  CUDALAB_CHECK(cudaDeviceSynchronize());
  EXPECT_MATCHES(compare(y.result(), poly_oracle(x, c, terms, pattern), poly_tolerance(terms),
                         "eval_polynomials " + label(memory, pattern) + " (exercise 4.4, n = " +
                             std::to_string(n) + ", terms = " + std::to_string(terms) + ")"));
  EXPECT_TRUE(y.guard_intact());
}

INSTANTIATE_TEST_SUITE_P(
    Cases, PolynomialGpu,
    ::testing::Combine(::testing::Values(ch04::CoeffMemory::kGlobal, ch04::CoeffMemory::kConstant),
                       ::testing::Values(ch04::CoeffPattern::kBroadcast,
                                         ch04::CoeffPattern::kPerLane),
                       ::testing::Values(std::size_t{1}, std::size_t{33}, std::size_t{1000},
                                         std::size_t{(1u << 20) + 3}),
                       ::testing::Values(1, 7, 32)),
    [](const ::testing::TestParamInfo<Case>& p) {
      return label(std::get<0>(p.param), std::get<1>(p.param)) + "_n_" +
             std::to_string(std::get<2>(p.param)) + "_terms_" +
             std::to_string(std::get<3>(p.param));
    });

// The stream contract (cudalab/testing.hpp, replay_from_capture): all the work on the caller's
// stream. A launch without the stream argument runs on the legacy default stream while the call is
// recorded, not in the recorded graph, so the replay leaves the output
// poisoned. With kConstant the coefficients' copy to the bank must be in the graph too.
class PolynomialStreamGpu
    : public ::testing::TestWithParam<std::tuple<ch04::CoeffMemory, ch04::CoeffPattern>> {};

TEST_P(PolynomialStreamGpu, AllWorkOnTheCallersStream) {
  CUDALAB_REQUIRE_GPU();
  const auto [memory, pattern] = GetParam();
  const std::size_t n = 1000;
  const int terms = 7;
  Rng rng;
  const auto x = rng.uniform<float>(n, -0.99f, 0.99f);
  const auto c = rng.uniform<float>(static_cast<std::size_t>(terms) * ch04::kPolys, -1.0f, 1.0f);
  auto dx = to_device(x), dc = to_device(c);
  cudalab::testing::GuardedOutput<float> y(n);
  cudalab::testing::replay_from_capture(
      [&](cudaStream_t s) {
        ch04::eval_polynomials(dx.data(), y.data(), n, dc.data(), terms, memory, pattern, s);
      },
      [&] { y.repoison(); });
  EXPECT_MATCHES(compare(y.result(), poly_oracle(x, c, terms, pattern), poly_tolerance(terms),
                         "eval_polynomials " + label(memory, pattern) +
                             " replayed from a capture of its stream (exercise 4.4)"));
}

INSTANTIATE_TEST_SUITE_P(
    Cases, PolynomialStreamGpu,
    ::testing::Combine(::testing::Values(ch04::CoeffMemory::kGlobal, ch04::CoeffMemory::kConstant),
                       ::testing::Values(ch04::CoeffPattern::kBroadcast,
                                         ch04::CoeffPattern::kPerLane)),
    [](const auto& p) { return label(std::get<0>(p.param), std::get<1>(p.param)); });

// The __constant__ bank outlives the call: a second call with other coefficients must not see
// the first call's (a copy skipped or sized from the wrong count would).
TEST(PolynomialConstantGpu, NewCoefficientsReplaceOldOnes) {
  CUDALAB_REQUIRE_GPU();
  Rng rng;
  const std::size_t n = 4099;
  const auto x = rng.uniform<float>(n, -0.99f, 0.99f);
  auto dx = to_device(x);
  for (const int terms : {32, 5}) {
    const auto c = rng.uniform<float>(static_cast<std::size_t>(terms) * ch04::kPolys, -1.0f, 1.0f);
    auto dc = to_device(c);
    cudalab::testing::GuardedOutput<float> y(n);
    ch04::eval_polynomials(dx.data(), y.data(), n, dc.data(), terms, ch04::CoeffMemory::kConstant,
                           ch04::CoeffPattern::kPerLane);
    CUDALAB_CHECK(cudaDeviceSynchronize());
    EXPECT_MATCHES(compare(
        y.result(), poly_oracle(x, c, terms, ch04::CoeffPattern::kPerLane), poly_tolerance(terms),
        "eval_polynomials constant, second set of coefficients (terms = " + std::to_string(terms) +
            ")"));
  }
}

TEST(PolynomialArgs, RejectsBadTermsAndPointers) {
  EXPECT_THROW(ch04::eval_polynomials(nullptr, nullptr, 0, nullptr, 0, ch04::CoeffMemory::kGlobal,
                                      ch04::CoeffPattern::kBroadcast),
               std::invalid_argument);
  EXPECT_THROW(ch04::eval_polynomials(nullptr, nullptr, 0, nullptr, ch04::kMaxTerms + 1,
                                      ch04::CoeffMemory::kConstant, ch04::CoeffPattern::kBroadcast),
               std::invalid_argument);
  try {
    ch04::eval_polynomials(nullptr, nullptr, 10, nullptr, 4, ch04::CoeffMemory::kConstant,
                           ch04::CoeffPattern::kBroadcast);
    FAIL() << "expected std::invalid_argument";
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find("'coeffs'"), std::string::npos) << e.what();
  }
}
