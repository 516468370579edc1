// Exercise 6.6 — GEMM + bias + ReLU: the fused epilogue and the library path (cuBLAS: exercise
// 6.3, then the elementwise kernel of 6.6) against the double CPU oracle.
#include <gtest/gtest.h>

#include <algorithm>
#include <string>
#include <tuple>
#include <vector>

#include "ch06/ch06.hpp"
#include "cudalab/cublas.hpp"
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
                     int offsets = 0) {
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
  if (fused) {
    ch06::gemm_bias_relu_fused(tile, s.m, s.n, s.k, dA.data(), dB.data(), dbias.data(), y);
  } else {
    CublasHandle h;
    ch06::gemm_bias_relu_cublas(h, s.m, s.n, s.k, dA.data(), dB.data(), dbias.data(), y);
  }
  CUDALAB_CHECK(cudaDeviceSynchronize());
  const auto all = Y.result();
  const std::vector<float> got(all.begin() + static_cast<std::ptrdiff_t>(y_off), all.end());
  const std::string w =
      std::string(fused ? "gemm_bias_relu_fused (exercise 6.6"
                        : "gemm_bias_relu_cublas (exercises 6.3 and 6.6") +
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
}
