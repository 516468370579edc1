// Exercise 5.5 — the 2D convolution, naive and tiled, against a double-precision CPU oracle on
// shapes that catch edge-tile and halo bugs: 1 x 1, a row, a column, shapes that are not multiples
// of the reference's 128 x 32 tile, widths that are and are not multiples of 4 (the reference's
// float4 and scalar paths), views one float off 16-byte alignment, and radii 0..kConvMaxRadius;
// and, at r = 3, tall shapes with a tile row per SM or more, the ones the reference gives its
// second kernel (conv2d_strip_kernel, the stretch of 5.5), with their edge cases.
#include <gtest/gtest.h>

#include <cmath>
#include <string>
#include <tuple>
#include <vector>

#include "ch05/stencil.hpp"
#include "cudalab/device.hpp"
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

// Widths % 4 == 0 take the reference's float4 path (32, 64, 100, 132, 256, 4, 36), the others its
// scalar path; every radius has both, on one tile and on several.
const std::vector<Shape> kShapes{
    {1, 1, 1},    {1, 1, 4},    {33, 1, 2},    {1, 37, 3},  {32, 32, 1},    {31, 33, 2},
    {65, 31, 3},  {100, 67, 4}, {257, 129, 2}, {64, 64, 0}, {1023, 517, 3}, {7, 3, 0},
    {132, 33, 1}, {129, 40, 1}, {256, 1, 2},   {4, 37, 3},  {260, 70, 3},   {131, 66, 4},
    {4, 1, 0},    {388, 97, 0}, {1, 1, 3},     {33, 1, 3},  {35, 131, 3},   {36, 132, 3}};

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

// The stream contract (cudalab/testing.hpp, replay_from_capture): every variant's kernels on the
// caller's stream; the replay of a capture must give a plain call's bits.
TEST(Conv2dStreamGpu, AllWorkOnTheCallersStream) {
  CUDALAB_REQUIRE_GPU();
  const int w = 67, h = 45, r = 3, k = 2 * r + 1;
  Rng rng;
  auto din = to_device(rng.uniform<float>(static_cast<std::size_t>(w) * h, -1.0f, 1.0f));
  auto dfilter = to_device(rng.uniform<float>(static_cast<std::size_t>(k) * k, -1.0f, 1.0f));
  cudalab::testing::GuardedOutput<float> out(static_cast<std::size_t>(w) * h);
  for (const auto v : {ch05::ConvVariant::kNaive, ch05::ConvVariant::kTiled})
    EXPECT_TRUE(cudalab::testing::replay_matches_plain_call(
        [&](cudaStream_t s) {
          ch05::conv2d(din.data(), out.data(), w, h, dfilter.data(), r, v, s);
        },
        out,
        std::string("conv2d ") +
            (v == ch05::ConvVariant::kNaive ? "naive" : "tiled (exercise 5.5)")));
}

INSTANTIATE_TEST_SUITE_P(Shapes, Conv2dGpu,
                         ::testing::Combine(::testing::ValuesIn(kShapes),
                                            ::testing::Values(ch05::ConvVariant::kNaive,
                                                              ch05::ConvVariant::kTiled)),
                         shape_name);

namespace {

// One tiled or naive call on a w x h image whose input sits in front of a NaN guard zone (a halo
// load past its end shows) and whose output is poisoned and guarded; `in_offset` / `out_offset`
// floats in front of the pointers (a view one float in is not 16-byte aligned, so a kernel that
// takes the float4 path on such a view faults or misreads; the floats in front of the output stay
// untouched).
void check_conv2d(ch05::ConvVariant variant, int w, int h, int r, std::size_t in_offset = 0,
                  std::size_t out_offset = 0) {
  Rng rng;
  const int k = 2 * r + 1;
  const std::size_t n = static_cast<std::size_t>(w) * h;
  const auto in = rng.uniform<float>(n, -1.0f, 1.0f);
  const auto filter = rng.uniform<float>(static_cast<std::size_t>(k) * k, -1.0f, 1.0f);
  const cudalab::testing::GuardedInput<float> din(in, in_offset), dfilter(filter, 0);
  cudalab::testing::GuardedOutput<float> out(n + out_offset);
  ch05::conv2d(din.data(), out.data() + out_offset, w, h, dfilter.data(), r, variant);
  CUDALAB_CHECK(cudaDeviceSynchronize());
  const double tol = 2.0 * k * k * k * k * std::ldexp(1.0, -24);  // as in Conv2dGpu
  const std::string what =
      std::string("conv2d ") + (variant == ch05::ConvVariant::kNaive ? "naive" : "tiled") + " " +
      std::to_string(w) + "x" + std::to_string(h) + " r" + std::to_string(r) + " in+" +
      std::to_string(in_offset) + " out+" + std::to_string(out_offset) +
      " (exercise 5.5, NaN behind the image and the filter)";
  const auto all = out.result();
  const std::vector<float> got(all.begin() + static_cast<std::ptrdiff_t>(out_offset), all.end());
  EXPECT_MATCHES(compare(got, conv2d_oracle(in, w, h, filter, r), {tol, 0}, what));
  EXPECT_TRUE(out.guard_intact()) << what;
  EXPECT_TRUE(out.untouched(0, out_offset, what));
}

}  // namespace

// Shape classes against the reference's 128 x 32 output tile: width a tile multiple (256), a
// partial tile aligned to 4 (132: the float4 path) or odd (131: the scalar path); height 128 (a
// tile multiple), 132 or 131; every radius. Also run under memcheck (the *ShapesGpu suites).
using ConvShape = std::tuple<ch05::ConvVariant, int, int, int>;  // variant, w, h, r
class Conv2dShapesGpu : public ::testing::TestWithParam<ConvShape> {};

namespace {
std::string conv_shape_name(const ::testing::TestParamInfo<ConvShape>& p) {
  return std::string(std::get<0>(p.param) == ch05::ConvVariant::kNaive ? "naive" : "tiled") + "_" +
         std::to_string(std::get<1>(p.param)) + "x" + std::to_string(std::get<2>(p.param)) + "_r" +
         std::to_string(std::get<3>(p.param));
}
}  // namespace

TEST_P(Conv2dShapesGpu, TileMultipleAlignedPartialAndOdd) {
  CUDALAB_REQUIRE_GPU();
  const auto [variant, w, h, r] = GetParam();
  check_conv2d(variant, w, h, r);
}

INSTANTIATE_TEST_SUITE_P(
    Classes, Conv2dShapesGpu,
    ::testing::Combine(::testing::Values(ch05::ConvVariant::kNaive, ch05::ConvVariant::kTiled),
                       ::testing::Values(256, 132, 131), ::testing::Values(128, 132, 131),
                       ::testing::Values(0, 1, 2, 3, 4)),
    conv_shape_name);

// Views one float in: the input, the output or both (so no float4 path may be taken although
// width % 4 == 0; a kernel that checks one pointer's alignment only faults or misreads), on a
// width that is a multiple of 4 (132) and one that is not (131), a partial bottom tile, every
// radius.
class Conv2dAlignmentGpu : public ::testing::TestWithParam<std::tuple<ch05::ConvVariant, int>> {
};  // variant, r

TEST_P(Conv2dAlignmentGpu, MisalignedViews) {
  CUDALAB_REQUIRE_GPU();
  const auto [variant, r] = GetParam();
  for (const int w : {132, 131}) {
    check_conv2d(variant, w, 67, r, /*in_offset*/ 1, /*out_offset*/ 0);
    check_conv2d(variant, w, 67, r, 0, 1);
    check_conv2d(variant, w, 67, r, 1, 1);
  }
}

INSTANTIATE_TEST_SUITE_P(
    Views, Conv2dAlignmentGpu,
    ::testing::Combine(::testing::Values(ch05::ConvVariant::kNaive, ch05::ConvVariant::kTiled),
                       ::testing::Values(0, 1, 2, 3, 4)),
    [](const ::testing::TestParamInfo<std::tuple<ch05::ConvVariant, int>>& p) {
      return std::string(std::get<0>(p.param) == ch05::ConvVariant::kNaive ? "naive" : "tiled") +
             "_r" + std::to_string(std::get<1>(p.param));
    });

// Tall shapes at r = 3: the reference runs its second kernel, conv2d_strip_kernel, where
// conv2d_strip_applies (stencil_tiled.cu) says so: width % 4 == 0, both pointers 16-byte aligned,
// and at least one of its kStripTileX x kStripTileY output tiles per SM (smaller images stay on
// conv2d_tiled_kernel). The height is therefore taken from this GPU's SM count: whole rows of
// such tiles, enough for one tile per SM, plus `extra` rows. Any kernel must pass them; they are
// here so that the reference's strip kernel meets its edge cases: a width of one float4 (4), tile
// columns with a 4- or 8-wide partial tile to their right (1028, 2056: halo columns across a tile
// edge), bottom tiles of 1, 5, 100 and 252 rows (their input rows, rows + 6, are a multiple of 7,
// the kernel's row group at r = 3, only for 1) and none (extra 0: whole tiles only); a width that
// is not a multiple of 4 (35: conv2d_tiled_kernel's scalar path); and radii 1, 2 and 4 on a tall
// shape, where the r = 3 kernel must not run. Tiled only (the naive kernel's own cases are above);
// most of their time is the CPU oracle.
namespace {

constexpr int kStripTileX = 1024, kStripTileY = 253;  // the reference's StripConfig
int tall_height(int w, int extra) {
  const int tile_cols = (w + kStripTileX - 1) / kStripTileX, sms = current_sm_count();
  return kStripTileY * ((sms + tile_cols - 1) / tile_cols) + extra;
}

struct TallShape {
  int w, extra, r;
};

}  // namespace

class Conv2dTallShapesGpu : public ::testing::TestWithParam<TallShape> {};

TEST_P(Conv2dTallShapesGpu, MatchesOracle) {
  CUDALAB_REQUIRE_GPU();
  const TallShape s = GetParam();
  check_conv2d(ch05::ConvVariant::kTiled, s.w, tall_height(s.w, s.extra), s.r);
}

INSTANTIATE_TEST_SUITE_P(StripTiles, Conv2dTallShapesGpu,
                         ::testing::Values(TallShape{4, 1, 3}, TallShape{36, 100, 3},
                                           TallShape{132, 0, 3}, TallShape{1028, 5, 3},
                                           TallShape{2056, 252, 3}, TallShape{35, 100, 3},
                                           TallShape{36, 100, 1}, TallShape{36, 100, 2},
                                           TallShape{36, 100, 4}),
                         [](const ::testing::TestParamInfo<TallShape>& p) {
                           return std::to_string(p.param.w) + "_plus" +
                                  std::to_string(p.param.extra) + "_r" + std::to_string(p.param.r);
                         });

// A tall r = 3 shape through views one float in (input, output, both): no 16-byte path may be
// taken although width % 4 == 0 (the reference's strip kernel copies and stores 16 bytes at a
// time: it must not run there), and the aligned view for comparison.
TEST(Conv2dTallAlignmentGpu, MisalignedViews) {
  CUDALAB_REQUIRE_GPU();
  const int w = 132, h = tall_height(w, 67), r = 3;
  check_conv2d(ch05::ConvVariant::kTiled, w, h, r, 0, 0);
  check_conv2d(ch05::ConvVariant::kTiled, w, h, r, /*in_offset*/ 1, /*out_offset*/ 0);
  check_conv2d(ch05::ConvVariant::kTiled, w, h, r, 0, 1);
  check_conv2d(ch05::ConvVariant::kTiled, w, h, r, 1, 1);
}

// The stream contract on a tall r = 3 shape (the reference's strip kernel, which opts in to more
// than 48 KB of shared memory before its launch): its kernel on the caller's stream too.
TEST(Conv2dStreamGpu, TallShapeOnTheCallersStream) {
  CUDALAB_REQUIRE_GPU();
  const int w = 132, h = tall_height(w, 67), r = 3, k = 2 * r + 1;
  Rng rng;
  auto din = to_device(rng.uniform<float>(static_cast<std::size_t>(w) * h, -1.0f, 1.0f));
  auto dfilter = to_device(rng.uniform<float>(static_cast<std::size_t>(k) * k, -1.0f, 1.0f));
  cudalab::testing::GuardedOutput<float> out(static_cast<std::size_t>(w) * h);
  EXPECT_TRUE(cudalab::testing::replay_matches_plain_call(
      [&](cudaStream_t s) {
        ch05::conv2d(din.data(), out.data(), w, h, dfilter.data(), r, ch05::ConvVariant::kTiled, s);
      },
      out, "conv2d tiled (exercise 5.5), " + std::to_string(w) + "x" + std::to_string(h) + " r3"));
}

// The benchmark's kind of image, 8192 x 8209 (8209 = 32 x 253 + 113 rows: a partial bottom tile
// for the reference's strip kernel, which takes it at r = 3 on GPUs of up to 264 SMs), at r = 3
// and r = 1, and 8191 x 8209 at r = 3 (the scalar path). Large: the CPU oracle takes seconds.
TEST(Conv2dLargeGpu, BenchmarkSizedImages) {
  CUDALAB_REQUIRE_GPU();
  check_conv2d(ch05::ConvVariant::kTiled, 8192, 8209, 3);
  check_conv2d(ch05::ConvVariant::kTiled, 8192, 8209, 1);
  check_conv2d(ch05::ConvVariant::kTiled, 8191, 8209, 3);
}

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
