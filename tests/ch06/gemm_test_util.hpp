// Shared by the chapter 6 GEMM tests: the double oracle and the tolerance from the error analysis.
#pragma once

#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

#include "ch06/ch06.hpp"
#include "cudalab/compare.hpp"

namespace ch06_test {

// Rounding error of a fp32 GEMM element, any summation order (Higham, Accuracy and Stability of
// Numerical Algorithms, 3.1): |computed - exact| <= gamma_{K+2} * (|alpha| sum_k |a_ik b_kj| + |beta c_ij|),
// gamma_n = n u / (1 - n u), u = 2^-24: K products/additions, then alpha * . and + beta * c.
// `abs_sum` holds the parenthesis per element; the tolerance takes its maximum (random inputs in
// [-1, 1] give sums of similar size everywhere) plus a floor for K = 0. It is a worst-case bound,
// about sqrt(K) times above the typical error, and far below any indexing or race bug (which
// adds or drops whole products of size ~0.25).
inline cudalab::Tolerance gemm_tolerance(int K, const std::vector<double>& abs_sum, double u = 0x1p-24) {
  double max_sum = 0;
  for (double s : abs_sum) max_sum = std::max(max_sum, s);
  const double n = K + 2.0;
  const double gamma = n * u / (1.0 - n * u);
  return {.abs = gamma * max_sum + 1e-30, .rel = 0};
}

struct Shape {
  int m, n, k;
};
inline std::string shape_name(const Shape& s) {
  return std::to_string(s.m) + "x" + std::to_string(s.n) + "x" + std::to_string(s.k);
}

// Row-major dense oracle: C_out = alpha A B + beta C_in (C_in read only when beta != 0).
struct Oracle {
  std::vector<double> c, abs_sum;
};
inline Oracle gemm_dense_oracle(const Shape& s, double alpha, const std::vector<float>& A,
                                const std::vector<float>& B, double beta, const std::vector<float>& C) {
  Oracle o{std::vector<double>(static_cast<std::size_t>(s.m) * s.n),
           std::vector<double>(static_cast<std::size_t>(s.m) * s.n)};
  cudalab::ch06::gemm_oracle(cudalab::ch06::Op::kN, cudalab::ch06::Op::kN, s.m, s.n, s.k, alpha,
                             A.data(), std::max(1, s.k), B.data(), std::max(1, s.n), beta, C.data(),
                             std::max(1, s.n), o.c.data(), o.abs_sum.data());
  return o;
}

inline std::vector<float> to_float(const std::vector<double>& v) {
  return std::vector<float>(v.begin(), v.end());
}

}  // namespace ch06_test
