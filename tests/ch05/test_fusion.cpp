// Exercise 5.9 — fused and three-kernel bias + ReLU + scale give the same, exact result.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <string>
#include <vector>

#include "ch05/fusion.hpp"
#include "cudalab/device_fill.hpp"
#include "cudalab/random.hpp"
#include "cudalab/testing.hpp"

using namespace cudalab;

namespace {

struct Shape {
  std::size_t rows, cols;
};
const std::vector<Shape> kShapes{{1, 1},    {1, 257},   {300, 1},   {7, 31},
                                 {33, 255}, {65, 1000}, {513, 2049}};

std::string shape_name(const ::testing::TestParamInfo<Shape>& p) {
  return std::to_string(p.param.rows) + "x" + std::to_string(p.param.cols);
}

// float add (one rounding), max (exact), float multiply (one rounding): both variants and this
// oracle round identically, so the comparison is exact.
std::vector<float> oracle(const std::vector<float>& x, const std::vector<float>& bias, Shape s,
                          float scale) {
  std::vector<float> y(x.size());
  for (std::size_t r = 0; r < s.rows; ++r)
    for (std::size_t c = 0; c < s.cols; ++c) {
      const float t = x[r * s.cols + c] + bias[c];
      y[r * s.cols + c] = scale * std::max(t, 0.0f);
    }
  return y;
}

}  // namespace

class BiasReluScaleGpu : public ::testing::TestWithParam<Shape> {};

TEST_P(BiasReluScaleGpu, BothVariantsMatchTheOracleExactly) {
  CUDALAB_REQUIRE_GPU();
  const Shape s = GetParam();
  Rng rng;
  const auto x = rng.uniform<float>(s.rows * s.cols, -2.0f, 2.0f);
  const auto bias = rng.uniform<float>(s.cols, -1.0f, 1.0f);
  const float scale = rng.scalar(0.5f, 3.0f);
  auto dx = to_device(x), db = to_device(bias);
  const auto want = oracle(x, bias, s, scale);
  for (const auto v : {ch05::FusionVariant::kThreeKernels, ch05::FusionVariant::kFused}) {
    cudalab::testing::GuardedOutput<float> y(x.size());
    ch05::bias_relu_scale(dx.data(), db.data(), y.data(), s.rows, s.cols, scale, v);
    CUDALAB_CHECK(cudaDeviceSynchronize());
    EXPECT_MATCHES(compare(y.result(), want, {},
                           std::string("bias_relu_scale ") + ch05::to_string(v) +
                               " (exercise 5.9, " + shape_name({s, 0}) + ")"));
    EXPECT_TRUE(y.guard_intact());
  }
}

TEST_P(BiasReluScaleGpu, InPlaceWorks) {
  CUDALAB_REQUIRE_GPU();
  const Shape s = GetParam();
  Rng rng;
  const auto x = rng.uniform<float>(s.rows * s.cols, -2.0f, 2.0f);
  const auto bias = rng.uniform<float>(s.cols, -1.0f, 1.0f);
  const auto want = oracle(x, bias, s, 1.5f);
  for (const auto v : {ch05::FusionVariant::kThreeKernels, ch05::FusionVariant::kFused}) {
    auto dx = to_device(x), db = to_device(bias);
    ch05::bias_relu_scale(dx.data(), db.data(), dx.data(), s.rows, s.cols, 1.5f, v);
    EXPECT_MATCHES(compare(dx.to_host(), want, {},
                           std::string("bias_relu_scale in place ") + ch05::to_string(v) +
                               " (exercise 5.9, " + shape_name({s, 0}) + ")"));
  }
}

// The stream contract (cudalab/testing.hpp, replay_from_capture): every variant's kernels on the
// caller's stream; the replay of a capture must give a plain call's bits.
TEST(BiasReluScaleStreamGpu, AllWorkOnTheCallersStream) {
  CUDALAB_REQUIRE_GPU();
  const std::size_t rows = 33, cols = 129;
  Rng rng;
  auto dx = to_device(rng.uniform<float>(rows * cols, -2.0f, 2.0f));
  auto db = to_device(rng.uniform<float>(cols, -1.0f, 1.0f));
  cudalab::testing::GuardedOutput<float> y(rows * cols);
  for (const auto v : {ch05::FusionVariant::kThreeKernels, ch05::FusionVariant::kFused})
    EXPECT_TRUE(cudalab::testing::replay_matches_plain_call(
        [&](cudaStream_t s) {
          ch05::bias_relu_scale(dx.data(), db.data(), y.data(), rows, cols, 1.5f, v, s);
        },
        y, std::string("bias_relu_scale ") + ch05::to_string(v) + " (exercise 5.9)"));
}

INSTANTIATE_TEST_SUITE_P(Shapes, BiasReluScaleGpu, ::testing::ValuesIn(kShapes), shape_name);

// More rows than a grid's y dimension (65535): the row loop must stride.
TEST(BiasReluScaleRowsGpu, ManyRows) {
  CUDALAB_REQUIRE_GPU();
  const Shape s{70001, 3};
  Rng rng;
  const auto x = rng.uniform<float>(s.rows * s.cols, -2.0f, 2.0f);
  const auto bias = rng.uniform<float>(s.cols, -1.0f, 1.0f);
  auto dx = to_device(x), db = to_device(bias);
  const auto want = oracle(x, bias, s, 2.0f);
  for (const auto v : {ch05::FusionVariant::kThreeKernels, ch05::FusionVariant::kFused}) {
    cudalab::testing::GuardedOutput<float> y(x.size());
    ch05::bias_relu_scale(dx.data(), db.data(), y.data(), s.rows, s.cols, 2.0f, v);
    EXPECT_MATCHES(
        compare(y.result(), want, {},
                std::string("bias_relu_scale ") + ch05::to_string(v) + " (exercise 5.9, 70001x3)"));
  }
}

// Index width: 65537 x 32771 = 2^31 + 2,182,139 elements (8.6 GB, in place): the element offset
// r * cols + c passes 2^31 in the last rows, where a 32-bit product breaks. x from the device fill;
// sampled elements (both sides of 2^31, the last, random ones) against the exact oracle. Both
// variants, each on a fresh fill (in place: the first would otherwise feed the second).
TEST(BiasReluScaleLargeGpu, PastTwoToThe31Elements) {
  const Shape s{65537, 32771};
  const std::size_t n = s.rows * s.cols;
  CUDALAB_REQUIRE_DEVICE_MEMORY(n * sizeof(float) + (std::size_t{1} << 30));
  const std::uint64_t seed = Rng().seed();
  Rng rng(seed);
  const auto bias = rng.uniform<float>(s.cols, -1.0f, 1.0f);
  const float scale = 1.5f;
  auto db = to_device(bias);
  DeviceBuffer<float> y(n);
  const auto idx = cudalab::testing::boundary_samples(n, seed);
  std::vector<float> want(idx.size());
  for (std::size_t k = 0; k < idx.size(); ++k)
    want[k] = scale * std::max(uniform_at(seed, idx[k], -2.0f, 2.0f) + bias[idx[k] % s.cols], 0.0f);
  for (const auto v : {ch05::FusionVariant::kThreeKernels, ch05::FusionVariant::kFused}) {
    fill_uniform_device(y.data(), n, seed, -2.0f, 2.0f);
    ch05::bias_relu_scale(y.data(), db.data(), y.data(), s.rows, s.cols, scale, v);
    CUDALAB_CHECK(cudaDeviceSynchronize());
    EXPECT_TRUE(cudalab::testing::samples_match(
        idx, cudalab::testing::download_at(y.data(), idx), want, {},
        std::string("bias_relu_scale ") + ch05::to_string(v) +
            " (exercise 5.9, 65537 x 32771 in place: offsets past 2^31)"));
  }
}

TEST(BiasReluScaleArgs, RejectsBadArguments) {
  EXPECT_THROW(
      ch05::bias_relu_scale(nullptr, nullptr, nullptr, 2, 2, 1.0f, ch05::FusionVariant::kFused),
      std::invalid_argument);
  EXPECT_THROW(ch05::bias_relu_scale(nullptr, nullptr, nullptr, 0, 0, 1.0f,
                                     static_cast<ch05::FusionVariant>(5)),
               std::invalid_argument);
  EXPECT_NO_THROW(
      ch05::bias_relu_scale(nullptr, nullptr, nullptr, 0, 9, 1.0f, ch05::FusionVariant::kFused));
  EXPECT_NO_THROW(ch05::bias_relu_scale(nullptr, nullptr, nullptr, 9, 0, 1.0f,
                                        ch05::FusionVariant::kThreeKernels));
}
