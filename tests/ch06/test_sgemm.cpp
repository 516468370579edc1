// Exercises 6.1 and 6.2 (and every worked step of the SGEMM ladder): each variant against a double
// CPU oracle on odd shapes, random alpha and beta, beta = 0 with a NaN-poisoned C, K = 0.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <ostream>
#include <string>
#include <tuple>
#include <vector>

#include "ch06/ch06.hpp"
#include "cudalab/device_fill.hpp"
#include "cudalab/random.hpp"
#include "cudalab/testing.hpp"
#include "gemm_testing.hpp"

using namespace cudalab;
using ch06::SgemmVariant;
using ch06::WarptileTile;
using ch06_test::Shape;

namespace {

// A kernel under test: a ladder step (tile kAuto: ch06::sgemm), or step 7 or 8 with its block tile
// forced (ch06::sgemm_warptile_tile, ch06::sgemm_warptile_async_tile), so that both tiles run on
// every shape whatever the planner picks on this GPU. Test names: the step ("warptile"), or the
// step and the tile ("warptile_64x64", "warptile_async_64x64").
struct Kernel {
  SgemmVariant v;
  WarptileTile tile = WarptileTile::kAuto;
};
std::string kernel_name(const Kernel& k) {
  std::string name(ch06::to_string(k.v));
  if (k.tile != WarptileTile::kAuto) name += "_" + std::string(ch06::to_string(k.tile));
  return name;
}
void PrintTo(const Kernel& k, std::ostream* os) {
  *os << kernel_name(k);
}

void run_sgemm(const Kernel& k, const Shape& s, float alpha, const float* A, const float* B,
               float beta, float* C, cudaStream_t stream = nullptr) {
  if (k.tile == WarptileTile::kAuto)
    ch06::sgemm(k.v, s.m, s.n, s.k, alpha, A, B, beta, C, stream);
  else if (k.v == SgemmVariant::kWarptileAsync)
    ch06::sgemm_warptile_async_tile(k.tile, s.m, s.n, s.k, alpha, A, B, beta, C, stream);
  else
    ch06::sgemm_warptile_tile(k.tile, s.m, s.n, s.k, alpha, A, B, beta, C, stream);
}

// The ladder's steps as kernels, and steps 7 and 8 with each block tile forced.
std::vector<Kernel> ladder_kernels() {
  std::vector<Kernel> out;
  for (const SgemmVariant v : ch06::kAllSgemmVariants) out.push_back({v});
  return out;
}
const Kernel kTileKernels[] = {{SgemmVariant::kWarptile, WarptileTile::k128x128},
                               {SgemmVariant::kWarptile, WarptileTile::k64x64},
                               {SgemmVariant::kWarptileAsync, WarptileTile::k128x128},
                               {SgemmVariant::kWarptileAsync, WarptileTile::k64x64}};
// The 64 x 64 tile of each step (kTileKernels[1] and [3]).
const Kernel kTile64Kernels[] = {kTileKernels[1], kTileKernels[3]};

// Odd shapes: single elements, warp +- 1, not multiples of 32, 64 or 128 tiles in any dimension,
// vectors (M or N = 1), K = 0 (C = beta C), K % 4 == 0 with partial tiles (the float4 paths at
// the edges), and multiples of the 128 x 128 tile (the fast interior path only). warptile_async
// (step 8) takes every shape on its own cp.async kernel: with 16-byte copies of B where N % 4 == 0
// (130x260x132, 256^3, 200x300x100, 128x384x16, 5x8x4, 257x132x52), 4-byte ones elsewhere; K % 16
// != 0 (a guarded, zero-filled last K tile) on most shapes, K % 4 != 0 on the odd ones, K < 16
// (only that tail tile), fewer K tiles than the pipeline's 3 stages (K = 16, 32), K = 0.
const std::vector<Shape> kShapes{{1, 1, 1},       {17, 33, 9},     {31, 33, 32},    {127, 129, 131},
                                 {1000, 1, 1000}, {1, 1000, 1},    {64, 96, 0},     {130, 260, 132},
                                 {129, 257, 8},   {256, 256, 256}, {200, 300, 100}, {3, 517, 45},
                                 {128, 384, 16},  {5, 8, 4},       {257, 132, 52}};

std::string exercise_of(SgemmVariant v) {
  switch (v) {
    case SgemmVariant::kSmemTiled:
    case SgemmVariant::kBlocktile1d:
      return "exercise 6.1, ";
    case SgemmVariant::kBlocktile2d:
    case SgemmVariant::kVectorized:
      return "exercise 6.2, ";
    default:
      return "worked example, ";
  }
}

// "exercise 6.1" (exercise_of without its trailing ", ").
std::string exercise_name(SgemmVariant v) {
  const std::string e = exercise_of(v);
  return e.substr(0, e.size() - 2);
}

std::string what(const Kernel& k, const Shape& s, const char* extra = "") {
  return "sgemm " + kernel_name(k) + " (" + exercise_of(k.v) +
         "M x N x K = " + ch06_test::shape_name(s) + extra + ")";
}

// Runs one SGEMM into a guarded, poisoned C (then filled with C0 when beta != 0) and checks it.
void check_sgemm(const Kernel& v, const Shape& s, float alpha, float beta, Rng& rng,
                 int repeats = 1) {
  const std::size_t mn = static_cast<std::size_t>(s.m) * s.n;
  const auto A = rng.uniform<float>(static_cast<std::size_t>(s.m) * s.k, -1.0f, 1.0f);
  const auto B = rng.uniform<float>(static_cast<std::size_t>(s.k) * s.n, -1.0f, 1.0f);
  const auto C0 = rng.uniform<float>(mn, -1.0f, 1.0f);
  const auto want = ch06_test::gemm_dense_oracle(s, alpha, A, B, beta, C0);
  const auto tol = ch06_test::gemm_tolerance(s.k, want.abs_sum);
  auto dA = to_device(A), dB = to_device(B);
  for (int r = 0; r < repeats; ++r) {
    cudalab::testing::GuardedOutput<float> C(mn);  // poisoned: NaN everywhere, guard zone behind
    if (beta != 0.0f)
      CUDALAB_CHECK(cudaMemcpy(C.data(), C0.data(), mn * sizeof(float), cudaMemcpyHostToDevice));
    run_sgemm(v, s, alpha, dA.data(), dB.data(), beta, C.data());
    CUDALAB_CHECK(cudaDeviceSynchronize());
    const auto got = C.result();
    EXPECT_MATCHES(compare(got, ch06_test::to_float(want.c), tol,
                           what(v, s, beta == 0.0f ? ", beta = 0, C poisoned with NaN" : "")));
    EXPECT_TRUE(C.guard_intact());
  }
}

using Param = std::tuple<Kernel, Shape>;
std::string param_name(const ::testing::TestParamInfo<Param>& p) {
  return kernel_name(std::get<0>(p.param)) + "_" + ch06_test::shape_name(std::get<1>(p.param));
}

// Steps 7 and 8 with each tile forced: partial 128 and 64 tiles in M, N and K (K % 8 != 0: a
// partial last K tile; odd K and N: no float4 rows), a whole 64 x 64 tile with one K step, and the
// sizes where the planner's choice matters (1000^3 and an odd 513 x 1025 x 1023, every edge
// partial). For step 8 also: interior blocks whose K tiles are all whole (256 x 256 x 48: three
// tiles, unpredicated copies only), and every M and N edge partial with an odd K past a few tiles
// (257 x 300 x 33: 4-byte copies of B, a guarded last tile of 1 k).
const std::vector<Shape> kTileShapes{
    {1, 1, 1},      {33, 65, 127},      {64, 64, 8},       {65, 63, 9},    {63, 129, 64},
    {128, 64, 136}, {1000, 1000, 1000}, {513, 1025, 1023}, {256, 256, 48}, {257, 300, 33}};

}  // namespace

class SgemmGpu : public ::testing::TestWithParam<Param> {};

TEST_P(SgemmGpu, MatchesOracle) {
  CUDALAB_REQUIRE_GPU();
  const auto [v, s] = GetParam();
  Rng rng;
  check_sgemm(v, s, rng.scalar(0.5f, 2.0f), rng.scalar(-1.5f, 1.5f), rng);
}

// beta = 0 must not read C: C holds NaN (poison), and 0 * NaN would leave NaN behind.
TEST_P(SgemmGpu, BetaZeroIgnoresNaNInC) {
  CUDALAB_REQUIRE_GPU();
  const auto [v, s] = GetParam();
  Rng rng;
  check_sgemm(v, s, rng.scalar(-2.0f, -0.5f), 0.0f, rng);
}

INSTANTIATE_TEST_SUITE_P(Ladder, SgemmGpu,
                         ::testing::Combine(::testing::ValuesIn(ladder_kernels()),
                                            ::testing::ValuesIn(kShapes)),
                         param_name);
INSTANTIATE_TEST_SUITE_P(Tiles, SgemmGpu,
                         ::testing::Combine(::testing::ValuesIn(kTileKernels),
                                            ::testing::ValuesIn(kShapes)),
                         param_name);
INSTANTIATE_TEST_SUITE_P(TileShapes, SgemmGpu,
                         ::testing::Combine(::testing::ValuesIn(kTileKernels),
                                            ::testing::ValuesIn(kTileShapes)),
                         param_name);

// A shape that makes a missing second __syncthreads show. The race needs a fast warp to finish
// its inner product, fetch the next tile and store it while a slow warp of the same block still
// reads the current one: so many K tiles (16), inputs small enough to stay in L2 (1 MiB each: the
// fetch is short), 256 blocks of 1024 threads (2 per SM: more warps per scheduler, more skew),
// and several repeats. 134 M multiply-adds for the CPU oracle, computed once (~0.1 s).
class SgemmRaceGpu : public ::testing::TestWithParam<Kernel> {};
TEST_P(SgemmRaceGpu, RaceProneShapes) {
  CUDALAB_REQUIRE_GPU();
  Rng rng;
  check_sgemm(GetParam(), {512, 512, 512}, 1.0f, 0.5f, rng, /*repeats=*/4);
}
INSTANTIATE_TEST_SUITE_P(Tiled, SgemmRaceGpu,
                         ::testing::Values(Kernel{SgemmVariant::kSmemTiled},
                                           Kernel{SgemmVariant::kBlocktile2d},
                                           Kernel{SgemmVariant::kWarptile},
                                           Kernel{SgemmVariant::kWarptileAsync}, kTileKernels[0],
                                           kTileKernels[1], kTileKernels[2], kTileKernels[3]),
                         [](const auto& p) { return kernel_name(p.param); });

// Every variant at the benchmarked sizes, 4096^3 and 4095^3 (every tile edge partial, no float4
// rows), once, against cuBLAS on the GPU (bound: gemm_testing.hpp, LargeGemm). The benchmark
// quotes these sizes: a kernel that skipped tiles there would just look faster. Cost on an H200,
// per variant: 2 sizes x (the variant + 2 cuBLAS calls) ~ 0.8 TFLOP; the naive variants dominate
// (~0.2-0.5 s each at a few TFLOP/s); ~2-3 s for the 8 variants.
class SgemmLargeGpu : public ::testing::TestWithParam<Kernel> {};

TEST_P(SgemmLargeGpu, AtTheBenchmarkSizes) {
  const Kernel k = GetParam();
  CUDALAB_REQUIRE_DEVICE_MEMORY(std::size_t{6} * 4096 * 4096 * sizeof(float) +
                                (std::size_t{1} << 30));
  for (const int size : {4096, 4095}) {
    const ch06_test::LargeGemm g(size, size, size, false, Rng().seed());
    DeviceBuffer<float> C(std::size_t(size) * size);
    poison_device(C.data(), C.bytes());
    run_sgemm(k, {size, size, size}, 1.0f, g.A.data(), g.B.data(), 0.0f, C.data());
    CUDALAB_CHECK(cudaDeviceSynchronize());
    EXPECT_TRUE(
        g.check(C.data(), 0x1p-24, "sgemm " + kernel_name(k) + " (" + exercise_name(k.v) + ")"));
  }
}

INSTANTIATE_TEST_SUITE_P(Ladder, SgemmLargeGpu, ::testing::ValuesIn(ladder_kernels()),
                         [](const auto& p) { return kernel_name(p.param); });
INSTANTIATE_TEST_SUITE_P(Tiles, SgemmLargeGpu, ::testing::ValuesIn(kTileKernels),
                         [](const auto& p) { return kernel_name(p.param); });

// Shape classes: in each of M, N and K in turn, a multiple of every tile (128), a size aligned to
// the vector width but not a whole tile (132: float4 rows, a partial last tile), and an odd size
// (131: no float4 rows at all), the other two dimensions whole tiles (where a check-free interior
// path is taken), plus all three partial and all three odd. A and B sit in front of NaN guard zones
// (a read past their end shows as NaN in C), C is poisoned and guarded. The fast paths (float4
// loads and stores, a check-free interior) are taken only where the shape allows them; a tile that
// takes one it may not (a partial edge tile aligned to 4) reads or writes past an edge. These
// suites also run under compute-sanitizer memcheck (scripts/gpu_suite, scripts/gpu_blindspots.sh:
// the *ShapesGpu suites), where a read past an edge that does not change C still shows.
const Shape kShapeClasses[] = {{128, 128, 128}, {132, 128, 128}, {131, 128, 128},
                               {128, 132, 128}, {128, 131, 128}, {128, 128, 132},
                               {128, 128, 131}, {132, 132, 132}, {131, 131, 131}};
// The same classes around the 64 x 64 tile (64: whole, 68: float4 rows and a partial tile, 67:
// odd), for steps 7 and 8 with that tile forced.
const Shape kShapeClasses64[] = {{64, 64, 64}, {68, 64, 64}, {67, 64, 64},
                                 {64, 68, 64}, {64, 67, 64}, {64, 64, 68},
                                 {64, 64, 67}, {68, 68, 68}, {67, 67, 67}};
using ShapeParam = std::tuple<Kernel, Shape>;
std::string shape_param_name(const ::testing::TestParamInfo<ShapeParam>& p) {
  return kernel_name(std::get<0>(p.param)) + "_" + ch06_test::shape_name(std::get<1>(p.param));
}

// C = alpha A B + beta C0 with A (at +a_off) and B (at +b_off) in front of NaN guard zones and C at
// +c_off in a poisoned, guarded buffer.
void check_guarded_sgemm(const Kernel& v, const Shape& s, std::size_t a_off, std::size_t b_off,
                         std::size_t c_off, const std::string& extra) {
  Rng rng;
  const float alpha = rng.scalar(0.5f, 2.0f), beta = rng.scalar(-1.5f, 1.5f);
  const std::size_t mn = static_cast<std::size_t>(s.m) * s.n;
  const auto A = rng.uniform<float>(static_cast<std::size_t>(s.m) * s.k, -1.0f, 1.0f);
  const auto B = rng.uniform<float>(static_cast<std::size_t>(s.k) * s.n, -1.0f, 1.0f);
  const auto C0 = rng.uniform<float>(mn, -1.0f, 1.0f);
  const auto want = ch06_test::gemm_dense_oracle(s, alpha, A, B, beta, C0);
  const cudalab::testing::GuardedInput<float> dA(A, a_off), dB(B, b_off);
  cudalab::testing::GuardedOutput<float> C(c_off + mn);
  CUDALAB_CHECK(
      cudaMemcpy(C.data() + c_off, C0.data(), mn * sizeof(float), cudaMemcpyHostToDevice));
  run_sgemm(v, s, alpha, dA.data(), dB.data(), beta, C.data() + c_off);
  CUDALAB_CHECK(cudaDeviceSynchronize());
  const auto all = C.result();
  const std::vector<float> got(all.begin() + static_cast<std::ptrdiff_t>(c_off), all.end());
  const std::string w = what(v, s, extra.c_str());
  EXPECT_MATCHES(
      compare(got, ch06_test::to_float(want.c), ch06_test::gemm_tolerance(s.k, want.abs_sum), w));
  EXPECT_TRUE(C.guard_intact()) << w;
  EXPECT_TRUE(C.untouched(0, c_off, w));
}

class SgemmShapesGpu : public ::testing::TestWithParam<ShapeParam> {};

TEST_P(SgemmShapesGpu, TileMultipleAlignedPartialAndOddInEachDimension) {
  CUDALAB_REQUIRE_GPU();
  const auto [v, shape] = GetParam();
  check_guarded_sgemm(v, shape, 0, 0, 0, ", NaN behind A and B");
}

INSTANTIATE_TEST_SUITE_P(Classes, SgemmShapesGpu,
                         ::testing::Combine(::testing::ValuesIn(ladder_kernels()),
                                            ::testing::ValuesIn(kShapeClasses)),
                         shape_param_name);
INSTANTIATE_TEST_SUITE_P(TileClasses, SgemmShapesGpu,
                         ::testing::Combine(::testing::ValuesIn(kTileKernels),
                                            ::testing::ValuesIn(kShapeClasses)),
                         shape_param_name);
INSTANTIATE_TEST_SUITE_P(TileClasses64, SgemmShapesGpu,
                         ::testing::Combine(::testing::ValuesIn(kTile64Kernels),
                                            ::testing::ValuesIn(kShapeClasses64)),
                         shape_param_name);

// Alignment: A, B and C each in turn at +1 element of its allocation (a +1 view is 4-byte aligned,
// not 16), the others aligned, then all three, on a shape whose rows would allow float4
// (132 x 132 x 132; the forced tiles of steps 7 and 8 also on 68 x 68 x 68, a 64 x 64 tile and a
// partial one). A float4 path chosen on the row length alone, or on some of the three pointers,
// loads or stores 16 bytes at a misaligned address (a fault) or reads the wrong elements. Step 8
// picks its 16-byte copies of B and stores to C this way (A is copied element by element).
using AlignParam = std::tuple<Kernel, int>;  // kernel, offsets (bit 0: A, 1: B, 2: C)
class SgemmAlignmentGpu : public ::testing::TestWithParam<AlignParam> {};

TEST_P(SgemmAlignmentGpu, EveryPointerOnItsOwnAlignment) {
  CUDALAB_REQUIRE_GPU();
  const auto [v, bits] = GetParam();
  const std::size_t a = bits & 1, b = (bits >> 1) & 1, c = (bits >> 2) & 1;
  const std::string extra = ", A +" + std::to_string(a) + ", B +" + std::to_string(b) + ", C +" +
                            std::to_string(c) + " floats";
  check_guarded_sgemm(v, {132, 132, 132}, a, b, c, extra);
  if (v.tile != WarptileTile::kAuto) check_guarded_sgemm(v, {68, 68, 68}, a, b, c, extra);
}

std::string align_param_name(const ::testing::TestParamInfo<AlignParam>& p) {
  const int bits = std::get<1>(p.param);
  return kernel_name(std::get<0>(p.param)) + "_A" + std::to_string(bits & 1) + "_B" +
         std::to_string((bits >> 1) & 1) + "_C" + std::to_string((bits >> 2) & 1);
}

INSTANTIATE_TEST_SUITE_P(Offsets, SgemmAlignmentGpu,
                         ::testing::Combine(::testing::ValuesIn(ladder_kernels()),
                                            ::testing::Values(0, 1, 2, 4, 7)),
                         align_param_name);
INSTANTIATE_TEST_SUITE_P(TileOffsets, SgemmAlignmentGpu,
                         ::testing::Combine(::testing::ValuesIn(kTileKernels),
                                            ::testing::Values(0, 1, 2, 4, 7)),
                         align_param_name);

// Index width: each of A (M x K), B (K x N) and C (M x N) in turn past 2^31 elements (8.6 GB), the
// other two small, so the row offsets row * cols pass 2^31 in that matrix only. An offset computed
// as an int product breaks there. Inputs from the device fill (uniform [-1, 1]); C (beta = 0,
// poisoned) is checked at sampled elements against a double oracle on the host: rows and columns
// on both sides of the crossing, the last ones, random ones (each a K-long dot product).
// Cost on an H200, per variant: ~50 GFLOP on skinny shapes plus ~26 GB of fills and poison.
class SgemmWideLargeGpu : public ::testing::TestWithParam<Kernel> {};

TEST_P(SgemmWideLargeGpu, EachMatrixPastTwoToThe31Elements) {
  const Kernel v = GetParam();
  const std::size_t big = (std::size_t{1} << 31) + (std::size_t{1} << 20);
  CUDALAB_REQUIRE_DEVICE_MEMORY(big * sizeof(float) * 5 / 4 + (std::size_t{1} << 30));
  const std::uint64_t seed = Rng().seed();
  const struct {
    const char* name;
    Shape s;
  } cases[] = {{"A = 131075 x 16388", ch06_test::kWideA},
               {"C = 65540 x 32772", ch06_test::kWideC},
               {"B = 16388 x 131076", ch06_test::kWideB}};
  for (const auto& c : cases) {
    const Shape s = c.s;
    const std::size_t na = std::size_t(s.m) * s.k, nb = std::size_t(s.k) * s.n,
                      nc = std::size_t(s.m) * s.n;
    DeviceBuffer<float> A(na), B(nb), C(nc);
    fill_uniform_device(A.data(), na, seed, -1.0f, 1.0f);
    fill_uniform_device(B.data(), nb, seed + 1, -1.0f, 1.0f);
    poison_device(C.data(), C.bytes());
    run_sgemm(v, s, 1.0f, A.data(), B.data(), 0.0f, C.data());
    CUDALAB_CHECK(cudaDeviceSynchronize());
    const auto idx = ch06_test::wide_index_samples(s, seed);
    // (Every element of C reads all K rows of B, those past 2^31 elements included.)
    std::vector<float> want(idx.size());
    std::vector<double> bound(idx.size());
    double worst = 0;
    for (std::size_t t = 0; t < idx.size(); ++t) {
      const auto [acc, abs_sum] = ch06_test::wide_dot(s, seed, idx[t] / s.n, idx[t] % s.n);
      want[t] = static_cast<float>(acc);
      worst = std::max(worst, abs_sum);
    }
    const auto tol = ch06_test::gemm_tolerance(s.k, std::vector<double>{worst});
    EXPECT_TRUE(cudalab::testing::samples_match(
        idx, cudalab::testing::download_at(C.data(), idx), want, tol,
        "sgemm " + kernel_name(v) + " (" + exercise_name(v.v) + ", " + c.name +
            ": M x N x K = " + ch06_test::shape_name(s) + ", C index = row * N + col)"));
  }
}

INSTANTIATE_TEST_SUITE_P(Ladder, SgemmWideLargeGpu, ::testing::ValuesIn(ladder_kernels()),
                         [](const auto& p) { return kernel_name(p.param); });
INSTANTIATE_TEST_SUITE_P(Tiles, SgemmWideLargeGpu, ::testing::ValuesIn(kTileKernels),
                         [](const auto& p) { return kernel_name(p.param); });

// Technique (exercises 6.1, 6.2): what ptxas gave the kernels (cudaFuncGetAttributes of the kernel
// the call launches, recorded by stream capture: nothing runs). Step 3 (6.1) stages two 32 x 32
// The stream contract (cudalab/testing.hpp, replay_from_capture): every step's kernels on the
// caller's stream. A launch without the stream argument runs on the legacy default stream while the
// call is recorded, not in the recorded graph, so the replay leaves C poisoned (NaN).
class SgemmStreamGpu : public ::testing::TestWithParam<Kernel> {};

TEST_P(SgemmStreamGpu, AllWorkOnTheCallersStream) {
  CUDALAB_REQUIRE_GPU();
  const Kernel k = GetParam();
  const Shape s{129, 65, 33};
  Rng rng;
  const auto A = rng.uniform<float>(static_cast<std::size_t>(s.m) * s.k, -1.0f, 1.0f);
  const auto B = rng.uniform<float>(static_cast<std::size_t>(s.k) * s.n, -1.0f, 1.0f);
  const std::vector<float> unused(static_cast<std::size_t>(s.m) * s.n);
  const auto want = ch06_test::gemm_dense_oracle(s, 1.25, A, B, 0.0, unused);
  auto dA = to_device(A), dB = to_device(B);
  cudalab::testing::GuardedOutput<float> C(unused.size());
  cudalab::testing::replay_from_capture(
      [&](cudaStream_t stream) {
        run_sgemm(k, s, 1.25f, dA.data(), dB.data(), 0.0f, C.data(), stream);
      },
      [&] { C.repoison(); });
  EXPECT_MATCHES(compare(C.result(), ch06_test::to_float(want.c),
                         ch06_test::gemm_tolerance(s.k, want.abs_sum),
                         what(k, s, ", replayed from a capture of its stream")));
}

INSTANTIATE_TEST_SUITE_P(Ladder, SgemmStreamGpu, ::testing::ValuesIn(ladder_kernels()),
                         [](const auto& p) { return kernel_name(p.param); });
INSTANTIATE_TEST_SUITE_P(Tiles, SgemmStreamGpu, ::testing::ValuesIn(kTileKernels),
                         [](const auto& p) { return kernel_name(p.param); });

// float tiles in shared memory (8 KiB); step 5 (6.2) stages a 128 x 8 and an 8 x 128 tile (8 KiB)
// and keeps an 8 x 8 tile of accumulators per thread in registers (at least 64, none spilled to
// local memory). A naive loop passes every numeric test; it fails here.
class SgemmTechniqueGpu : public ::testing::TestWithParam<SgemmVariant> {};

TEST_P(SgemmTechniqueGpu, TilesInSharedMemoryAccumulatorsInRegisters) {
  CUDALAB_REQUIRE_GPU();
  const SgemmVariant v = GetParam();
  const int size = 256;
  DeviceBuffer<float> A(size * size), B(size * size), C(size * size);
  const auto c = cudalab::testing::capture_launches([&](cudaStream_t stream) {
    ch06::sgemm(v, size, size, size, 1.0f, A.data(), B.data(), 0.0f, C.data(), stream);
  });
  const std::string what =
      "sgemm " + std::string(ch06::to_string(v)) + " (" + exercise_name(v) + ")";
  ASSERT_EQ(c.kernels.size(), 1u) << what << " launched " << c.kernels.size() << " kernels";
  const auto& k = c.kernels[0];
  EXPECT_GE(k.shared_bytes(), 8192u) << what << ": " << k.shared_bytes()
                                     << " bytes of shared memory, want the two tiles (8192 bytes)";
  if (v == SgemmVariant::kBlocktile2d) {
    EXPECT_GE(k.attr.numRegs, 64) << what << ": " << k.attr.numRegs
                                  << " registers a thread: the 8 x 8 accumulators alone need 64";
    EXPECT_EQ(k.attr.localSizeBytes, 0u)
        << what << ": " << k.attr.localSizeBytes
        << " bytes of local memory a thread (accumulators spilled?)";
  }
}

INSTANTIATE_TEST_SUITE_P(Steps, SgemmTechniqueGpu,
                         ::testing::Values(SgemmVariant::kSmemTiled, SgemmVariant::kBlocktile2d),
                         [](const auto& p) { return std::string(ch06::to_string(p.param)); });

TEST(SgemmArgs, BadSizesAndPointersAreRejectedByName) {
  auto message_of = [](auto&& f) { return cudalab::testing::invalid_argument_message(f); };
  const auto v = SgemmVariant::kWarptile;
  EXPECT_NE(
      message_of([&] { ch06::sgemm(v, -1, 4, 4, 1, nullptr, nullptr, 0, nullptr); }).find("'M'"),
      std::string::npos);
  EXPECT_NE(
      message_of([&] { ch06::sgemm(v, 4, -1, 4, 1, nullptr, nullptr, 0, nullptr); }).find("'N'"),
      std::string::npos);
  EXPECT_NE(
      message_of([&] { ch06::sgemm(v, 4, 4, -1, 1, nullptr, nullptr, 0, nullptr); }).find("'K'"),
      std::string::npos);
  EXPECT_NE(
      message_of([&] { ch06::sgemm(v, 4, 4, 4, 1, nullptr, nullptr, 0, nullptr); }).find("'A'"),
      std::string::npos);
  // An empty C is a valid no-op, whatever the pointers.
  EXPECT_NO_THROW(ch06::sgemm(v, 0, 4, 4, 1, nullptr, nullptr, 0, nullptr));
  EXPECT_NO_THROW(ch06::sgemm(v, 4, 0, 4, 1, nullptr, nullptr, 0, nullptr));
}

// Step 7's tile planner (CPU): 64 x 64 while the 128 x 128 grid has fewer blocks than SMs.
TEST(WarptilePlan, SmallGridsGet64x64LargeOnes128x128) {
  const int sms = 132;                                                           // H100 SXM, H200
  EXPECT_EQ(ch06::plan_warptile_tile(1024, 1024, sms), WarptileTile::k64x64);    // 64 blocks
  EXPECT_EQ(ch06::plan_warptile_tile(1000, 1000, sms), WarptileTile::k64x64);    // 64 blocks
  EXPECT_EQ(ch06::plan_warptile_tile(512, 1024, sms), WarptileTile::k64x64);     // 32 blocks
  EXPECT_EQ(ch06::plan_warptile_tile(33, 65, sms), WarptileTile::k64x64);        // 1 block
  EXPECT_EQ(ch06::plan_warptile_tile(2048, 2048, sms), WarptileTile::k128x128);  // 256 blocks
  EXPECT_EQ(ch06::plan_warptile_tile(4095, 4095, sms), WarptileTile::k128x128);
  EXPECT_EQ(ch06::plan_warptile_tile(16384, 1024, sms), WarptileTile::k128x128);
}

TEST(WarptilePlan, BoundaryIsOneBlockPerSm) {
  const int sms = 132;
  // 131 blocks of 128 x 128 -> 64 x 64; 132 -> 128 x 128; partial tiles count as whole blocks.
  EXPECT_EQ(ch06::plan_warptile_tile(131 * 128, 1, sms), WarptileTile::k64x64);
  EXPECT_EQ(ch06::plan_warptile_tile(132 * 128, 1, sms), WarptileTile::k128x128);
  EXPECT_EQ(ch06::plan_warptile_tile(131 * 128 + 1, 1, sms), WarptileTile::k128x128);
  EXPECT_EQ(ch06::plan_warptile_tile(1, 131 * 128, sms), WarptileTile::k64x64);
  EXPECT_EQ(ch06::plan_warptile_tile(1, 131 * 128 + 1, sms), WarptileTile::k128x128);
  EXPECT_EQ(ch06::plan_warptile_tile(11 * 128, 12 * 128, sms), WarptileTile::k128x128);  // 132
  EXPECT_EQ(ch06::plan_warptile_tile(11 * 128, 12 * 128 - 127, sms), WarptileTile::k128x128);
  EXPECT_EQ(ch06::plan_warptile_tile(11 * 128, 11 * 128 + 128, sms - 1),  // 132 >= 131
            WarptileTile::k128x128);
  EXPECT_EQ(ch06::plan_warptile_tile(11 * 128, 11 * 128, sms), WarptileTile::k64x64);  // 121
}

TEST(WarptilePlan, EmptyTinyAndHugeShapes) {
  const int sms = 132;
  EXPECT_EQ(ch06::plan_warptile_tile(0, 0, sms), WarptileTile::k64x64);  // no blocks (no launch)
  EXPECT_EQ(ch06::plan_warptile_tile(0, 100000, sms), WarptileTile::k64x64);
  EXPECT_EQ(ch06::plan_warptile_tile(1, 1, sms), WarptileTile::k64x64);
  // M x N past 2^31 elements (the index-width tests' C = 65540 x 32772), the largest sizes
  // sgemm takes (65535 * 32) and any int: the block count is 64-bit, no overflow.
  EXPECT_EQ(ch06::plan_warptile_tile(65540, 32772, sms), WarptileTile::k128x128);
  EXPECT_EQ(ch06::plan_warptile_tile(131075, 4, sms), WarptileTile::k128x128);  // 1025 blocks
  EXPECT_EQ(ch06::plan_warptile_tile(65535 * 32, 65535 * 32, sms), WarptileTile::k128x128);
  const int big = std::numeric_limits<int>::max();
  EXPECT_EQ(ch06::plan_warptile_tile(big, big, sms), WarptileTile::k128x128);
  EXPECT_EQ(ch06::plan_warptile_tile(big, big, big), WarptileTile::k128x128);
  EXPECT_EQ(ch06::plan_warptile_tile(big, 1, big), WarptileTile::k64x64);  // 2^24 blocks < 2^31-1
}

TEST(WarptilePlan, SmCountEdges) {
  // One SM: one 128 x 128 block already fills its share.
  EXPECT_EQ(ch06::plan_warptile_tile(1, 1, 1), WarptileTile::k128x128);
  EXPECT_EQ(ch06::plan_warptile_tile(0, 1, 1), WarptileTile::k64x64);
  EXPECT_EQ(ch06::plan_warptile_tile(1024, 1024, 64), WarptileTile::k128x128);  // 64 >= 64
  EXPECT_EQ(ch06::plan_warptile_tile(1024, 1024, 65), WarptileTile::k64x64);
  EXPECT_EQ(ch06::plan_warptile_tile(4096, 4096, std::numeric_limits<int>::max()),
            WarptileTile::k64x64);
  auto message_of = [](auto&& f) { return cudalab::testing::invalid_argument_message(f); };
  EXPECT_NE(message_of([] { ch06::plan_warptile_tile(4, 4, 0); }).find("'num_sms'"),
            std::string::npos);
  EXPECT_NE(message_of([] { ch06::plan_warptile_tile(4, 4, -132); }).find("'num_sms'"),
            std::string::npos);
  EXPECT_NE(message_of([] { ch06::plan_warptile_tile(-1, 4, 132); }).find("'M'"),
            std::string::npos);
  EXPECT_NE(message_of([] { ch06::plan_warptile_tile(4, -1, 132); }).find("'N'"),
            std::string::npos);
}

TEST(WarptilePlan, TileNamesAndForcedTileArguments) {
  EXPECT_EQ(ch06::to_string(WarptileTile::k128x128), "128x128");
  EXPECT_EQ(ch06::to_string(WarptileTile::k64x64), "64x64");
  EXPECT_EQ(ch06::to_string(WarptileTile::kAuto), "auto");
  auto message_of = [](auto&& f) { return cudalab::testing::invalid_argument_message(f); };
  const auto bad = static_cast<WarptileTile>(7);
  EXPECT_NE(message_of([&] {
              ch06::sgemm_warptile_tile(bad, 4, 4, 4, 1, nullptr, nullptr, 0, nullptr);
            }).find("'tile'"),
            std::string::npos);
  for (const WarptileTile t : {WarptileTile::kAuto, WarptileTile::k128x128, WarptileTile::k64x64}) {
    EXPECT_NE(message_of([&] {
                ch06::sgemm_warptile_tile(t, -1, 4, 4, 1, nullptr, nullptr, 0, nullptr);
              }).find("'M'"),
              std::string::npos);
    EXPECT_NE(message_of([&] {
                ch06::sgemm_warptile_tile(t, 4, 4, 4, 1, nullptr, nullptr, 0, nullptr);
              }).find("'A'"),
              std::string::npos);
    EXPECT_NO_THROW(ch06::sgemm_warptile_tile(t, 0, 4, 4, 1, nullptr, nullptr, 0, nullptr));
  }
  // Step 8's hook makes the same checks.
  EXPECT_NE(message_of([&] {
              ch06::sgemm_warptile_async_tile(bad, 4, 4, 4, 1, nullptr, nullptr, 0, nullptr);
            }).find("'tile'"),
            std::string::npos);
  for (const WarptileTile t : {WarptileTile::kAuto, WarptileTile::k128x128, WarptileTile::k64x64}) {
    EXPECT_NE(message_of([&] {
                ch06::sgemm_warptile_async_tile(t, 4, -1, 4, 1, nullptr, nullptr, 0, nullptr);
              }).find("'N'"),
              std::string::npos);
    EXPECT_NE(message_of([&] {
                ch06::sgemm_warptile_async_tile(t, 4, 4, 4, 1, nullptr, nullptr, 0, nullptr);
              }).find("'A'"),
              std::string::npos);
    EXPECT_NO_THROW(ch06::sgemm_warptile_async_tile(t, 4, 0, 4, 1, nullptr, nullptr, 0, nullptr));
  }
}
