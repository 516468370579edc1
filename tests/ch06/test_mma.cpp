// The mma.sync tensor-core GEMM (worked example between WMMA and wgmma: ldmatrix, swizzled shared
// memory, a cp.async pipeline), fp16 and bf16 in, fp32 accumulate and out, against the double CPU
// oracle: odd shapes, partial tiles at every edge, K not a multiple of the 32-wide K tile, more
// and fewer K tiles than pipeline stages, misaligned (+1 element) views (the guarded path).
#include <gtest/gtest.h>

#include <stdexcept>
#include <string>
#include <tuple>
#include <vector>

#include "ch06/ch06.hpp"
#include "cudalab/device_fill.hpp"
#include "cudalab/random.hpp"
#include "cudalab/testing.hpp"
#include "gemm_testing.hpp"

using namespace cudalab;
using ch06_test::Shape;

namespace {

using ch06_test::kTensorCoreU;  // gemm_testing.hpp: fp32 accumulation that may truncate

using ch06_test::from_float;
using ch06_test::to_float;
using ch06_test::type_name;

// Element offsets of the views passed to mma_gemm: 0 (aligned allocations) or 1 (every pointer
// off its 16-byte alignment by one element: the guarded path, and scalar stores of C).
struct Views {
  int a = 0, b = 0, c = 0;
};

template <class T>
void check_mma_gemm(const Shape& s, float alpha, float beta, Views v = {}) {
  Rng rng;
  const std::size_t mn = std::size_t(s.m) * s.n;
  std::vector<T> A(std::size_t(s.m) * s.k + v.a), B(std::size_t(s.k) * s.n + v.b);
  std::vector<float> Af(A.size() - v.a), Bf(B.size() - v.b);
  for (std::size_t i = 0; i < Af.size(); ++i)
    Af[i] = to_float(A[i + v.a] = from_float<T>(rng.scalar(-1.0f, 1.0f)));
  for (std::size_t i = 0; i < Bf.size(); ++i)
    Bf[i] = to_float(B[i + v.b] = from_float<T>(rng.scalar(-1.0f, 1.0f)));
  const auto C0 = rng.uniform<float>(mn, -1.0f, 1.0f);
  const auto want = ch06_test::gemm_dense_oracle(s, alpha, Af, Bf, beta, C0);
  auto dA = to_device(A), dB = to_device(B);
  cudalab::testing::GuardedOutput<float> C(mn + v.c);
  if (beta != 0.0f && mn != 0)
    CUDALAB_CHECK(
        cudaMemcpy(C.data() + v.c, C0.data(), mn * sizeof(float), cudaMemcpyHostToDevice));
  ch06::mma_gemm(s.m, s.n, s.k, alpha, dA.data() + v.a, dB.data() + v.b, beta, C.data() + v.c);
  CUDALAB_CHECK(cudaDeviceSynchronize());
  const std::string what = std::string("mma_gemm ") + type_name<T>() +
                           " (M x N x K = " + ch06_test::shape_name(s) +
                           (beta == 0.0f ? ", beta = 0, C poisoned with NaN" : "") +
                           (v.a + v.b + v.c != 0 ? ", views offset by +1 element" : "") + ")";
  const auto all = C.result();
  const std::vector<float> got(all.begin() + v.c, all.end());
  EXPECT_MATCHES(compare(got, ch06_test::to_float(want.c),
                         ch06_test::gemm_tolerance(s.k, want.abs_sum, kTensorCoreU), what));
  EXPECT_TRUE(C.guard_intact());
}

// Aligned (cp.async) path: K and N multiples of 8. Partial M, N and K tiles (K % 32 == 8, 16, 24),
// one K tile, fewer K tiles than the 4 stages, many more (the ring wraps), a grid of 10 block rows
// (the grouped block order ends with a partial group of 2). Guarded path: K or N not a multiple of
// 8 (1x1x1, odd sizes), N % 8 != 0 with K % 8 == 0 and the reverse. K = 0: C = beta C.
const std::vector<Shape> kShapes{
    {1, 1, 1},       {16, 16, 16},   {17, 33, 9},   {127, 129, 131}, {128, 128, 32},
    {256, 256, 256}, {100, 300, 64}, {1, 200, 40},  {300, 1, 24},    {64, 96, 0},
    {130, 136, 40},  {129, 264, 72}, {200, 8, 104}, {136, 200, 64},  {256, 128, 320},
    {1200, 264, 96}, {33, 130, 48},  {96, 160, 17}, {8, 8, 8},       {250, 384, 1000}};

using Param = std::tuple<bool, Shape>;  // bf16?, shape
std::string param_name(const ::testing::TestParamInfo<Param>& p) {
  return std::string(std::get<0>(p.param) ? "bf16_" : "fp16_") +
         ch06_test::shape_name(std::get<1>(p.param));
}

}  // namespace

class MmaGemmGpu : public ::testing::TestWithParam<Param> {};

TEST_P(MmaGemmGpu, MatchesOracle) {
  CUDALAB_REQUIRE_GPU();
  const auto [bf16, s] = GetParam();
  if (bf16)
    check_mma_gemm<__nv_bfloat16>(s, 1.25f, -0.75f);
  else
    check_mma_gemm<__half>(s, 1.25f, -0.75f);
}

TEST_P(MmaGemmGpu, BetaZeroIgnoresNaNInC) {
  CUDALAB_REQUIRE_GPU();
  const auto [bf16, s] = GetParam();
  if (bf16)
    check_mma_gemm<__nv_bfloat16>(s, 0.5f, 0.0f);
  else
    check_mma_gemm<__half>(s, 0.5f, 0.0f);
}

// Shapes the fast path would take, handed over through views one element off 16-byte alignment:
// A alone, B alone, C alone (scalar stores), all three.
TEST_P(MmaGemmGpu, MisalignedViews) {
  CUDALAB_REQUIRE_GPU();
  const auto [bf16, s] = GetParam();
  for (const Views v : {Views{1, 0, 0}, Views{0, 1, 0}, Views{0, 0, 1}, Views{1, 1, 1}}) {
    if (bf16)
      check_mma_gemm<__nv_bfloat16>(s, 1.0f, 0.5f, v);
    else
      check_mma_gemm<__half>(s, 1.0f, 0.5f, v);
  }
}

INSTANTIATE_TEST_SUITE_P(Shapes, MmaGemmGpu,
                         ::testing::Combine(::testing::Bool(), ::testing::ValuesIn(kShapes)),
                         param_name);

// fp16 and bf16 at the benchmarked 8192^3, once each, against cuBLAS SGEMM on the GPU (the inputs
// are exact in 16 bits: gemm_testing.hpp, LargeGemm). Cost on an H200: 3 x 1.1 TFLOP of
// tensor-core and fp32 GEMM, well under a second, plus the check.
TEST(MmaGemmLargeGpu, AtTheBenchmarkSize) {
  const int size = 8192;
  const std::size_t mn = std::size_t(size) * size;
  CUDALAB_REQUIRE_DEVICE_MEMORY(8 * mn * sizeof(float) + (std::size_t{1} << 30));
  ch06_test::check_large_fp16_bf16_gemm(size, "mma_gemm",
                                        [](auto... args) { ch06::mma_gemm(args...); });
}

TEST(MmaGemmArgs, BadArgumentsAreRejectedByName) {
  try {
    ch06::mma_gemm(4, 4, 4, 1.0f, static_cast<const __half*>(nullptr), nullptr, 0.0f, nullptr);
    FAIL() << "expected std::invalid_argument";
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find("'A'"), std::string::npos) << e.what();
  }
  EXPECT_THROW(
      ch06::mma_gemm(4, -4, 4, 1.0f, static_cast<const __half*>(nullptr), nullptr, 0.0f, nullptr),
      std::invalid_argument);
  EXPECT_THROW(ch06::mma_gemm(4, 4, -1, 1.0f, static_cast<const __nv_bfloat16*>(nullptr), nullptr,
                              0.0f, nullptr),
               std::invalid_argument);
  EXPECT_NO_THROW(
      ch06::mma_gemm(0, 4, 4, 1.0f, static_cast<const __half*>(nullptr), nullptr, 0.0f, nullptr));
}
