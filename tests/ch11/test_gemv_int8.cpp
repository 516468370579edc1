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
#include <cstdint>
#include <cstring>
#include <limits>
#include <string>
#include <vector>

#include "ch11/ch11.hpp"
#include "cudalab/device_fill.hpp"
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

// The stream contract (cudalab/testing.hpp, replay_from_capture): both GEMVs on the caller's
// stream. The replay must give the bits of a plain call (whose values the tests above check); a
// launch on the legacy default stream runs while the call is recorded and leaves y poisoned.
TEST(GemvStreamGpu, AllWorkOnTheCallersStream) {
  CUDALAB_REQUIRE_GPU();
  const int rows = 515, cols = 1040;  // cols % 16 == 0: the 16-byte paths
  Rng rng;
  const auto w = rng.uniform<float>(static_cast<std::size_t>(rows) * cols, -1.0f, 1.0f);
  const auto x = to_half(rng.uniform<float>(static_cast<std::size_t>(cols), -1.0f, 1.0f));
  const Int8Matrix m = quantize_int8_per_channel(w, rows, cols);
  auto dq = to_device(m.q);
  auto ds = to_device(m.scale);
  auto dw = to_device(to_half(w));
  auto dx = to_device(x);
  cudalab::testing::GuardedOutput<__half> y(static_cast<std::size_t>(rows));
  EXPECT_TRUE(cudalab::testing::replay_matches_plain_call(
      [&](cudaStream_t s) {
        gemv_int8_weight_only(dq.data(), ds.data(), dx.data(), y.data(), rows, cols, s);
      },
      y, "gemv_int8_weight_only (exercise 11.4)"));
  EXPECT_TRUE(cudalab::testing::replay_matches_plain_call(
      [&](cudaStream_t s) { gemv_fp16(dw.data(), dx.data(), y.data(), rows, cols, s); }, y,
      "gemv_fp16"));
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

namespace {
// The bits of an fp16 quiet NaN: what GuardedInput puts around x and w (a read past them shows).
__half half_nan() {
  __half_raw r;
  r.x = 0x7E00;
  return __half(r);
}
// y[r] for the int8 GEMV from host copies (the exact sum of the dequantized products) and the
// kernel's tolerance (as in MatchesQuantizedAndFp32Oracles).
struct RowWant {
  double exact, tol;
};
RowWant int8_row(const std::int8_t* q, float scale, const std::vector<float>& x, int cols) {
  double exact = 0, abs_terms = 0;
  for (int c = 0; c < cols; ++c) {
    const double t = static_cast<double>(q[c]) * scale * x[static_cast<std::size_t>(c)];
    exact += t, abs_terms += std::fabs(t);
  }
  return {exact, 1e-3 * std::fabs(exact) + 1e-5 * abs_terms + 1e-7};
}
}  // namespace

// Alignment: q, x and y each at +0 or +1 element of their allocation (a +1 view of q is 1 byte
// off, of x and y 2 bytes: not 16-byte aligned), cols a multiple of 16 (the 16-byte path's
// condition on the shape). The vector path may be taken only when every pointer it loads through
// allows it. x, q and the scales sit in front of NaN / 127 guard zones.
class GemvAlignmentGpu : public ::testing::TestWithParam<int> {};  // bits: q, x, y offsets

TEST_P(GemvAlignmentGpu, Int8AndFp16OnEveryAlignment) {
  CUDALAB_REQUIRE_GPU();
  const int bits = GetParam();
  const std::size_t oq = bits & 1, ox = (bits >> 1) & 1, oy = (bits >> 2) & 1;
  const int rows = 37, cols = 4096;
  Rng rng;
  const auto w = rng.uniform<float>(static_cast<std::size_t>(rows) * cols, -1.0f, 1.0f);
  const std::vector<float> x =
      to_float(to_half(rng.uniform<float>(static_cast<std::size_t>(cols), -1.0f, 1.0f)));
  const Int8Matrix m = quantize_int8_per_channel(w, rows, cols);
  const cudalab::testing::GuardedInput<std::int8_t> dq(m.q, oq, std::int8_t{127});
  const cudalab::testing::GuardedInput<float> ds(m.scale, 0);
  const cudalab::testing::GuardedInput<__half> dx(to_half(x), ox, half_nan());
  const std::string where = "(exercise 11.4, " + std::to_string(rows) + "x" + std::to_string(cols) +
                            ", q +" + std::to_string(oq) + ", x +" + std::to_string(ox) + ", y +" +
                            std::to_string(oy) + " elements)";
  {
    cudalab::testing::GuardedOutput<__half> y(oy + rows);
    gemv_int8_weight_only(dq.data(), ds.data(), dx.data(), y.data() + oy, rows, cols);
    CUDALAB_CHECK(cudaDeviceSynchronize());
    const std::vector<float> got = to_float(y.result());
    for (int r = 0; r < rows; ++r) {
      const RowWant want =
          int8_row(m.q.data() + static_cast<std::size_t>(r) * cols, m.scale[r], x, cols);
      ASSERT_LE(std::fabs(got[oy + r] - want.exact), want.tol)
          << "gemv_int8_weight_only row " << r << ": got " << got[oy + r] << ", want " << want.exact
          << " " << where;
    }
    EXPECT_TRUE(y.guard_intact()) << where;
    EXPECT_TRUE(y.untouched(0, oy, "gemv_int8_weight_only " + where));
  }
  {
    const std::vector<float> wh = to_float(to_half(w));
    const cudalab::testing::GuardedInput<__half> dw(to_half(wh), oq, half_nan());
    cudalab::testing::GuardedOutput<__half> y(oy + rows);
    gemv_fp16(dw.data(), dx.data(), y.data() + oy, rows, cols);
    CUDALAB_CHECK(cudaDeviceSynchronize());
    const std::vector<float> got = to_float(y.result());
    for (int r = 0; r < rows; ++r) {
      double exact = 0, abs_terms = 0;
      for (int c = 0; c < cols; ++c) {
        const double t = double{wh[static_cast<std::size_t>(r) * cols + c]} * x[c];
        exact += t, abs_terms += std::fabs(t);
      }
      ASSERT_LE(std::fabs(got[oy + r] - exact), 1e-3 * std::fabs(exact) + 1e-5 * abs_terms + 1e-7)
          << "gemv_fp16 row " << r << " " << where << " (w at +" << oq << ")";
    }
    EXPECT_TRUE(y.guard_intact()) << where;
  }
}

INSTANTIATE_TEST_SUITE_P(Offsets, GemvAlignmentGpu, ::testing::Range(0, 8),
                         [](const ::testing::TestParamInfo<int>& p) {
                           return "q" + std::to_string(p.param & 1) + "_x" +
                                  std::to_string((p.param >> 1) & 1) + "_y" +
                                  std::to_string((p.param >> 2) & 1);
                         });

// Index width: 65540 x 32768 weights, 2^31 + 131072 int8 (2.1 GB) and as many fp16 (4.3 GB): the
// row offset r * cols passes 2^31 elements from row 65536 on, and a 32-bit product breaks there.
// Weights from the device fill; the rows on both sides of the crossing, the first, the last and
// random ones are checked against the double oracle on the host (one 32768-long dot each).
TEST(GemvLargeGpu, RowsPastTwoToThe31Elements) {
  const int rows = 65540, cols = 32768;
  const std::size_t n = static_cast<std::size_t>(rows) * cols;
  CUDALAB_REQUIRE_DEVICE_MEMORY(3 * n + (std::size_t{1} << 30));
  const std::uint64_t seed = Rng().seed();
  Rng rng(seed);
  const std::vector<float> x =
      to_float(to_half(rng.uniform<float>(static_cast<std::size_t>(cols), -1.0f, 1.0f)));
  auto dx = to_device(to_half(x));
  std::vector<int> sample_rows{0, 1, 65535, 65536, 65537, rows - 1};
  for (int k = 0; k < 4; ++k) sample_rows.push_back(rng.scalar<int>(0, rows - 1));
  {  // int8: q filled as ints (four weights each), scales in [1e-3, 1e-2]
    DeviceBuffer<int> q(n / 4);
    fill_uniform_device(q.data(), q.size(), seed, std::numeric_limits<int>::min(),
                        std::numeric_limits<int>::max());
    DeviceBuffer<float> scale(static_cast<std::size_t>(rows));
    fill_uniform_device(scale.data(), scale.size(), seed + 1, 1e-3f, 1e-2f);
    DeviceBuffer<__half> y(static_cast<std::size_t>(rows));
    poison_device(y.data(), y.bytes());
    gemv_int8_weight_only(reinterpret_cast<const std::int8_t*>(q.data()), scale.data(), dx.data(),
                          y.data(), rows, cols);
    CUDALAB_CHECK(cudaDeviceSynchronize());
    const auto got = y.to_host();
    std::vector<std::int8_t> qrow(static_cast<std::size_t>(cols));
    for (const int r : sample_rows) {
      for (int c = 0; c < cols; ++c) {
        const std::size_t byte = static_cast<std::size_t>(r) * cols + c;
        const auto word = static_cast<unsigned>(uniform_at(
            seed, byte / 4, std::numeric_limits<int>::min(), std::numeric_limits<int>::max()));
        qrow[static_cast<std::size_t>(c)] = static_cast<std::int8_t>(word >> (8 * (byte % 4)));
      }
      const RowWant want = int8_row(qrow.data(), uniform_at(seed + 1, r, 1e-3f, 1e-2f), x, cols);
      EXPECT_LE(std::fabs(__half2float(got[static_cast<std::size_t>(r)]) - want.exact), want.tol)
          << "gemv_int8_weight_only (exercise 11.4, 65540 x 32768: row offsets past 2^31) row " << r
          << ": got " << __half2float(got[static_cast<std::size_t>(r)]) << ", want " << want.exact;
    }
  }
  {  // fp16
    DeviceBuffer<std::uint16_t> w(n);
    fill_random(w.data(), n, seed + 2, DType::kF16, -1.0f, 1.0f);
    DeviceBuffer<__half> y(static_cast<std::size_t>(rows));
    poison_device(y.data(), y.bytes());
    gemv_fp16(w.data(), dx.data(), y.data(), rows, cols);
    CUDALAB_CHECK(cudaDeviceSynchronize());
    const auto got = y.to_host();
    for (const int r : sample_rows) {
      double exact = 0, abs_terms = 0;
      for (int c = 0; c < cols; ++c) {
        const double t = double{random_at(seed + 2, static_cast<std::size_t>(r) * cols + c,
                                          DType::kF16, -1.0f, 1.0f)} *
                         x[static_cast<std::size_t>(c)];
        exact += t, abs_terms += std::fabs(t);
      }
      EXPECT_LE(std::fabs(__half2float(got[static_cast<std::size_t>(r)]) - exact),
                1e-3 * std::fabs(exact) + 1e-5 * abs_terms + 1e-7)
          << "gemv_fp16 (65540 x 32768: row offsets past 2^31) row " << r;
    }
  }
}
