// Quantization, host reference (host.hpp): INT8 per-channel symmetric, FP8 E4M3 / E5M2.
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>

#include "ch11/quantize.hpp"
#include "cudalab/check.hpp"

namespace cudalab::ch11 {

Int8Matrix quantize_int8_per_channel(std::span<const float> w, int rows, int cols) {
  require(rows >= 0, "rows", "must not be negative");
  require(cols >= 0, "cols", "must not be negative");
  require(w.size() == static_cast<std::size_t>(rows) * static_cast<std::size_t>(cols), "w",
          "must hold rows * cols elements");
  Int8Matrix m;
  m.rows = rows;
  m.cols = cols;
  m.q.resize(w.size());
  m.scale.resize(static_cast<std::size_t>(rows));
  for (int r = 0; r < rows; ++r) {
    const auto row = w.subspan(static_cast<std::size_t>(r) * cols, static_cast<std::size_t>(cols));
    float amax = 0;
    for (float x : row) {
      require(std::isfinite(x), "w", "holds a NaN or an infinity (INT8 cannot represent it)");
      amax = std::max(amax, std::fabs(x));
    }
    const float scale = amax / 127.0f;
    m.scale[static_cast<std::size_t>(r)] = scale;
    for (int c = 0; c < cols; ++c) {
      float q = scale == 0 ? 0.0f : std::round(row[static_cast<std::size_t>(c)] / scale);
      q = std::clamp(q, -127.0f, 127.0f);  // amax / (amax / 127) may round to 127.00001
      m.q[static_cast<std::size_t>(r) * cols + c] = static_cast<std::int8_t>(q);
    }
  }
  return m;
}

std::vector<float> dequantize(const Int8Matrix& m) {
  std::vector<float> w(m.q.size());
  for (int r = 0; r < m.rows; ++r)
    for (int c = 0; c < m.cols; ++c) {
      const std::size_t i = static_cast<std::size_t>(r) * m.cols + c;
      w[i] = static_cast<float>(m.q[i]) * m.scale[static_cast<std::size_t>(r)];
    }
  return w;
}

namespace {
struct Layout {
  int man_bits, bias;
  bool ieee_inf;  // E5M2: exponent all ones is inf/NaN; E4M3fn: only S.1111.111 is NaN
};
Layout layout(Fp8Format f) {
  return f == Fp8Format::kE4M3 ? Layout{3, 7, false} : Layout{2, 15, true};
}
}  // namespace

double fp8_max(Fp8Format f) {
  return f == Fp8Format::kE4M3 ? 448.0 : 57344.0;
}

float fp8_to_float(std::uint8_t code, Fp8Format f) {
  const Layout l = layout(f);
  const int exp_bits = 7 - l.man_bits;
  const int e = (code >> l.man_bits) & ((1 << exp_bits) - 1);
  const int mant = code & ((1 << l.man_bits) - 1);
  const double sign = (code & 0x80) ? -1.0 : 1.0;
  const int emax_field = (1 << exp_bits) - 1;
  if (l.ieee_inf && e == emax_field)
    return mant == 0 ? static_cast<float>(sign * std::numeric_limits<double>::infinity())
                     : std::numeric_limits<float>::quiet_NaN();
  if (!l.ieee_inf && e == emax_field && mant == (1 << l.man_bits) - 1)
    return std::numeric_limits<float>::quiet_NaN();
  const double frac = static_cast<double>(mant) / (1 << l.man_bits);
  const double v = e == 0 ? std::ldexp(frac, 1 - l.bias) : std::ldexp(1.0 + frac, e - l.bias);
  return static_cast<float>(sign * v);
}

std::uint8_t float_to_fp8(float x, Fp8Format f, bool saturate) {
  const Layout l = layout(f);
  const std::uint8_t sign = std::signbit(x) ? 0x80 : 0x00;
  const std::uint8_t nan = 0x7F;  // S.1111.111 (E4M3) and S.11111.11 (E5M2) are both NaN
  if (std::isnan(x)) return nan;
  const double maxv = fp8_max(f);
  const std::uint8_t max_code = f == Fp8Format::kE4M3 ? 0x7E : 0x7B;
  const std::uint8_t overflow = saturate ? max_code : (f == Fp8Format::kE4M3 ? 0x7F : 0x7C);
  const double a = std::fabs(static_cast<double>(x));
  if (std::isinf(a)) return static_cast<std::uint8_t>(sign | overflow);
  if (a == 0) return sign;
  // Round to the grid of the format as if the exponent had no upper bound (ties to even), then
  // check the range: a value just above the largest one may round down to it.
  const int emin = 1 - l.bias;
  const int e = std::max(std::ilogb(a), emin);
  const double ulp = std::ldexp(1.0, e - l.man_bits);
  const double r = std::nearbyint(a / ulp) * ulp;  // the default rounding mode: to nearest even
  if (r > maxv) return static_cast<std::uint8_t>(sign | overflow);
  if (r == 0) return sign;
  const int re = std::ilogb(r);
  if (re < emin) {  // subnormal: exponent field 0
    const int mant = static_cast<int>(r / std::ldexp(1.0, emin - l.man_bits));
    return static_cast<std::uint8_t>(sign | mant);
  }
  const int mant = static_cast<int>(std::ldexp(r, l.man_bits - re)) - (1 << l.man_bits);
  return static_cast<std::uint8_t>(sign | ((re + l.bias) << l.man_bits) | mant);
}

Fp8Tensor quantize_fp8(std::span<const float> x, Fp8Format f) {
  float amax = 0;
  for (float v : x) {
    require(!std::isnan(v), "x", "holds a NaN");
    if (std::isfinite(v)) amax = std::max(amax, std::fabs(v));
  }
  Fp8Tensor t;
  t.format = f;
  t.scale = amax == 0 ? 1.0f : static_cast<float>(amax / fp8_max(f));
  t.codes.resize(x.size());
  for (std::size_t i = 0; i < x.size(); ++i) t.codes[i] = float_to_fp8(x[i] / t.scale, f, true);
  return t;
}

std::vector<float> dequantize(const Fp8Tensor& t) {
  std::vector<float> x(t.codes.size());
  for (std::size_t i = 0; i < x.size(); ++i) x[i] = fp8_to_float(t.codes[i], t.format) * t.scale;
  return x;
}

}  // namespace cudalab::ch11
