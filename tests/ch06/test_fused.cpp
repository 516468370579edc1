// Exercise 6.6 — GEMM + bias + ReLU: the fused epilogue and the library path (cuBLAS: exercise
// 6.3, then the elementwise kernel of 6.6) against the double CPU oracle.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <string>
#include <tuple>
#include <vector>

#include "ch06/ch06.hpp"
#include "cudalab/cublas.hpp"
#include "cudalab/device_fill.hpp"
#include "cudalab/memory.hpp"
#include "cudalab/random.hpp"
#include "cudalab/testing.hpp"
#include "gemm_testing.hpp"

using namespace cudalab;
using ch06::WarptileTile;
using ch06_test::Shape;

namespace {

// relu(x + b) is 1-Lipschitz, so the GEMM bound carries over, plus one rounding of the bias add
// (counted by gamma_{K+2}'s "+2"). The fused path runs step 7 with `tile` (kAuto: the planner's);
// `offsets` (bit 0: A, 1: B, 2: Y) puts that matrix at +1 float of its allocation (4-byte aligned,
// not 16), A and B in front of NaN guard zones.
void check_bias_relu(bool fused, const Shape& s, WarptileTile tile = WarptileTile::kAuto,
                     int offsets = 0, bool skinny_any_m = false) {
  Rng rng;
  const auto A = rng.uniform<float>(std::size_t(s.m) * s.k, -1.0f, 1.0f);
  const auto B = rng.uniform<float>(std::size_t(s.k) * s.n, -1.0f, 1.0f);
  const auto bias = rng.uniform<float>(std::size_t(s.n), -1.0f, 1.0f);
  auto want = ch06_test::gemm_dense_oracle(s, 1.0, A, B, 0.0, {});
  for (std::size_t i = 0; i < want.c.size(); ++i) {
    want.c[i] = std::max(want.c[i] + bias[i % s.n], 0.0);
    want.abs_sum[i] += std::abs(bias[i % s.n]);
  }
  const std::size_t a_off = offsets & 1, b_off = (offsets >> 1) & 1, y_off = (offsets >> 2) & 1;
  const cudalab::testing::GuardedInput<float> dA(A, a_off), dB(B, b_off);
  auto dbias = to_device(bias);
  const std::size_t mn = std::size_t(s.m) * s.n;
  cudalab::testing::GuardedOutput<float> Y(y_off + mn);
  float* y = Y.data() + y_off;
  if (skinny_any_m) {
    ch06::gemm_bias_relu_skinny(s.m, s.n, s.k, dA.data(), dB.data(), dbias.data(), y);
  } else if (fused) {
    ch06::gemm_bias_relu_fused(tile, s.m, s.n, s.k, dA.data(), dB.data(), dbias.data(), y);
  } else {
    CublasHandle h;
    ch06::gemm_bias_relu_cublas(h, s.m, s.n, s.k, dA.data(), dB.data(), dbias.data(), y);
  }
  CUDALAB_CHECK(cudaDeviceSynchronize());
  const auto all = Y.result();
  const std::vector<float> got(all.begin() + static_cast<std::ptrdiff_t>(y_off), all.end());
  const std::string w =
      std::string(skinny_any_m ? "gemm_bias_relu_skinny (exercise 6.6's epilogue"
                  : fused      ? "gemm_bias_relu_fused (exercise 6.6"
                               : "gemm_bias_relu_cublas (exercises 6.3 and 6.6") +
      (fused && !skinny_any_m && ch06::fused_takes_skinny(tile, s.m) ? ", the skinny kernel" : "") +
      (tile != WarptileTile::kAuto ? ", tile " + std::string(ch06::to_string(tile)) : "") +
      ", M x N x K = " + ch06_test::shape_name(s) +
      (offsets != 0 ? ", A +" + std::to_string(a_off) + ", B +" + std::to_string(b_off) + ", Y +" +
                          std::to_string(y_off) + " floats"
                    : "") +
      ")";
  EXPECT_MATCHES(
      compare(got, ch06_test::to_float(want.c), ch06_test::gemm_tolerance(s.k, want.abs_sum), w));
  EXPECT_TRUE(Y.guard_intact()) << w;
  EXPECT_TRUE(Y.untouched(0, y_off, w));
}

const std::vector<Shape> kShapes{{1, 1, 1},      {17, 33, 9},  {127, 129, 131},
                                 {256, 256, 64}, {5, 300, 77}, {64, 96, 0}};

}  // namespace

// The stream contract (cudalab/testing.hpp, replay_from_capture): the fused kernel (6.6), and
// cuBLAS plus the elementwise kernel of the library path (6.3 then 6.6), on the caller's stream;
// the replay of a capture must give a plain call's bits. One test per path: each grades its own
// exercises (tests/ch06/CMakeLists.txt).
struct StreamInputs {
  Shape s{127, 129, 131};
  Rng rng;
  DeviceBuffer<float> dA = to_device(rng.uniform<float>(std::size_t(s.m) * s.k, -1.0f, 1.0f));
  DeviceBuffer<float> dB = to_device(rng.uniform<float>(std::size_t(s.k) * s.n, -1.0f, 1.0f));
  DeviceBuffer<float> dbias = to_device(rng.uniform<float>(std::size_t(s.n), -1.0f, 1.0f));
};

TEST(GemmBiasReluStreamGpu, FusedPathOnTheCallersStream) {
  CUDALAB_REQUIRE_GPU();
  StreamInputs in;
  const Shape& s = in.s;
  cudalab::testing::GuardedOutput<float> Y(std::size_t(s.m) * s.n);
  EXPECT_TRUE(cudalab::testing::replay_matches_plain_call(
      [&](cudaStream_t stream) {
        ch06::gemm_bias_relu_fused(s.m, s.n, s.k, in.dA.data(), in.dB.data(), in.dbias.data(),
                                   Y.data(), stream);
      },
      Y, "gemm_bias_relu_fused (exercise 6.6)"));
}

TEST(GemmBiasReluStreamGpu, LibraryPathOnTheCallersStream) {
  CUDALAB_REQUIRE_GPU();
  StreamInputs in;
  const Shape& s = in.s;
  cudalab::testing::GuardedOutput<float> Y(std::size_t(s.m) * s.n);
  CublasHandle h;
  EXPECT_TRUE(cudalab::testing::replay_matches_plain_call(
      [&](cudaStream_t stream) {
        ch06::gemm_bias_relu_cublas(h, s.m, s.n, s.k, in.dA.data(), in.dB.data(), in.dbias.data(),
                                    Y.data(), stream);
      },
      Y, "gemm_bias_relu_cublas (exercises 6.3 and 6.6)", {}, 1e-5));
}

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

// The fused path with each step-7 tile forced: partial tiles in M, N and K, odd rows (no float4),
// the benchmark's 512 x 1024 x 1024 (where the planner picks 64 x 64 on an H100), and misaligned
// views of A, B and Y (offsets 1, 2, 4, 7) on a float4-friendly and an odd shape.
const std::vector<Shape> kTileShapes{{1, 1, 1},        {33, 65, 127},   {64, 64, 8},
                                     {65, 63, 9},      {132, 132, 132}, {513, 1025, 1023},
                                     {512, 1024, 1024}};
using TileParam = std::tuple<WarptileTile, Shape, int>;  // tile, shape, offsets
class GemmBiasReluTileGpu : public ::testing::TestWithParam<TileParam> {};

TEST_P(GemmBiasReluTileGpu, MatchesOracle) {
  CUDALAB_REQUIRE_GPU();
  const auto [tile, s, offsets] = GetParam();
  check_bias_relu(true, s, tile, offsets);
}

std::string tile_param_name(const ::testing::TestParamInfo<TileParam>& p) {
  const auto [tile, s, offsets] = p.param;
  return "fused_" + std::string(ch06::to_string(tile)) + "_" + ch06_test::shape_name(s) +
         (offsets != 0 ? "_off" + std::to_string(offsets) : "");
}

INSTANTIATE_TEST_SUITE_P(Shapes, GemmBiasReluTileGpu,
                         ::testing::Combine(::testing::Values(WarptileTile::k128x128,
                                                              WarptileTile::k64x64),
                                            ::testing::ValuesIn(kTileShapes), ::testing::Values(0)),
                         tile_param_name);
INSTANTIATE_TEST_SUITE_P(
    Offsets, GemmBiasReluTileGpu,
    ::testing::Combine(::testing::Values(WarptileTile::k128x128, WarptileTile::k64x64),
                       ::testing::Values(Shape{132, 132, 132}, Shape{68, 67, 68}),
                       ::testing::Values(1, 2, 4, 7)),
    tile_param_name);

TEST(GemmBiasReluArgs, NullPointersAreRejectedByName) {
  try {
    ch06::gemm_bias_relu_fused(4, 4, 4, nullptr, nullptr, nullptr, nullptr);
    FAIL() << "expected std::invalid_argument";
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find("'A'"), std::string::npos) << e.what();
  }
  EXPECT_NO_THROW(ch06::gemm_bias_relu_fused(0, 4, 4, nullptr, nullptr, nullptr, nullptr));
  auto message_of = [](auto&& f) { return cudalab::testing::invalid_argument_message(f); };
  EXPECT_NE(message_of([] {
              ch06::gemm_bias_relu_fused(static_cast<WarptileTile>(9), 4, 4, 4, nullptr, nullptr,
                                         nullptr, nullptr);
            }).find("'tile'"),
            std::string::npos);
  for (const WarptileTile t : {WarptileTile::k128x128, WarptileTile::k64x64}) {
    EXPECT_NE(message_of([&] {
                ch06::gemm_bias_relu_fused(t, 4, 4, 4, nullptr, nullptr, nullptr, nullptr);
              }).find("'A'"),
              std::string::npos);
    EXPECT_NO_THROW(ch06::gemm_bias_relu_fused(t, 4, 0, 4, nullptr, nullptr, nullptr, nullptr));
  }
  EXPECT_NE(message_of([] {
              ch06::gemm_bias_relu_skinny(4, 4, 4, nullptr, nullptr, nullptr, nullptr);
            }).find("'A'"),
            std::string::npos);
  EXPECT_NE(message_of([] {
              ch06::gemm_bias_relu_skinny(4, 4, -1, nullptr, nullptr, nullptr, nullptr);
            }).find("'K'"),
            std::string::npos);
  EXPECT_NO_THROW(ch06::gemm_bias_relu_skinny(0, 4, 4, nullptr, nullptr, nullptr, nullptr));
}

// The skinny kernel (gemm_skinny.cu), which gemm_bias_relu_fused runs for M <= kSkinnyMaxRows: M
// below, at and past its 32-row tile; N partial against its 32-column slab; K partial against its
// 128-k chunk and its 32-k group share, and K = 0; odd N or K (element copies, no 16-byte ones);
// the benchmark's decode shape 32 x 4096 x 4096 (128 slabs); misaligned views of A, B and Y
// (offsets 1, 2, 4, 7) on a 16-byte-friendly and an odd shape. The *ShapesGpu suites also run under
// compute-sanitizer memcheck (scripts/gpu_blindspots.sh): a copy past an edge that leaves Y right
// still shows there.
using SkinnyParam = std::tuple<Shape, int>;  // shape, offsets
class GemmBiasReluSkinnyShapesGpu : public ::testing::TestWithParam<SkinnyParam> {};

TEST_P(GemmBiasReluSkinnyShapesGpu, MatchesOracle) {
  CUDALAB_REQUIRE_GPU();
  const auto [s, offsets] = GetParam();
  ASSERT_TRUE(ch06::fused_takes_skinny(WarptileTile::kAuto, s.m));
  check_bias_relu(true, s, WarptileTile::kAuto, offsets);
}

std::string skinny_param_name(const ::testing::TestParamInfo<SkinnyParam>& p) {
  const auto [s, offsets] = p.param;
  return ch06_test::shape_name(s) + (offsets != 0 ? "_off" + std::to_string(offsets) : "");
}

const std::vector<Shape> kSkinnyShapes{
    {1, 1, 1},      {1, 4096, 256}, {2, 4096, 4},    {7, 37, 129}, {17, 300, 1},    {31, 4095, 259},
    {32, 256, 256}, {33, 65, 127},  {64, 1000, 132}, {64, 96, 0},  {32, 4096, 4096}};
INSTANTIATE_TEST_SUITE_P(Shapes, GemmBiasReluSkinnyShapesGpu,
                         ::testing::Combine(::testing::ValuesIn(kSkinnyShapes),
                                            ::testing::Values(0)),
                         skinny_param_name);
INSTANTIATE_TEST_SUITE_P(Offsets, GemmBiasReluSkinnyShapesGpu,
                         ::testing::Combine(::testing::Values(Shape{32, 256, 256},
                                                              Shape{17, 67, 130}),
                                            ::testing::Values(1, 2, 4, 7)),
                         skinny_param_name);

// The skinny kernel forced past kSkinnyMaxRows (gemm_bias_relu_skinny): grid.y of 3, 4 and 5, a
// partial last row tile, row offsets row0 > 0 in every index.
TEST(GemmBiasReluSkinnyGpu, RowsPastTheSkinnyBound) {
  CUDALAB_REQUIRE_GPU();
  for (const Shape s : {Shape{65, 63, 9}, Shape{100, 130, 300}, Shape{129, 40, 200}})
    check_bias_relu(true, s, WarptileTile::kAuto, 0, true);
}

// The skinny path on the caller's stream (the stream contract, as the fused test above).
TEST(GemmBiasReluStreamGpu, SkinnyPathOnTheCallersStream) {
  CUDALAB_REQUIRE_GPU();
  const Shape s{17, 300, 77};
  Rng rng;
  const auto dA = to_device(rng.uniform<float>(std::size_t(s.m) * s.k, -1.0f, 1.0f));
  const auto dB = to_device(rng.uniform<float>(std::size_t(s.k) * s.n, -1.0f, 1.0f));
  const auto dbias = to_device(rng.uniform<float>(std::size_t(s.n), -1.0f, 1.0f));
  cudalab::testing::GuardedOutput<float> Y(std::size_t(s.m) * s.n);
  EXPECT_TRUE(cudalab::testing::replay_matches_plain_call(
      [&](cudaStream_t stream) {
        ch06::gemm_bias_relu_fused(s.m, s.n, s.k, dA.data(), dB.data(), dbias.data(), Y.data(),
                                   stream);
      },
      Y, "gemm_bias_relu_fused (exercise 6.6, the skinny kernel)"));
}

// Index width on the skinny kernel: each of A (M x K), B (K x N) and Y (M x N) in turn past 2^31
// elements (8.6 GB), the other two small, so a row offset row * cols passes 2^31 in that matrix
// only (an int product breaks there). B's case is a decode shape through gemm_bias_relu_fused
// (M = 4); A's and Y's need many rows, so they run gemm_bias_relu_skinny (grid.y 4097 and 2049).
// Inputs from the device fill; Y checked at sampled elements against a double oracle on the host:
// rows and columns on both sides of the crossing, the last ones, random ones.
TEST(GemmBiasReluSkinnyWideLargeGpu, EachMatrixPastTwoToThe31Elements) {
  const std::size_t big = (std::size_t{1} << 31) + (std::size_t{1} << 20);
  CUDALAB_REQUIRE_DEVICE_MEMORY(big * sizeof(float) * 5 / 4 + (std::size_t{1} << 30));
  const std::uint64_t seed = Rng().seed();
  const struct {
    const char* name;
    Shape s;
    bool any_m;
  } cases[] = {{"A = 131075 x 16388", ch06_test::kWideA, true},
               {"Y = 65540 x 32772", ch06_test::kWideC, true},
               {"B = 16388 x 131076", ch06_test::kWideB, false}};
  for (const auto& c : cases) {
    const Shape s = c.s;
    const std::size_t na = std::size_t(s.m) * s.k, nb = std::size_t(s.k) * s.n,
                      ny = std::size_t(s.m) * s.n;
    DeviceBuffer<float> A(na), B(nb), bias(std::size_t(s.n)), Y(ny);
    fill_uniform_device(A.data(), na, seed, -1.0f, 1.0f);
    fill_uniform_device(B.data(), nb, seed + 1, -1.0f, 1.0f);
    fill_uniform_device(bias.data(), std::size_t(s.n), seed + 2, -1.0f, 1.0f);
    poison_device(Y.data(), Y.bytes());
    if (c.any_m)
      ch06::gemm_bias_relu_skinny(s.m, s.n, s.k, A.data(), B.data(), bias.data(), Y.data());
    else
      ch06::gemm_bias_relu_fused(s.m, s.n, s.k, A.data(), B.data(), bias.data(), Y.data());
    CUDALAB_CHECK(cudaDeviceSynchronize());
    const auto idx = ch06_test::wide_index_samples(s, seed);
    std::vector<float> want(idx.size());
    double worst = 0;
    for (std::size_t t = 0; t < idx.size(); ++t) {
      const std::size_t j = idx[t] % s.n;
      const double b = uniform_at(seed + 2, j, -1.0f, 1.0f);
      const auto [acc, abs_sum] = ch06_test::wide_dot(s, seed, idx[t] / s.n, j);
      want[t] = static_cast<float>(std::max(acc + b, 0.0));
      worst = std::max(worst, abs_sum + std::fabs(b));
    }
    const auto tol = ch06_test::gemm_tolerance(s.k, std::vector<double>{worst});
    EXPECT_TRUE(cudalab::testing::samples_match(
        idx, cudalab::testing::download_at(Y.data(), idx), want, tol,
        std::string(c.any_m ? "gemm_bias_relu_skinny" : "gemm_bias_relu_fused, the skinny kernel") +
            " (exercise 6.6's epilogue, " + c.name + ": M x N x K = " + ch06_test::shape_name(s) +
            ", Y index = row * N + col)"));
  }
}
