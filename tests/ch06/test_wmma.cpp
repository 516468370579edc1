// Exercise 6.5 — the WMMA tensor-core GEMM (fp16 and bf16 in, fp32 accumulate and out) against the
// double CPU oracle on odd shapes; cuBLAS GemmEx with the same row-major convention.
#include <gtest/gtest.h>

#include <string>
#include <tuple>
#include <vector>

#include "ch06/ch06.hpp"
#include "cudalab/cublas.hpp"
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

enum class Impl { kWmma, kCublas };

template <class T>
void check_tc_gemm(Impl impl, const Shape& s, float alpha, float beta) {
  Rng rng;
  const std::size_t mn = std::size_t(s.m) * s.n;
  std::vector<T> A(std::size_t(s.m) * s.k), B(std::size_t(s.k) * s.n);
  std::vector<float> Af(A.size()), Bf(B.size());
  for (std::size_t i = 0; i < A.size(); ++i)
    Af[i] = to_float(A[i] = from_float<T>(rng.scalar(-1.0f, 1.0f)));
  for (std::size_t i = 0; i < B.size(); ++i)
    Bf[i] = to_float(B[i] = from_float<T>(rng.scalar(-1.0f, 1.0f)));
  const auto C0 = rng.uniform<float>(mn, -1.0f, 1.0f);
  const auto want = ch06_test::gemm_dense_oracle(s, alpha, Af, Bf, beta, C0);
  auto dA = to_device(A), dB = to_device(B);
  cudalab::testing::GuardedOutput<float> C(mn);
  if (beta != 0.0f)
    CUDALAB_CHECK(cudaMemcpy(C.data(), C0.data(), mn * sizeof(float), cudaMemcpyHostToDevice));
  std::string what;
  if (impl == Impl::kWmma) {
    ch06::wmma_gemm(s.m, s.n, s.k, alpha, dA.data(), dB.data(), beta, C.data());
    what = std::string("wmma_gemm ") + type_name<T>() + " (exercise 6.5, ";
  } else {
    CublasHandle h;
    ch06::cublas_gemm_ex_row_major(h, s.m, s.n, s.k, alpha, dA.data(), dB.data(),
                                   std::is_same_v<T, __half> ? CUDA_R_16F : CUDA_R_16BF, beta,
                                   C.data());
    what = std::string("cublas_gemm_ex_row_major ") + type_name<T>() + " (";
  }
  CUDALAB_CHECK(cudaDeviceSynchronize());
  what += "M x N x K = " + ch06_test::shape_name(s) +
          (beta == 0.0f ? ", beta = 0, C poisoned with NaN)" : ")");
  EXPECT_MATCHES(compare(C.result(), ch06_test::to_float(want.c),
                         ch06_test::gemm_tolerance(s.k, want.abs_sum, kTensorCoreU), what));
  EXPECT_TRUE(C.guard_intact());
}

// Multiples of 16 and of the 128 x 128 x 32 tile, odd shapes, K % 8 == 0 with N % 8 != 0 (the
// guarded B path with vector A), vectors, K = 0.
const std::vector<Shape> kShapes{{1, 1, 1},      {16, 16, 16},    {17, 33, 9},    {127, 129, 131},
                                 {128, 128, 32}, {256, 256, 256}, {100, 300, 64}, {1, 200, 40},
                                 {300, 1, 24},   {64, 96, 0}};

using Param = std::tuple<bool, Shape>;  // bf16?, shape
std::string param_name(const ::testing::TestParamInfo<Param>& p) {
  return std::string(std::get<0>(p.param) ? "bf16_" : "fp16_") +
         ch06_test::shape_name(std::get<1>(p.param));
}

}  // namespace

class WmmaGemmGpu : public ::testing::TestWithParam<Param> {};

TEST_P(WmmaGemmGpu, MatchesOracle) {
  CUDALAB_REQUIRE_GPU();
  const auto [bf16, s] = GetParam();
  if (bf16)
    check_tc_gemm<__nv_bfloat16>(Impl::kWmma, s, 1.25f, -0.75f);
  else
    check_tc_gemm<__half>(Impl::kWmma, s, 1.25f, -0.75f);
}

TEST_P(WmmaGemmGpu, BetaZeroIgnoresNaNInC) {
  CUDALAB_REQUIRE_GPU();
  const auto [bf16, s] = GetParam();
  if (bf16)
    check_tc_gemm<__nv_bfloat16>(Impl::kWmma, s, 0.5f, 0.0f);
  else
    check_tc_gemm<__half>(Impl::kWmma, s, 0.5f, 0.0f);
}

INSTANTIATE_TEST_SUITE_P(Shapes, WmmaGemmGpu,
                         ::testing::Combine(::testing::Bool(), ::testing::ValuesIn(kShapes)),
                         param_name);

// The vendor row of the benchmark computes the same thing (row-major through the swap identity).
TEST(CublasGemmExGpu, RowMajorMatchesOracle) {
  CUDALAB_REQUIRE_GPU();
  for (const Shape& s : {Shape{17, 33, 9}, Shape{127, 129, 131}}) {
    check_tc_gemm<__half>(Impl::kCublas, s, 1.0f, 0.5f);
    check_tc_gemm<__nv_bfloat16>(Impl::kCublas, s, 1.0f, 0.0f);
  }
}

// WMMA fp16 and bf16 at the benchmarked 8192^3, once each, against cuBLAS SGEMM on the GPU (the
// inputs are exact in 16 bits: gemm_testing.hpp, LargeGemm). Cost on an H200: 3 x 1.1 TFLOP of
// tensor-core and fp32 GEMM, ~0.1 s, plus the check.
TEST(WmmaGemmLargeGpu, AtTheBenchmarkSize) {
  const int size = 8192;
  const std::size_t mn = std::size_t(size) * size;
  CUDALAB_REQUIRE_DEVICE_MEMORY(8 * mn * sizeof(float) + (std::size_t{1} << 30));
  ch06_test::check_large_fp16_bf16_gemm(size, "wmma_gemm (exercise 6.5)",
                                        [](auto... args) { ch06::wmma_gemm(args...); });
}

TEST(WmmaGemmArgs, BadArgumentsAreRejectedByName) {
  try {
    ch06::wmma_gemm(4, 4, 4, 1.0f, static_cast<const __half*>(nullptr), nullptr, 0.0f, nullptr);
    FAIL() << "expected std::invalid_argument";
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find("'A'"), std::string::npos) << e.what();
  }
  EXPECT_THROW(
      ch06::wmma_gemm(4, -4, 4, 1.0f, static_cast<const __half*>(nullptr), nullptr, 0.0f, nullptr),
      std::invalid_argument);
  EXPECT_NO_THROW(
      ch06::wmma_gemm(0, 4, 4, 1.0f, static_cast<const __half*>(nullptr), nullptr, 0.0f, nullptr));
}
