// INT8 and FP8 GEMMs through cuBLASLt (lt_gemm.hpp) beside bf16, in the linear layer's layout
// Y[n][m] = X[n][k] W[m][k]^T:
//  * INT8: exact (integer sums) against the host;
//  * bf16: against the double oracle of the rounded inputs, |err| <= 2^-8 |want| (bf16 output
//    rounding: half an ulp is 2^-9 relative) + 1e-5 sum |terms| (fp32 accumulation);
//  * FP8 E4M3 (compute capability 8.9+; skipped elsewhere with the reason): the inputs quantized
//    on the host (host.hpp's quantize_fp8, per-tensor scales), against the double oracle of the
//    dequantized values with the bf16 tolerance (+ 1e-3 sum |terms| with fast accumulation), and
//    against the fp32 oracle of the unquantized inputs: the normwise relative error of E4M3
//    (3 mantissa bits: each element within 2^-4 relative) stays below 0.08.
#include <cstdint>
#include <cuda_bf16.h>
#include <gtest/gtest.h>

#include <cmath>
#include <string>
#include <vector>

#include "ch11/ch11.hpp"
#include "ch11/lt_gemm.hpp"
#include "cudalab/memory.hpp"
#include "cudalab/random.hpp"
#include "cudalab/testing.hpp"

using namespace cudalab;
using namespace cudalab::ch11;

namespace {
struct Size {
  int m, n, k;
};
const std::vector<Size> kSizes{{16, 16, 16}, {64, 32, 128}, {256, 48, 512}, {512, 16, 4096}};
std::string size_name(const ::testing::TestParamInfo<Size>& p) {
  return std::to_string(p.param.m) + "x" + std::to_string(p.param.n) + "x" +
         std::to_string(p.param.k);
}
std::vector<float> bf16_result(const DeviceBuffer<__nv_bfloat16>& y) {
  std::vector<float> out;
  for (const __nv_bfloat16 v : y.to_host()) out.push_back(__bfloat162float(v));
  return out;
}
}  // namespace

class LtGemmGpu : public ::testing::TestWithParam<Size> {};

TEST_P(LtGemmGpu, Int8IsExact) {
  CUDALAB_REQUIRE_GPU();
  const auto [m, n, k] = GetParam();
  Rng rng;
  const auto w = rng.uniform<std::int8_t>(static_cast<std::size_t>(m) * k, -127, 127);
  const auto x = rng.uniform<std::int8_t>(static_cast<std::size_t>(n) * k, -127, 127);
  auto dw = to_device(w), dx = to_device(x);
  DeviceBuffer<std::int32_t> y(static_cast<std::size_t>(m) * n);
  LtGemm g;
  g.int8(dw.data(), dx.data(), y.data(), m, n, k);
  CUDALAB_CHECK(cudaDeviceSynchronize());
  std::vector<std::int32_t> want(static_cast<std::size_t>(m) * n);
  for (int t = 0; t < n; ++t)
    for (int o = 0; o < m; ++o) {
      std::int32_t s = 0;
      for (int i = 0; i < k; ++i)
        s += w[static_cast<std::size_t>(o) * k + i] * x[static_cast<std::size_t>(t) * k + i];
      want[static_cast<std::size_t>(t) * m + o] = s;
    }
  EXPECT_MATCHES(compare(y.to_host(), want, {}, "INT8 GEMM"));
}

TEST_P(LtGemmGpu, Bf16MatchesOracle) {
  CUDALAB_REQUIRE_GPU();
  const auto [m, n, k] = GetParam();
  Rng rng;
  auto rounded = [&](std::size_t count) {
    std::vector<__nv_bfloat16> b;
    for (float v : rng.uniform<float>(count, -1.0f, 1.0f)) b.push_back(__float2bfloat16_rn(v));
    return b;
  };
  const auto w = rounded(static_cast<std::size_t>(m) * k),
             x = rounded(static_cast<std::size_t>(n) * k);
  auto dw = to_device(w), dx = to_device(x);
  DeviceBuffer<__nv_bfloat16> y(static_cast<std::size_t>(m) * n);
  LtGemm g;
  g.bf16(dw.data(), dx.data(), y.data(), m, n, k);
  CUDALAB_CHECK(cudaDeviceSynchronize());
  const auto got = bf16_result(y);
  for (int t = 0; t < n; ++t)
    for (int o = 0; o < m; ++o) {
      double s = 0, a = 0;
      for (int i = 0; i < k; ++i) {
        const double p = double{__bfloat162float(w[static_cast<std::size_t>(o) * k + i])} *
                         __bfloat162float(x[static_cast<std::size_t>(t) * k + i]);
        s += p;
        a += std::fabs(p);
      }
      ASSERT_LE(std::fabs(got[static_cast<std::size_t>(t) * m + o] - s),
                std::ldexp(std::fabs(s), -8) + 1e-5 * a)
          << "bf16 GEMM, output " << o << " of token " << t;
    }
}

TEST_P(LtGemmGpu, Fp8E4M3WithScales) {
  CUDALAB_REQUIRE_GPU();
  CUDALAB_REQUIRE_ARCH(8, 9);
  const auto [m, n, k] = GetParam();
  Rng rng;
  const auto wf =
      rng.uniform<float>(static_cast<std::size_t>(m) * k, -0.05f, 0.05f);  // weight-like
  const auto xf =
      rng.uniform<float>(static_cast<std::size_t>(n) * k, -4.0f, 4.0f);  // activation-like
  const Fp8Tensor wq = quantize_fp8(wf, Fp8Format::kE4M3), xq = quantize_fp8(xf, Fp8Format::kE4M3);
  const auto wd = dequantize(wq), xd = dequantize(xq);
  auto dw = to_device(wq.codes), dx = to_device(xq.codes);
  auto ws = to_device(std::vector<float>{wq.scale}), xs = to_device(std::vector<float>{xq.scale});
  LtGemm g;
  for (bool fast : {false, true}) {
    DeviceBuffer<__nv_bfloat16> y(static_cast<std::size_t>(m) * n);
    g.fp8(dw.data(), dx.data(), ws.data(), xs.data(), y.data(), m, n, k, fast);
    CUDALAB_CHECK(cudaDeviceSynchronize());
    const auto got = bf16_result(y);
    double err2 = 0, ref2 = 0;
    for (int t = 0; t < n; ++t)
      for (int o = 0; o < m; ++o) {
        double s = 0, a = 0, exact = 0;
        for (int i = 0; i < k; ++i) {
          const std::size_t wi = static_cast<std::size_t>(o) * k + i,
                            xi = static_cast<std::size_t>(t) * k + i;
          s += double{wd[wi]} * xd[xi];
          a += std::fabs(double{wd[wi]} * xd[xi]);
          exact += double{wf[wi]} * xf[xi];
        }
        const double v = got[static_cast<std::size_t>(t) * m + o];
        ASSERT_LE(std::fabs(v - s), std::ldexp(std::fabs(s), -8) + (fast ? 1e-3 : 1e-5) * a)
            << "FP8 GEMM" << (fast ? " (fast accumulation)" : "") << ", output " << o
            << " of token " << t;
        err2 += (v - exact) * (v - exact);
        ref2 += exact * exact;
      }
    const double rel = std::sqrt(err2 / ref2);
    RecordProperty(fast ? "fp8_fast_rel_error_vs_fp32" : "fp8_rel_error_vs_fp32",
                   std::to_string(rel));
    EXPECT_LT(rel, 0.08) << "normwise relative error against the unquantized fp32 product";
  }
}

INSTANTIATE_TEST_SUITE_P(Sizes, LtGemmGpu, ::testing::ValuesIn(kSizes), size_name);

TEST(LtGemmArgsGpu, NamedErrors) {
  CUDALAB_REQUIRE_GPU();
  LtGemm g;
  cudalab::testing::expect_throws_naming([&] { g.int8(nullptr, nullptr, nullptr, 15, 16, 16); },
                                         "m");
  cudalab::testing::expect_throws_naming([&] { g.int8(nullptr, nullptr, nullptr, 16, 16, 8); },
                                         "k");
  cudalab::testing::expect_throws_naming([&] { g.bf16(nullptr, nullptr, nullptr, 3, 0, 3); }, "n");
  cudalab::testing::expect_throws_naming([&] { g.int8(nullptr, nullptr, nullptr, 16, 16, 16); },
                                         "w");
}
