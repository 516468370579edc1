// Exercises 6.1 and 6.2 (and every worked step of the SGEMM ladder): each variant against a double
// CPU oracle on odd shapes, random alpha and beta, beta = 0 with a NaN-poisoned C, K = 0.
#include <gtest/gtest.h>

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
using ch06_test::Shape;

namespace {

// Odd shapes: single elements, warp +- 1, not multiples of 32, 64 or 128 tiles in any dimension,
// vectors (M or N = 1), K = 0 (C = beta C), K % 4 == 0 with partial tiles (the float4 paths at
// the edges), and multiples of the 128 x 128 tile (the fast interior path only). warptile_async
// runs its cp.async kernel when K, N % 4 == 0 (130x260x132, 256^3, 200x300x100, and the last
// three: one K tile fewer than the pipeline's stages, K = 4, and partial M/N/K tiles with
// zero-filled copies); every other shape exercises its fallback to step 7.
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

std::string what(SgemmVariant v, const Shape& s, const char* extra = "") {
  return "sgemm " + std::string(ch06::to_string(v)) + " (" + exercise_of(v) +
         "M x N x K = " + ch06_test::shape_name(s) + extra + ")";
}

// Runs one SGEMM into a guarded, poisoned C (then filled with C0 when beta != 0) and checks it.
void check_sgemm(SgemmVariant v, const Shape& s, float alpha, float beta, Rng& rng,
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
    ch06::sgemm(v, s.m, s.n, s.k, alpha, dA.data(), dB.data(), beta, C.data());
    CUDALAB_CHECK(cudaDeviceSynchronize());
    const auto got = C.result();
    EXPECT_MATCHES(compare(got, ch06_test::to_float(want.c), tol,
                           what(v, s, beta == 0.0f ? ", beta = 0, C poisoned with NaN" : "")));
    EXPECT_TRUE(C.guard_intact());
  }
}

using Param = std::tuple<SgemmVariant, Shape>;
std::string param_name(const ::testing::TestParamInfo<Param>& p) {
  return std::string(ch06::to_string(std::get<0>(p.param))) + "_" +
         ch06_test::shape_name(std::get<1>(p.param));
}

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
                         ::testing::Combine(::testing::ValuesIn(ch06::kAllSgemmVariants),
                                            ::testing::ValuesIn(kShapes)),
                         param_name);

// A shape that makes a missing second __syncthreads show. The race needs a fast warp to finish
// its inner product, fetch the next tile and store it while a slow warp of the same block still
// reads the current one: so many K tiles (16), inputs small enough to stay in L2 (1 MiB each: the
// fetch is short), 256 blocks of 1024 threads (2 per SM: more warps per scheduler, more skew),
// and several repeats. 134 M multiply-adds for the CPU oracle, computed once (~0.1 s).
class SgemmRaceGpu : public ::testing::TestWithParam<SgemmVariant> {};
TEST_P(SgemmRaceGpu, RaceProneShapes) {
  CUDALAB_REQUIRE_GPU();
  Rng rng;
  check_sgemm(GetParam(), {512, 512, 512}, 1.0f, 0.5f, rng, /*repeats=*/4);
}
INSTANTIATE_TEST_SUITE_P(Tiled, SgemmRaceGpu,
                         ::testing::Values(SgemmVariant::kSmemTiled, SgemmVariant::kBlocktile2d,
                                           SgemmVariant::kWarptile, SgemmVariant::kWarptileAsync),
                         [](const auto& p) { return std::string(ch06::to_string(p.param)); });

// Every variant at the benchmarked sizes, 4096^3 and 4095^3 (every tile edge partial, no float4
// rows), once, against cuBLAS on the GPU (bound: gemm_testing.hpp, LargeGemm). The benchmark
// quotes these sizes: a kernel that skipped tiles there would just look faster. Cost on an H200,
// per variant: 2 sizes x (the variant + 2 cuBLAS calls) ~ 0.8 TFLOP; the naive variants dominate
// (~0.2-0.5 s each at a few TFLOP/s); ~2-3 s for the 8 variants.
class SgemmLargeGpu : public ::testing::TestWithParam<SgemmVariant> {};

TEST_P(SgemmLargeGpu, AtTheBenchmarkSizes) {
  const SgemmVariant v = GetParam();
  CUDALAB_REQUIRE_DEVICE_MEMORY(std::size_t{6} * 4096 * 4096 * sizeof(float) +
                                (std::size_t{1} << 30));
  for (const int size : {4096, 4095}) {
    const ch06_test::LargeGemm g(size, size, size, false, Rng().seed());
    DeviceBuffer<float> C(std::size_t(size) * size);
    poison_device(C.data(), C.bytes());
    ch06::sgemm(v, size, size, size, 1.0f, g.A.data(), g.B.data(), 0.0f, C.data());
    CUDALAB_CHECK(cudaDeviceSynchronize());
    EXPECT_TRUE(
        g.check(C.data(), 0x1p-24,
                "sgemm " + std::string(ch06::to_string(v)) + " (" + exercise_name(v) + ")"));
  }
}

INSTANTIATE_TEST_SUITE_P(Ladder, SgemmLargeGpu, ::testing::ValuesIn(ch06::kAllSgemmVariants),
                         [](const auto& p) { return std::string(ch06::to_string(p.param)); });

// Technique (exercises 6.1, 6.2): what ptxas gave the kernels (cudaFuncGetAttributes of the kernel
// the call launches, recorded by stream capture: nothing runs). Step 3 (6.1) stages two 32 x 32
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
