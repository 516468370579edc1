// Exercise 11.4 — INT8 weight-only GEMV against two oracles:
//  * the quantized weights in double (what the kernel must compute): fp32 accumulation of cols
//    products then fp16 rounding; tolerance rel 1e-3 (fp16 half-ulp is at most 2^-11 = 4.9e-4
//    relative) + abs 1e-5 * sum |terms| (fp32 accumulation: the reference sums exact products,
//    int8 x fp16 or fp16 x fp16, by fmaf in ceil(cols / 32) steps per lane, 5 shuffle adds and
//    one scale multiply, (ceil(cols / 32) + 6) 2^-24 sum |terms| <= 9.8e-6 sum |terms| at the
//    largest cols here, 5000) + abs 1e-7 (fp16 subnormal spacing 2^-24 near 0);
//  * the original fp32 weights: the quantization error itself, bounded per row by
//    scale[r] / 2 * sum |x| (each weight is off by at most half a step) plus the above, and
//    reported normwise, ||y - y_fp32|| / ||y_fp32|| (the figure chapter 11 quotes; a row's own
//    relative error is unbounded where its exact sum is near 0). For uniform weights and inputs
//    each weight is off by a uniform error of width scale[r] ~ 1/127, so the expected normwise
//    error is about scale / 2 ~ 0.4%; above 3% something other than rounding is wrong.
// The fp16 GEMV baseline is checked the same way against its own double oracle.
#include <cuda_fp16.h>
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <string>
#include <vector>

#include "ch11/ch11.hpp"
#include "cudalab/memory.hpp"
#include "cudalab/random.hpp"
#include "cudalab/testing.hpp"

using namespace cudalab;
using namespace cudalab::ch11;

namespace {
struct Size {
  int rows, cols;
};
const std::vector<Size> kSizes{{1, 1},       {7, 33},      {9, 16},  {256, 4096},
                               {1000, 1000}, {4099, 2048}, {3, 5000}};
std::string size_name(const ::testing::TestParamInfo<Size>& p) {
  return std::to_string(p.param.rows) + "x" + std::to_string(p.param.cols);
}
std::vector<__half> to_half(const std::vector<float>& x) {
  std::vector<__half> h(x.size());
  for (std::size_t i = 0; i < x.size(); ++i) h[i] = __float2half_rn(x[i]);
  return h;
}
std::vector<float> to_float(const std::vector<__half>& h) {
  std::vector<float> x(h.size());
  for (std::size_t i = 0; i < h.size(); ++i) x[i] = __half2float(h[i]);
  return x;
}
}  // namespace

class GemvInt8Gpu : public ::testing::TestWithParam<Size> {};

TEST_P(GemvInt8Gpu, MatchesQuantizedAndFp32Oracles) {
  CUDALAB_REQUIRE_GPU();
  const auto [rows, cols] = GetParam();
  Rng rng;
  const auto w = rng.uniform<float>(static_cast<std::size_t>(rows) * cols, -1.0f, 1.0f);
  const std::vector<float> x =
      to_float(to_half(rng.uniform<float>(static_cast<std::size_t>(cols), -1.0f, 1.0f)));
  const Int8Matrix m = quantize_int8_per_channel(w, rows, cols);
  auto dq = to_device(m.q);
  auto ds = to_device(m.scale);
  auto dx = to_device(to_half(x));
  cudalab::testing::GuardedOutput<__half> y(static_cast<std::size_t>(rows));
  gemv_int8_weight_only(dq.data(), ds.data(), dx.data(), y.data(), rows, cols);
  CUDALAB_CHECK(cudaDeviceSynchronize());
  const std::vector<float> got = to_float(y.result());
  EXPECT_TRUE(y.guard_intact());
  double err2 = 0, ref2 = 0;
  for (int r = 0; r < rows; ++r) {
    double exact = 0, abs_terms = 0, fp32 = 0, sum_x = 0;
    for (int c = 0; c < cols; ++c) {
      const std::size_t i = static_cast<std::size_t>(r) * cols + c;
      const double term = static_cast<double>(m.q[i]) * m.scale[static_cast<std::size_t>(r)] *
                          x[static_cast<std::size_t>(c)];
      exact += term;
      abs_terms += std::fabs(term);
      fp32 += double{w[i]} * x[static_cast<std::size_t>(c)];
      sum_x += std::fabs(x[static_cast<std::size_t>(c)]);
    }
    const double g = got[static_cast<std::size_t>(r)],
                 kernel_tol = 1e-3 * std::fabs(exact) + 1e-5 * abs_terms + 1e-7;
    ASSERT_LE(std::fabs(g - exact), kernel_tol)
        << "row " << r << ": got " << g << ", want " << exact;
    const double bound = 0.5 * m.scale[static_cast<std::size_t>(r)] * sum_x;
    ASSERT_LE(std::fabs(g - fp32), bound + kernel_tol)
        << "row " << r << ": quantization error above its bound";
    err2 += (g - fp32) * (g - fp32);
    ref2 += fp32 * fp32;
  }
  const double rel = ref2 > 0 ? std::sqrt(err2 / ref2) : 0.0;
  RecordProperty("int8_rel_error_vs_fp32", std::to_string(rel));
  EXPECT_LT(rel, 0.03) << "normwise relative error against the fp32 weights";
}

TEST_P(GemvInt8Gpu, Fp16BaselineMatchesOracle) {
  CUDALAB_REQUIRE_GPU();
  const auto [rows, cols] = GetParam();
  Rng rng;
  const std::vector<float> w =
      to_float(to_half(rng.uniform<float>(static_cast<std::size_t>(rows) * cols, -1.0f, 1.0f)));
  const std::vector<float> x =
      to_float(to_half(rng.uniform<float>(static_cast<std::size_t>(cols), -1.0f, 1.0f)));
  auto dw = to_device(to_half(w));
  auto dx = to_device(to_half(x));
  cudalab::testing::GuardedOutput<__half> y(static_cast<std::size_t>(rows));
  gemv_fp16(dw.data(), dx.data(), y.data(), rows, cols);
  CUDALAB_CHECK(cudaDeviceSynchronize());
  const std::vector<float> got = to_float(y.result());
  EXPECT_TRUE(y.guard_intact());
  for (int r = 0; r < rows; ++r) {
    double exact = 0, abs_terms = 0;
    for (int c = 0; c < cols; ++c) {
      const double term =
          double{w[static_cast<std::size_t>(r) * cols + c]} * x[static_cast<std::size_t>(c)];
      exact += term;
      abs_terms += std::fabs(term);
    }
    ASSERT_LE(std::fabs(got[static_cast<std::size_t>(r)] - exact),
              1e-3 * std::fabs(exact) + 1e-5 * abs_terms + 1e-7)
        << "row " << r;
  }
}

INSTANTIATE_TEST_SUITE_P(Sizes, GemvInt8Gpu, ::testing::ValuesIn(kSizes), size_name);

TEST(GemvInt8Args, NamedErrors) {
  cudalab::testing::expect_throws_naming(
      [] { gemv_int8_weight_only(nullptr, nullptr, nullptr, nullptr, -1, 4); }, "rows");
  cudalab::testing::expect_throws_naming(
      [] { gemv_int8_weight_only(nullptr, nullptr, nullptr, nullptr, 4, -4); }, "cols");
  cudalab::testing::expect_throws_naming(
      [] { gemv_int8_weight_only(nullptr, nullptr, nullptr, nullptr, 4, 4); }, "q");
  cudalab::testing::expect_throws_naming([] { gemv_fp16(nullptr, nullptr, nullptr, 4, 4); }, "w");
  EXPECT_NO_THROW(gemv_int8_weight_only(nullptr, nullptr, nullptr, nullptr, 0, 4));
}
