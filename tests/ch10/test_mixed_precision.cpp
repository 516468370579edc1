// Mixed precision on the CPU: fp16/bf16 rounding against CUDA's own conversions, the fp16 sum's
// overflow and stagnation and their fix (fp32 accumulation), gradient underflow and its fix (loss
// scaling, exercise 10.4: skip the step on inf, back off, grow), bf16's range against its
// precision.
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <vector>

#include "ch10/mixed_precision.hpp"
#include "cudalab/random.hpp"
#include "cudalab/testing.hpp"

using namespace cudalab;
using ch10::Format;
using cudalab::testing::expect_throws_naming;

TEST(MixedPrecisionRounding, MatchesCudaConversionsOnEveryExponent) {
  // CUDA's host-side __float2half_rn / __float2bfloat16_rn are the oracle of the emulation.
  Rng rng;
  std::size_t checked = 0;
  for (int e = -30; e <= 20; ++e)
    for (int k = 0; k < 400; ++k) {
      const float x = std::ldexp(rng.scalar<float>(1.0f, 2.0f), e) * (k % 2 ? -1.0f : 1.0f);
      const float h = __half2float(__float2half_rn(x));
      const float b = __bfloat162float(__float2bfloat16_rn(x));
      ASSERT_EQ(ch10::round_to_fp16(x), h) << "x = " << x;
      ASSERT_EQ(ch10::round_to_bf16(x), b) << "x = " << x;
      ++checked;
    }
  // Halfway cases round to even; the overflow boundary 65520 goes to inf.
  for (float x : {1.0f + 0x1p-11f, 1.0f + 3 * 0x1p-11f, 65504.0f, 65519.0f, 65520.0f, 0x1p-25f,
                  0x1p-24f, 3 * 0x1p-26f, 1e-9f})
    EXPECT_EQ(ch10::round_to_fp16(x), __half2float(__float2half_rn(x))) << "x = " << x;
  EXPECT_GT(checked, 20000u);
}

TEST(MixedPrecisionRounding, FormatLimits) {
  EXPECT_EQ(ch10::round_to_fp16(65504.0f), 65504.0f);  // fp16's largest finite value
  EXPECT_TRUE(std::isinf(ch10::round_to_fp16(70000.0f)));
  EXPECT_EQ(ch10::round_to_fp16(0x1p-24f), 0x1p-24f);  // the smallest subnormal ~ 6e-8
  EXPECT_EQ(ch10::round_to_fp16(0x1p-26f), 0.0f);      // below half of it: flushed to 0
  EXPECT_EQ(ch10::round_to_fp16(1.0f + 0x1p-10f), 1.0f + 0x1p-10f);
  EXPECT_FALSE(std::isinf(ch10::round_to_bf16(1e38f)));  // bf16 has fp32's range...
  EXPECT_NE(ch10::round_to_bf16(1e-30f), 0.0f);
  EXPECT_EQ(ch10::round_to_bf16(1.0f + 0x1p-9f), 1.0f);  // ...and 8 significant bits
  EXPECT_EQ(ch10::round_to_bf16(1.0f + 0x1p-7f), 1.0f + 0x1p-7f);
}

TEST(MixedPrecisionSum, Fp16AccumulatorOverflowsFp32DoesNot) {
  // 100 activations of 1000 (each exact in fp16): the true sum 100,000 is past fp16's 65504. A
  // half running sum overflows to inf. Accumulated in fp32 the sum is right, and only storing it
  // as fp16 overflows: the fix keeps the reduction's result in fp32 (or divides, for a mean,
  // before the rounding).
  const std::vector<float> v(100, 1000.0f);
  EXPECT_TRUE(std::isinf(ch10::sum_in(v, Format::kFp16, Format::kFp16)));
  EXPECT_TRUE(std::isinf(ch10::sum_in(v, Format::kFp16, Format::kFp32)));
  EXPECT_EQ(ch10::sum_in(v, Format::kFp32, Format::kFp32), 100000.0f);
  EXPECT_EQ(ch10::round_to_fp16(ch10::sum_in(v, Format::kFp32, Format::kFp32) / 100.0f), 1000.0f);
  // Small terms do not even reach inf: 10,000 x 8 in a half accumulator stops at 16384 (its ulp
  // there is 16, 16384 + 8 is a tie and rounds to even, back to 16384): neither an inf nor the
  // right answer, silently.
  const std::vector<float> w(10000, 8.0f);
  EXPECT_EQ(ch10::sum_in(w, Format::kFp16, Format::kFp16), 16384.0f);
  EXPECT_EQ(ch10::sum_in(w, Format::kFp32, Format::kFp32), 80000.0f);
}

TEST(MixedPrecisionSum, Fp16AccumulatorStallsFp32DoesNot) {
  // 4096 terms of 0.6: past 2048 an fp16 sum's ulp is 2, and s + 0.6 rounds back to s; a bf16
  // running sum stalls far earlier (its ulp is 2 at 256). An fp32 accumulator loses nothing
  // visible: the fix that the lab's half kernels use (10.2).
  const std::vector<float> v(4096, 0.6f);
  const double exact = 4096 * double(ch10::round_to_fp16(0.6f));
  const float half_acc = ch10::sum_in(v, Format::kFp16, Format::kFp16);
  const float fp32_acc = ch10::sum_in(v, Format::kFp16, Format::kFp32);
  EXPECT_LE(half_acc, 2048.0f + 2.0f) << "fp16 accumulator";
  EXPECT_NEAR(fp32_acc, exact, 0x1p-11 * exact) << "fp32 accumulator, one final fp16 rounding";
  EXPECT_LE(ch10::sum_in(v, Format::kBf16, Format::kBf16), 512.0f) << "bf16 accumulator";
  EXPECT_NEAR(ch10::sum_in(v, Format::kBf16, Format::kFp32),
              4096 * double(ch10::round_to_bf16(0.6f)), 0x1p-8 * exact);
}

TEST(MixedPrecisionUnderflow, SmallGradientsVanishInFp16NotInBf16) {
  // Gradients log-uniform over [1e-10, 1e-3]: fp16 flushes everything below 2^-25 to 0 (no NaN,
  // no warning); bf16 keeps all of them (its exponent is fp32's).
  Rng rng;
  std::vector<float> g(10000);
  for (auto& v : g) v = std::pow(10.0f, rng.scalar<float>(-10.0f, -3.0f));
  const double lost = ch10::underflow_fraction_fp16(g);
  EXPECT_GT(lost, 0.2) << "a fifth of these gradients are below fp16's floor";
  std::size_t bf16_lost = 0;
  for (float v : g) bf16_lost += ch10::round_to_bf16(v) == 0.0f;
  EXPECT_EQ(bf16_lost, 0u);
  // Scaled by 2^16 before the cast, almost all survive: the loss scaler's point.
  std::vector<float> scaled(g);
  for (auto& v : scaled) v *= 65536.0f;
  EXPECT_LT(ch10::underflow_fraction_fp16(scaled), 0.01);
}

TEST(LossScaler, UnscaleRecoversSmallGradients) {
  ch10::LossScaler s;
  Rng rng;
  std::vector<float> g(1000);
  for (auto& v : g) v = std::pow(10.0f, rng.scalar<float>(-9.0f, -5.0f));
  // The backward ran on the scaled loss, in fp16: each gradient is round_fp16(g * scale).
  std::vector<float> stored(g.size());
  for (std::size_t i = 0; i < g.size(); ++i) stored[i] = ch10::round_to_fp16(g[i] * s.scale());
  ASSERT_TRUE(s.unscale_and_check(stored));
  for (std::size_t i = 0; i < g.size(); ++i)
    ASSERT_NEAR(stored[i], g[i], 0x1p-10 * g[i] + 0x1p-24 / s.scale()) << "gradient " << i;
}

TEST(LossScaler, InfSkipsTheStepAndBacksOff) {
  ch10::LossScaler s({.init_scale = 1024.0f, .growth_interval = 3});
  std::vector<float> g = {1.0f, std::numeric_limits<float>::infinity(), 2.0f};
  const bool ok = s.unscale_and_check(g);
  EXPECT_FALSE(ok) << "an inf gradient must be reported (the step is skipped)";
  s.update(!ok);
  EXPECT_EQ(s.scale(), 512.0f);
  EXPECT_EQ(s.growth_tracker(), 0);
  std::vector<float> nan = {std::nanf("")};
  s.update(!s.unscale_and_check(nan));
  EXPECT_EQ(s.scale(), 256.0f) << "NaN counts as an overflow too";
}

TEST(LossScaler, GrowsAfterTheIntervalOfCleanSteps) {
  ch10::LossScaler s({.init_scale = 8.0f, .growth_interval = 3});
  s.update(false);
  s.update(false);
  EXPECT_EQ(s.scale(), 8.0f);
  EXPECT_EQ(s.growth_tracker(), 2);
  s.update(false);
  EXPECT_EQ(s.scale(), 16.0f);
  EXPECT_EQ(s.growth_tracker(), 0);
  s.update(false);
  s.update(true);  // an overflow resets the count
  s.update(false);
  s.update(false);
  EXPECT_EQ(s.scale(), 8.0f);
  s.update(false);
  EXPECT_EQ(s.scale(), 16.0f);
}

TEST(LossScaler, ScaleSettlesBelowTheOverflowPoint) {
  // Gradients of 1.0 (unscaled): fp16 overflows once scale x 1.0 > 65504. Started at 2^24, the
  // scaler backs off to 2^15 and then oscillates between 2^15 and 2^16 (a skipped step each time
  // it tries 2^16): the steps it takes are never inf, and it skips few of them.
  ch10::LossScaler s({.init_scale = 0x1p24f, .growth_interval = 10});
  int skipped = 0, taken = 0;
  for (int step = 0; step < 200; ++step) {
    std::vector<float> g = {ch10::round_to_fp16(1.0f * s.scale())};
    const bool ok = s.unscale_and_check(g);
    if (ok) {
      ++taken;
      EXPECT_EQ(g[0], 1.0f);
    } else {
      ++skipped;
    }
    s.update(!ok);
    EXPECT_LE(s.scale(), 0x1p24f);
  }
  EXPECT_LE(s.scale(), 65536.0f);
  EXPECT_GE(s.scale(), 32768.0f);
  EXPECT_GT(taken, 170) << "skipped " << skipped;
}

TEST(LossScaler, NeverOverflowsTheScaleAndRefusesBadOptions) {
  ch10::LossScaler s({.init_scale = 0x1p127f, .growth_interval = 1});
  s.update(false);
  EXPECT_TRUE(std::isfinite(s.scale()));
  expect_throws_naming([] { ch10::LossScaler({.init_scale = 0.0f}); }, "init_scale");
  expect_throws_naming([] { ch10::LossScaler({.growth_factor = 1.0f}); }, "growth_factor");
  expect_throws_naming([] { ch10::LossScaler({.backoff_factor = 1.5f}); }, "backoff_factor");
  expect_throws_naming([] { ch10::LossScaler({.growth_interval = 0}); }, "growth_interval");
}
