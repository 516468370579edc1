// Chapter 10 — mixed precision on the CPU: what fp16 and bf16 do to a value, to a sum and to a
// gradient, and the loss scaler that keeps small fp16 gradients alive (PyTorch's GradScaler).
//
// The formats (IEEE binary16 and bfloat16; every value is computed here, none typed):
//   fp16: 5 exponent bits, 10 fraction bits: max 65504, smallest normal 2^-14 ~ 6.1e-5, smallest
//         subnormal 2^-24 ~ 6.0e-8; 1 + 2^-10 is its first value above 1.
//   bf16: fp32's 8 exponent bits, 7 fraction bits: fp32's range (max ~3.4e38, smallest normal
//         ~1.2e-38) with 3 significant digits: 1 + 2^-7 is its first value above 1.
// The traps: a sum kept in fp16 overflows (> 65504) or stops growing (its ulp exceeds the terms);
// gradients below 2^-24 flush to 0 in fp16 (silently, no NaN); bf16 keeps them but rounds
// 1 + 1/512 to 1. The fixes: accumulate in fp32 (what the lab's half kernels do, 10.2), scale the
// loss (LossScaler, 10.4), or use bf16 where the range, not the precision, is the problem.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <vector>

namespace cudalab::ch10 {

// Round-to-nearest-even of x to the format, returned as the float it represents (overflow gives
// +-inf, NaN stays NaN). Written from the bit layout; the tests check them against CUDA's
// __float2half_rn / __float2bfloat16_rn on every exponent.
float round_to_fp16(float x);
float round_to_bf16(float x);

enum class Format { kFp16, kBf16, kFp32 };
float round_to(Format f, float x);
const char* to_string(Format f);

// The sum of v (each value first rounded to `storage`), the running sum rounded to `accumulate`
// after every addition, the result rounded to `storage`: (kFp16, kFp16) is a half kernel with a
// half accumulator, (kFp16, kFp32) one that accumulates in fp32.
float sum_in(std::span<const float> v, Format storage, Format accumulate);

// The fraction of the nonzero values of g that round to 0 in fp16 (gradients lost to underflow).
double underflow_fraction_fp16(std::span<const float> g);

// Dynamic loss scaling, PyTorch's GradScaler semantics: the loss is multiplied by scale() before
// the backward pass so that small gradients stay above fp16's subnormal floor; unscale_and_check
// divides the (fp16) gradients by the scale and reports whether any is inf or NaN; update() then
// skips nothing itself but adjusts the scale: on an inf/NaN it backs off (scale *= backoff) and
// the caller must skip the optimizer step; after growth_interval finite steps in a row it grows
// (scale *= growth).
struct LossScalerOptions {
  float init_scale = 65536.0f;  // 2^16, GradScaler's default
  float growth_factor = 2.0f;
  float backoff_factor = 0.5f;
  int growth_interval = 2000;
};

class LossScaler {
 public:
  explicit LossScaler(LossScalerOptions options = {});
  float scale() const noexcept { return scale_; }
  int growth_tracker() const noexcept { return tracker_; }
  // grads: the scaled gradients as stored (fp16 values held in floats); divided by scale() in
  // place. Returns true when every gradient is finite (the step may be taken).
  bool unscale_and_check(std::span<float> grads) const;
  // After the step (taken or skipped): found_inf = !unscale_and_check(...).
  void update(bool found_inf);

 private:
  LossScalerOptions options_;
  float scale_;
  int tracker_ = 0;
};

}  // namespace cudalab::ch10
