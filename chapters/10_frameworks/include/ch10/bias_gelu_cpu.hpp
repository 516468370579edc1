// Chapter 10 — bias + GELU on the CPU: the double-precision oracle of the tests, and (with T =
// float or double) the CPU kernel of the PyTorch operator. Header-only and free of CUDA headers so
// that a CPU-only torch build can compile it.
#pragma once

#include <cmath>
#include <cstddef>
#include <string_view>
#include <vector>

namespace cudalab::ch10::cpu {

// Phi(z), the normal CDF, through erfc: relative accuracy for z < 0 too, where 0.5 (1 + erf)
// cancels and keeps only an absolute 2^-53 (the oracle must be more accurate than the kernels).
inline double normal_cdf(double z) {
  return 0.5 * std::erfc(-z * 0.7071067811865476);
}

// gelu(z) and its derivative in double (Gelu::kErf when tanh_form is false).
inline double gelu(double z, bool tanh_form) {
  if (tanh_form) {
    const double k0 = 0.7978845608028654;  // sqrt(2 / pi)
    return 0.5 * z * (1.0 + std::tanh(k0 * (z + 0.044715 * z * z * z)));
  }
  return z * normal_cdf(z);
}

inline double gelu_grad(double z, bool tanh_form) {
  if (tanh_form) {
    const double k0 = 0.7978845608028654;
    const double t = std::tanh(k0 * (z + 0.044715 * z * z * z));
    return 0.5 * (1.0 + t) + 0.5 * z * (1.0 - t * t) * k0 * (1.0 + 3.0 * 0.044715 * z * z);
  }
  const double phi = 0.3989422804014327 * std::exp(-0.5 * z * z);  // the normal density
  return normal_cdf(z) + z * phi;
}

// y[r * ldy + c] = gelu(x[r * ldx + c] + bias[c]); arithmetic in double, one rounding to T.
template <class T>
void bias_gelu_forward(const T* x, std::size_t ldx, const T* bias, T* y, std::size_t ldy,
                       std::size_t rows, std::size_t cols, bool tanh_form) {
  for (std::size_t r = 0; r < rows; ++r)
    for (std::size_t c = 0; c < cols; ++c)
      y[r * ldy + c] = static_cast<T>(
          gelu(static_cast<double>(x[r * ldx + c]) + static_cast<double>(bias[c]), tanh_form));
}

// dx = dy gelu'(x + bias), dbias = column sums of dy gelu'(x + bias), accumulated in double.
template <class T>
void bias_gelu_backward(const T* dy, std::size_t lddy, const T* x, std::size_t ldx, const T* bias,
                        T* dx, std::size_t lddx, T* dbias, std::size_t rows, std::size_t cols,
                        bool tanh_form) {
  std::vector<double> sum(cols, 0.0);
  for (std::size_t r = 0; r < rows; ++r)
    for (std::size_t c = 0; c < cols; ++c) {
      const double z = static_cast<double>(x[r * ldx + c]) + static_cast<double>(bias[c]);
      const double g = static_cast<double>(dy[r * lddy + c]) * gelu_grad(z, tanh_form);
      dx[r * lddx + c] = static_cast<T>(g);
      sum[c] += g;
    }
  for (std::size_t c = 0; c < cols; ++c) dbias[c] = static_cast<T>(sum[c]);
}

}  // namespace cudalab::ch10::cpu
