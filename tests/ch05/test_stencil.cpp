// Exercise 5.5 — the 2D convolution, naive and tiled, against a double-precision CPU oracle on
// shapes that catch edge-tile and halo bugs: 1 x 1, a row, a column, odd shapes that are not
// multiples of the 32 x 32 tile, and radii 0..kConvMaxRadius.
#include <gtest/gtest.h>

#include <cmath>
#include <string>
#include <tuple>
#include <vector>

#include "ch05/stencil.hpp"
#include "cudalab/random.hpp"
#include "cudalab/testing.hpp"

using namespace cudalab;

namespace {

// Zero-padded convolution in double: the rule stated in stencil.hpp.
std::vector<float> conv2d_oracle(const std::vector<float>& in, int w, int h,
                                 const std::vector<float>& f, int r) {
  std::vector<float> out(static_cast<std::size_t>(w) * h);
  const int k = 2 * r + 1;
  for (int y = 0; y < h; ++y)
    for (int x = 0; x < w; ++x) {
      double acc = 0;
      for (int dy = 0; dy < k; ++dy)
        for (int dx = 0; dx < k; ++dx) {
          const int gx = x + dx - r, gy = y + dy - r;
          if (gx >= 0 && gx < w && gy >= 0 && gy < h)
            acc += double{f[dy * k + dx]} * in[static_cast<std::size_t>(gy) * w + gx];
        }
      out[static_cast<std::size_t>(y) * w + x] = static_cast<float>(acc);
    }
  return out;
}

struct Shape {
  int w, h, r;
};

std::string shape_name(const ::testing::TestParamInfo<std::tuple<Shape, ch05::ConvVariant>>& p) {
  const Shape s = std::get<0>(p.param);
  return std::string(std::get<1>(p.param) == ch05::ConvVariant::kNaive ? "naive" : "tiled") + "_" +
         std::to_string(s.w) + "x" + std::to_string(s.h) + "_r" + std::to_string(s.r);
}

const std::vector<Shape> kShapes{{1, 1, 1},     {1, 1, 4},   {33, 1, 2},    {1, 37, 3},
                                 {32, 32, 1},   {31, 33, 2}, {65, 31, 3},   {100, 67, 4},
                                 {257, 129, 2}, {64, 64, 0}, {1023, 517, 3}};

}  // namespace

class Conv2dGpu : public ::testing::TestWithParam<std::tuple<Shape, ch05::ConvVariant>> {};

TEST_P(Conv2dGpu, MatchesOracle) {
  CUDALAB_REQUIRE_GPU();
  const auto [s, variant] = GetParam();
  Rng rng;
  const int k = 2 * s.r + 1;
  const auto in = rng.uniform<float>(static_cast<std::size_t>(s.w) * s.h, -1.0f, 1.0f);
  const auto filter = rng.uniform<float>(static_cast<std::size_t>(k) * k, -1.0f, 1.0f);
  auto din = to_device(in), dfilter = to_device(filter);
  cudalab::testing::GuardedOutput<float> out(in.size());
  ch05::conv2d(din.data(), out.data(), s.w, s.h, dfilter.data(), s.r, variant);
  CUDALAB_CHECK(cudaDeviceSynchronize());
  // Error analysis: K = k^2 <= 81 products |f v| <= 1 summed in float (FMA: one rounding per
  // tap), |error| <= K * 2^-24 * sum |f v| <= K^2 * 6e-8 <= 4e-4 for K = 81; we use 2 K^2 2^-24.
  const double tol = 2.0 * k * k * k * k * std::ldexp(1.0, -24);
  EXPECT_MATCHES(compare(out.result(), conv2d_oracle(in, s.w, s.h, filter, s.r), {tol, 0},
                         "conv2d " + shape_name({GetParam(), 0}) + " (exercise 5.5)"));
  EXPECT_TRUE(out.guard_intact());
}

INSTANTIATE_TEST_SUITE_P(Shapes, Conv2dGpu,
                         ::testing::Combine(::testing::ValuesIn(kShapes),
                                            ::testing::Values(ch05::ConvVariant::kNaive,
                                                              ch05::ConvVariant::kTiled)),
                         shape_name);

// Shape classes against the tiled kernel's 32 x 128 output tile: width a tile multiple (64), a
// partial tile aligned to 4 (36) or odd (35); height 128, 132 or 131; radius 1 and the largest,
// 4. The image sits in front of a NaN guard zone (a halo load past its end shows), the output is
// poisoned and guarded. Also run under memcheck (the *ShapesGpu suites).
using ConvShape = std::tuple<ch05::ConvVariant, int, int, int>;  // variant, w, h, r
class Conv2dShapesGpu : public ::testing::TestWithParam<ConvShape> {};

TEST_P(Conv2dShapesGpu, TileMultipleAlignedPartialAndOdd) {
  CUDALAB_REQUIRE_GPU();
  const auto [variant, w, h, r] = GetParam();
  Rng rng;
  const int k = 2 * r + 1;
  const auto in = rng.uniform<float>(static_cast<std::size_t>(w) * h, -1.0f, 1.0f);
  const auto filter = rng.uniform<float>(static_cast<std::size_t>(k) * k, -1.0f, 1.0f);
  const cudalab::testing::GuardedInput<float> din(in, 0), dfilter(filter, 0);
  cudalab::testing::GuardedOutput<float> out(in.size());
  ch05::conv2d(din.data(), out.data(), w, h, dfilter.data(), r, variant);
  CUDALAB_CHECK(cudaDeviceSynchronize());
  const double tol = 2.0 * k * k * k * k * std::ldexp(1.0, -24);  // as in Conv2dGpu
  const std::string what = std::string("conv2d ") +
                           (variant == ch05::ConvVariant::kNaive ? "naive" : "tiled") + " " +
                           std::to_string(w) + "x" + std::to_string(h) + " r" + std::to_string(r) +
                           " (exercise 5.5, NaN behind the image and the filter)";
  EXPECT_MATCHES(compare(out.result(), conv2d_oracle(in, w, h, filter, r), {tol, 0}, what));
  EXPECT_TRUE(out.guard_intact()) << what;
}

INSTANTIATE_TEST_SUITE_P(
    Classes, Conv2dShapesGpu,
    ::testing::Combine(::testing::Values(ch05::ConvVariant::kNaive, ch05::ConvVariant::kTiled),
                       ::testing::Values(64, 36, 35), ::testing::Values(128, 132, 131),
                       ::testing::Values(1, 4)),
    [](const ::testing::TestParamInfo<ConvShape>& p) {
      return std::string(std::get<0>(p.param) == ch05::ConvVariant::kNaive ? "naive" : "tiled") +
             "_" + std::to_string(std::get<1>(p.param)) + "x" +
             std::to_string(std::get<2>(p.param)) + "_r" + std::to_string(std::get<3>(p.param));
    });

TEST(Conv2dArgs, RejectsBadArgumentsByName) {
  float* p = nullptr;
  const auto throws_naming = [](auto&& call, const char* arg) {
    cudalab::testing::expect_throws_naming(call, arg);
  };
  throws_naming([&] { ch05::conv2d(p, p, 4, 4, p, ch05::kConvMaxRadius + 1); }, "radius");
  throws_naming([&] { ch05::conv2d(p, p, 4, 4, p, -1); }, "radius");
  throws_naming([&] { ch05::conv2d(p, p, -1, 4, p, 1); }, "width");
  throws_naming([&] { ch05::conv2d(p, p, 4, -2, p, 1); }, "height");
  throws_naming([&] { ch05::conv2d(p, p, 4, 4, p, 1); }, "in");
  throws_naming([&] { ch05::conv2d(p, p, 4, 4, p, 1, static_cast<ch05::ConvVariant>(9)); },
                "variant");
}

TEST(Conv2dArgs, EmptyImageIsANoOp) {
  EXPECT_NO_THROW(ch05::conv2d(nullptr, nullptr, 0, 5, nullptr, 2));
  EXPECT_NO_THROW(ch05::conv2d(nullptr, nullptr, 7, 0, nullptr, 2, ch05::ConvVariant::kNaive));
}

// Technique (exercise 5.5): the tiled convolution loads its tile plus halo into shared memory
// (cudaFuncGetAttributes of the kernel the call launches, recorded by stream capture). The naive
// loop of global loads passes every numeric test; it fails here. The naive variant uses none.
TEST(Conv2dTechniqueGpu, TiledUsesSharedMemory) {
  CUDALAB_REQUIRE_GPU();
  const int w = 256, h = 256, r = 2;
  DeviceBuffer<float> in(std::size_t{w} * h), out(std::size_t{w} * h),
      filter((2 * r + 1) * (2 * r + 1));
  for (const auto v : {ch05::ConvVariant::kTiled, ch05::ConvVariant::kNaive}) {
    const auto c = cudalab::testing::capture_launches([&](cudaStream_t stream) {
      ch05::conv2d(in.data(), out.data(), w, h, filter.data(), r, v, stream);
    });
    ASSERT_EQ(c.kernels.size(), 1u) << "conv2d launched " << c.kernels.size() << " kernels";
    const std::size_t shared = c.kernels[0].shared_bytes();
    if (v == ch05::ConvVariant::kTiled)
      EXPECT_GT(shared, 0u)
          << "conv2d tiled (exercise 5.5): its kernel uses no shared memory: the tile and its "
             "halo belong in __shared__ memory, loaded once per block";
    else
      EXPECT_EQ(shared, 0u) << "conv2d naive: " << shared << " bytes of shared memory";
  }
}
