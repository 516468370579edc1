// CPU oracles of chapter 6, in double: GEMM with the row-major conventions of cuBLAS-from-C
// (op, leading dimensions) and the NCHW convolution. Also the convolution shape checks.
#include "ch06/oracle.hpp"

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <limits>
#include <vector>

#include "cudalab/check.hpp"

namespace cudalab::ch06 {

void gemm_oracle(Op opA, Op opB, int M, int N, int K, double alpha, const float* A, int lda,
                 const float* B, int ldb, double beta, const float* C_in, int ldc, double* C_out,
                 double* abs_sum) {
  // op(A)[i][k]: A[i * lda + k] when not transposed, A[k * lda + i] when transposed.
  auto a = [&](int i, int k) {
    return static_cast<double>(opA == Op::kN ? A[static_cast<std::size_t>(i) * lda + k]
                                             : A[static_cast<std::size_t>(k) * lda + i]);
  };
  auto b = [&](int k, int j) {
    return static_cast<double>(opB == Op::kN ? B[static_cast<std::size_t>(k) * ldb + j]
                                             : B[static_cast<std::size_t>(j) * ldb + k]);
  };
  std::vector<double> row(static_cast<std::size_t>(N)), row_abs(static_cast<std::size_t>(N));
  for (int i = 0; i < M; ++i) {
    std::fill(row.begin(), row.end(), 0.0);
    std::fill(row_abs.begin(), row_abs.end(), 0.0);
    for (int k = 0; k < K; ++k) {  // i-k-j order: the inner loop runs along rows of B
      const double aik = a(i, k);
      for (int j = 0; j < N; ++j) {
        const double p = aik * b(k, j);
        row[j] += p;
        row_abs[j] += std::abs(p);
      }
    }
    for (int j = 0; j < N; ++j) {
      const std::size_t o = static_cast<std::size_t>(i) * ldc + j;
      const double c = beta != 0.0 ? beta * static_cast<double>(C_in[o]) : 0.0;
      C_out[o] = alpha * row[j] + c;
      if (abs_sum) abs_sum[o] = std::abs(alpha) * row_abs[j] + std::abs(c);
    }
  }
}

void check_conv_shape(const ConvShape& s) {
  require(s.n >= 1, "shape.n", "must be >= 1");
  require(s.c >= 1, "shape.c", "must be >= 1");
  require(s.h >= 1, "shape.h", "must be >= 1");
  require(s.w >= 1, "shape.w", "must be >= 1");
  require(s.k >= 1, "shape.k", "must be >= 1");
  require(s.r >= 1, "shape.r", "must be >= 1");
  require(s.s >= 1, "shape.s", "must be >= 1");
  require(s.stride >= 1, "shape.stride", "must be >= 1");
  require(s.pad >= 0 && s.pad < s.r && s.pad < s.s, "shape.pad", "must be in [0, min(r, s))");
  require(s.h + 2 * s.pad >= s.r, "shape.r", "the filter is taller than the padded input");
  require(s.w + 2 * s.pad >= s.s, "shape.s", "the filter is wider than the padded input");
  constexpr double kMax = std::numeric_limits<int>::max();
  const double x = 1.0 * s.n * s.c * s.h * s.w, w = 1.0 * s.k * s.c * s.r * s.s,
               y = 1.0 * s.n * s.k * s.p() * s.q();
  require(x <= kMax && w <= kMax && y <= kMax && 1.0 * s.n * s.p() * s.q() <= kMax, "shape",
          "an element count exceeds 2^31 - 1 (the kernels index in 32 bits)");
}

std::vector<double> conv2d_oracle(const ConvShape& s, const std::vector<float>& x,
                                  const std::vector<float>& w) {
  check_conv_shape(s);
  const int P = s.p(), Q = s.q();
  std::vector<double> y(static_cast<std::size_t>(s.n) * s.k * P * Q, 0.0);
  for (int n = 0; n < s.n; ++n)
    for (int k = 0; k < s.k; ++k)
      for (int p = 0; p < P; ++p)
        for (int q = 0; q < Q; ++q) {
          double acc = 0.0;
          for (int c = 0; c < s.c; ++c)
            for (int r = 0; r < s.r; ++r) {
              const int h = p * s.stride - s.pad + r;
              if (h < 0 || h >= s.h) continue;
              for (int t = 0; t < s.s; ++t) {
                const int ww = q * s.stride - s.pad + t;
                if (ww < 0 || ww >= s.w) continue;
                acc += static_cast<double>(
                           x[((static_cast<std::size_t>(n) * s.c + c) * s.h + h) * s.w + ww]) *
                       w[((static_cast<std::size_t>(k) * s.c + c) * s.r + r) * s.s + t];
              }
            }
          y[((static_cast<std::size_t>(n) * s.k + k) * P + p) * Q + q] = acc;
        }
  return y;
}

}  // namespace cudalab::ch06
