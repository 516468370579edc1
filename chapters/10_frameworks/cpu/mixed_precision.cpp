// Chapter 10: fp16 / bf16 rounding from the bit layout, sums in a given format, underflow counts.
#include "ch10/mixed_precision.hpp"

#include <bit>
#include <cmath>
#include <cstdint>
#include <limits>

namespace cudalab::ch10 {

float round_to_fp16(float x) {
  if (std::isnan(x) || std::isinf(x)) return x;
  const double a = std::fabs(static_cast<double>(x));
  if (a == 0.0) return x;
  // The spacing of fp16 values around a: 2^(e - 10) for a normal value of exponent e >= -14, and
  // the subnormal spacing 2^-24 below 2^-14.
  int e = 0;
  std::frexp(a, &e);  // a = m 2^e, m in [0.5, 1): the exponent of a as a normal value is e - 1
  const int exp = e - 1 < -14 ? -14 : e - 1;
  const double quantum = std::ldexp(1.0, exp - 10);
  const double r = std::nearbyint(a / quantum) * quantum;  // round half to even (default mode)
  // Overflow: values that round past the largest finite value 65504 are inf.
  const double v = r > 65504.0 ? std::numeric_limits<double>::infinity() : r;
  return static_cast<float>(std::signbit(x) ? -v : v);
}

float round_to_bf16(float x) {
  if (std::isnan(x)) return x;
  // bf16 is the upper 16 bits of fp32: round the lower 16 away, to nearest even.
  std::uint32_t u = std::bit_cast<std::uint32_t>(x);
  const std::uint32_t lsb = (u >> 16) & 1u;
  u += 0x7FFFu + lsb;  // carries into the exponent on overflow: gives inf, as it should
  u &= 0xFFFF0000u;
  return std::bit_cast<float>(u);
}

float round_to(Format f, float x) {
  switch (f) {
    case Format::kFp16:
      return round_to_fp16(x);
    case Format::kBf16:
      return round_to_bf16(x);
    case Format::kFp32:
      return x;
  }
  return x;
}

const char* to_string(Format f) {
  switch (f) {
    case Format::kFp16:
      return "fp16";
    case Format::kBf16:
      return "bf16";
    case Format::kFp32:
      return "fp32";
  }
  return "?";
}

float sum_in(std::span<const float> v, Format storage, Format accumulate) {
  float s = 0.0f;
  for (float x : v) s = round_to(accumulate, s + round_to(storage, x));
  return round_to(storage, s);
}

double underflow_fraction_fp16(std::span<const float> g) {
  std::size_t nonzero = 0, lost = 0;
  for (float x : g) {
    if (x == 0.0f) continue;
    ++nonzero;
    if (round_to_fp16(x) == 0.0f) ++lost;
  }
  return nonzero == 0 ? 0.0 : static_cast<double>(lost) / static_cast<double>(nonzero);
}

}  // namespace cudalab::ch10
