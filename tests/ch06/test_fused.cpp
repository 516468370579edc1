// Exercise 6.6 — GEMM + bias + ReLU: the fused epilogue and the library path (cuBLAS: exercise
// 6.3, then the elementwise kernel of 6.6) against the double CPU oracle.
#include <gtest/gtest.h>

#include <algorithm>
#include <string>
#include <vector>

#include "ch06/ch06.hpp"
#include "cudalab/cublas.hpp"
#include "cudalab/random.hpp"
#include "cudalab/testing.hpp"
#include "gemm_testing.hpp"

using namespace cudalab;
using ch06_test::Shape;

namespace {

// relu(x + b) is 1-Lipschitz, so the GEMM bound carries over, plus one rounding of the bias add
// (counted by gamma_{K+2}'s "+2").
void check_bias_relu(bool fused, const Shape& s) {
  Rng rng;
  const auto A = rng.uniform<float>(std::size_t(s.m) * s.k, -1.0f, 1.0f);
  const auto B = rng.uniform<float>(std::size_t(s.k) * s.n, -1.0f, 1.0f);
  const auto bias = rng.uniform<float>(std::size_t(s.n), -1.0f, 1.0f);
  auto want = ch06_test::gemm_dense_oracle(s, 1.0, A, B, 0.0, {});
  for (std::size_t i = 0; i < want.c.size(); ++i) {
    want.c[i] = std::max(want.c[i] + bias[i % s.n], 0.0);
    want.abs_sum[i] += std::abs(bias[i % s.n]);
  }
  auto dA = to_device(A), dB = to_device(B), dbias = to_device(bias);
  cudalab::testing::GuardedOutput<float> Y(std::size_t(s.m) * s.n);
  if (fused) {
    ch06::gemm_bias_relu_fused(s.m, s.n, s.k, dA.data(), dB.data(), dbias.data(), Y.data());
  } else {
    CublasHandle h;
    ch06::gemm_bias_relu_cublas(h, s.m, s.n, s.k, dA.data(), dB.data(), dbias.data(), Y.data());
  }
  CUDALAB_CHECK(cudaDeviceSynchronize());
  EXPECT_MATCHES(compare(Y.result(), ch06_test::to_float(want.c),
                         ch06_test::gemm_tolerance(s.k, want.abs_sum),
                         std::string(fused ? "gemm_bias_relu_fused (exercise 6.6"
                                           : "gemm_bias_relu_cublas (exercises 6.3 and 6.6") +
                             ", M x N x K = " + ch06_test::shape_name(s) + ")"));
  EXPECT_TRUE(Y.guard_intact());
}

const std::vector<Shape> kShapes{{1, 1, 1},      {17, 33, 9},  {127, 129, 131},
                                 {256, 256, 64}, {5, 300, 77}, {64, 96, 0}};

}  // namespace

class GemmBiasReluGpu : public ::testing::TestWithParam<std::tuple<bool, Shape>> {};

TEST_P(GemmBiasReluGpu, MatchesOracle) {
  CUDALAB_REQUIRE_GPU();
  const auto [fused, s] = GetParam();
  check_bias_relu(fused, s);
}

INSTANTIATE_TEST_SUITE_P(Paths, GemmBiasReluGpu,
                         ::testing::Combine(::testing::Bool(), ::testing::ValuesIn(kShapes)),
                         [](const auto& p) {
                           return std::string(std::get<0>(p.param) ? "fused_"
                                                                   : "cublas_then_kernel_") +
                                  ch06_test::shape_name(std::get<1>(p.param));
                         });

TEST(GemmBiasReluArgs, NullPointersAreRejectedByName) {
  try {
    ch06::gemm_bias_relu_fused(4, 4, 4, nullptr, nullptr, nullptr, nullptr);
    FAIL() << "expected std::invalid_argument";
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find("'A'"), std::string::npos) << e.what();
  }
  EXPECT_NO_THROW(ch06::gemm_bias_relu_fused(0, 4, 4, nullptr, nullptr, nullptr, nullptr));
}
