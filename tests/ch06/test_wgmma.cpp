// Hopper wgmma GEMM (worked example beside exercise 6.5): C = A Bt^T, bf16 in, fp32 out, against
// the double CPU oracle. Runs only on compute capability 9.0 (sm_90a); skipped with the reason
// elsewhere.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "ch06/ch06.hpp"
#include "cudalab/device.hpp"
#include "cudalab/device_fill.hpp"
#include "cudalab/random.hpp"
#include "cudalab/testing.hpp"
#include "gemm_testing.hpp"

using namespace cudalab;
using ch06_test::Shape;

namespace {

using ch06_test::kTensorCoreU;  // gemm_testing.hpp: fp32 accumulation that may truncate

}  // namespace

class WgmmaGemmGpu : public ::testing::TestWithParam<Shape> {};

TEST_P(WgmmaGemmGpu, MatchesOracle) {
  CUDALAB_REQUIRE_GPU();
  CUDALAB_REQUIRE_ARCH(9, 0);
  if (!ch06::wgmma_supported())
    GTEST_SKIP() << "skipped: wgmma needs compute capability exactly 9.0 (sm_90a)";
  const Shape s = GetParam();
  Rng rng;
  std::vector<__nv_bfloat16> A(std::size_t(s.m) * s.k), Bt(std::size_t(s.n) * s.k);
  std::vector<float> Af(A.size()), Btf(Bt.size());
  for (std::size_t i = 0; i < A.size(); ++i)
    Af[i] = __bfloat162float(A[i] = __float2bfloat16(rng.scalar(-1.0f, 1.0f)));
  for (std::size_t i = 0; i < Bt.size(); ++i)
    Btf[i] = __bfloat162float(Bt[i] = __float2bfloat16(rng.scalar(-1.0f, 1.0f)));
  std::vector<double> want(std::size_t(s.m) * s.n), abs_sum(want.size());
  ch06::gemm_oracle(ch06::Op::kN, ch06::Op::kT, s.m, s.n, s.k, 1.0, Af.data(), s.k, Btf.data(), s.k,
                    0.0, nullptr, s.n, want.data(), abs_sum.data());
  auto dA = to_device(A), dBt = to_device(Bt);
  cudalab::testing::GuardedOutput<float> C(want.size());
  ch06::wgmma_gemm_bf16_tn(s.m, s.n, s.k, dA.data(), dBt.data(), C.data());
  CUDALAB_CHECK(cudaDeviceSynchronize());
  EXPECT_MATCHES(compare(C.result(), ch06_test::to_float(want),
                         ch06_test::gemm_tolerance(s.k, abs_sum, kTensorCoreU),
                         "wgmma_gemm_bf16_tn (M x N x K = " + ch06_test::shape_name(s) + ")"));
  EXPECT_TRUE(C.guard_intact());
}

// N % 256 != 0 runs the 128-wide tile (6 stages), N % 256 == 0 the 256-wide one (4 stages). Shapes:
// one tile; fewer and more K tiles than stages (the ring wraps, the phase parity flips); non-square
// grids; 9 block rows, so the grouped block order ends with a partial group of 1 row.
INSTANTIATE_TEST_SUITE_P(Shapes, WgmmaGemmGpu,
                         ::testing::Values(Shape{128, 128, 64}, Shape{256, 384, 320},
                                           Shape{384, 128, 1024}, Shape{128, 512, 128},
                                           Shape{256, 512, 640}, Shape{1152, 256, 320},
                                           Shape{1152, 384, 448}),
                         [](const auto& p) { return ch06_test::shape_name(p.param); });

// The wgmma kernel at the benchmarked 8192^3 (TN: Bt is N x K), once, against cuBLAS SGEMM (N, T)
// on the GPU (inputs exact in bf16: gemm_testing.hpp, LargeGemm). Cost on an H200: ~2 x 1.1
// TFLOP, well under 0.1 s, plus the check.
TEST(WgmmaGemmLargeGpu, AtTheBenchmarkSize) {
  CUDALAB_REQUIRE_ARCH(9, 0);
  if (!ch06::wgmma_supported())
    GTEST_SKIP() << "skipped: wgmma needs compute capability exactly 9.0 (sm_90a)";
  const int size = 8192;
  const std::size_t mn = std::size_t(size) * size;
  CUDALAB_REQUIRE_DEVICE_MEMORY(7 * mn * sizeof(float) + (std::size_t{1} << 30));
  const ch06_test::LargeGemm g(size, size, size, true, Rng().seed());
  DeviceBuffer<__nv_bfloat16> A(mn), Bt(mn);
  ch06::convert(g.A.data(), A.data(), mn);
  ch06::convert(g.B.data(), Bt.data(), mn);
  DeviceBuffer<float> C(mn);
  poison_device(C.data(), C.bytes());
  ch06::wgmma_gemm_bf16_tn(size, size, size, A.data(), Bt.data(), C.data());
  CUDALAB_CHECK(cudaDeviceSynchronize());
  EXPECT_TRUE(g.check(C.data(), kTensorCoreU, "wgmma_gemm_bf16_tn"));
}

TEST(WgmmaGemmArgs, PreconditionIsCheckedByName) {
  using cudalab::testing::expect_throws_naming;
  auto call = [](int m, int n, int k) {
    return [=] { ch06::wgmma_gemm_bf16_tn(m, n, k, nullptr, nullptr, nullptr); };
  };
  expect_throws_naming(call(100, 128, 64), "M");
  expect_throws_naming(call(128, 130, 64), "N");
  expect_throws_naming(call(128, 128, 48), "K");
  expect_throws_naming(call(128, 128, 0), "K");
  expect_throws_naming(call(128, 128, 64), "A");
}
