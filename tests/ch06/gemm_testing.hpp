// Shared by the chapter 6 GEMM tests: the double oracle and the tolerance from the error analysis.
#pragma once

#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "ch06/ch06.hpp"
#include "cudalab/compare.hpp"
#include "cudalab/cublas.hpp"
#include "cudalab/device_check.hpp"
#include "cudalab/device_fill.hpp"
#include "cudalab/memory.hpp"
#include "cudalab/random.hpp"
#include "cudalab/testing.hpp"

namespace ch06_test {

// Rounding error of a fp32 GEMM element, any summation order (Higham, Accuracy and Stability of
// Numerical Algorithms, 3.1): |computed - exact| <= gamma_{K+2} * (|alpha| sum_k |a_ik b_kj| +
// |beta c_ij|), gamma_n = n u / (1 - n u), u = 2^-24: K products/additions, then alpha * . and +
// beta * c. `abs_sum` holds the parenthesis per element; the tolerance takes its maximum (random
// inputs in
// [-1, 1] give sums of similar size everywhere) plus a floor for K = 0. It is a worst-case bound,
// about sqrt(K) times above the typical error, and far below any indexing or race bug (which
// adds or drops whole products of size ~0.25).
inline cudalab::Tolerance gemm_tolerance(int K, const std::vector<double>& abs_sum,
                                         double u = 0x1p-24) {
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
                                const std::vector<float>& B, double beta,
                                const std::vector<float>& C) {
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

// ---- GEMMs at the benchmarked sizes, checked on the GPU against cuBLAS -------------------------
//
// A 4096^3 or 8192^3 product is too large for the CPU oracle (~10^12 flops in double), so the
// *LargeGpu tests compare with cuBLAS SGEMM on the device, element by element, within a bound
// that holds for any correct kernel:
//   inputs: k / 128 with k uniform in [-128, 128] (exact in fp32, fp16 and bf16; products exact);
//   both results err by at most gamma_{K+2} * S_ij (Higham 3.1), S = |A| |B| (abs values, computed
//   by cuBLAS too: S is low by at most a factor (1 - gamma)), so
//     |got_ij - cublas_ij| <= (gamma_{K+2}(u_got) + gamma_{K+2}(2^-24)) / (1 - gamma) * S_ij
//   with u_got = 2^-24 for SGEMM and 2^-23 for tensor cores (fp32 accumulation that may truncate).
// S_ij ~ K / 4, so the bound is ~0.25 at K = 4096 while an element is ~sqrt(K / 9) ~ 20 in size:
// a skipped or doubled K tile (error ~ sqrt(32 / 9) ~ 2), an unwritten tile (NaN poison), a wrong
// index, all fail. Output: "<what>: 12 of 16777216 elements differ; first at index ..".
// The 16-bit input types of the tensor-core tests: a float rounded to T (nearest), T back to float,
// and the type's name in test messages.
template <class T>
T from_float(float x);
template <>
inline __half from_float<__half>(float x) {
  return __float2half(x);
}
template <>
inline __nv_bfloat16 from_float<__nv_bfloat16>(float x) {
  return __float2bfloat16(x);
}
inline float to_float(__half x) {
  return __half2float(x);
}
inline float to_float(__nv_bfloat16 x) {
  return __bfloat162float(x);
}
template <class T>
const char* type_name();
template <>
inline const char* type_name<__half>() {
  return "fp16";
}
template <>
inline const char* type_name<__nv_bfloat16>() {
  return "bf16";
}

// The unit roundoff of a tensor-core GEMM's accumulation: inputs rounded to 16 bits first (the
// oracles multiply the rounded values), products exact, fp32 additions that may truncate instead
// of rounding to nearest: u = 2^-23 instead of 2^-24 in the gamma_{K+2} bound.
inline constexpr double kTensorCoreU = 0x1p-23;

// The elements an index-width test checks in its M x N result (C or Y), where one of A (M x K),
// B (K x N) or the result has more than 2^31 elements: rows and columns on both sides of the row
// where that matrix passes 2^31 elements, the first and last, 4 random ones of each, and the
// result's own boundary samples; sorted, without repeats (row * N + col).
inline std::vector<std::size_t> wide_index_samples(const Shape& s, std::uint64_t seed) {
  auto pick_rows = [&](std::size_t count, std::size_t cols) {
    std::vector<std::size_t> r{0, count - 1};
    const std::size_t cross = (std::size_t{1} << 31) / cols;
    for (const std::size_t x : {cross, cross + 1})
      if (x < count) r.push_back(x);
    cudalab::Rng pick(seed + count);
    for (int i = 0; i < 4; ++i)
      r.push_back(
          static_cast<std::size_t>(pick.scalar<long long>(0, static_cast<long long>(count) - 1)));
    return r;
  };
  std::vector<std::size_t> idx;
  const auto rows = pick_rows(std::size_t(s.m), std::size_t(s.k));  // A rows = result rows
  const auto cols = pick_rows(std::size_t(s.n), 1);                 // columns of B and the result
  for (const std::size_t i : rows)
    for (const std::size_t j : cols) idx.push_back(i * s.n + j);
  for (const std::size_t k : cudalab::testing::boundary_samples(std::size_t(s.m) * s.n, seed, 16))
    idx.push_back(k);
  std::sort(idx.begin(), idx.end());
  idx.erase(std::unique(idx.begin(), idx.end()), idx.end());
  return idx;
}

// The index-width tests' shapes: A (M x K), then C (M x N), then B (K x N) past 2^31 elements,
// the other two matrices small.
inline constexpr Shape kWideA{131075, 4, 16388}, kWideC{65540, 32772, 4}, kWideB{4, 131076, 16388};

// Element (i, j) of A B for the device-filled inputs of the index-width tests (A from
// fill_uniform_device(seed), B from seed + 1, both uniform in [-1, 1]), in double, with the sum of
// the products' magnitudes (the rounding bound's input): {value, abs_sum}.
inline std::pair<double, double> wide_dot(const Shape& s, std::uint64_t seed, std::size_t i,
                                          std::size_t j) {
  double acc = 0, abs_sum = 0;
  for (std::size_t k = 0; k < std::size_t(s.k); ++k) {
    const double p = double{cudalab::uniform_at(seed, i * s.k + k, -1.0f, 1.0f)} *
                     cudalab::uniform_at(seed + 1, k * s.n + j, -1.0f, 1.0f);
    acc += p, abs_sum += std::fabs(p);
  }
  return {acc, abs_sum};
}

struct LargeGemm {
  int m, n, k;
  bool bt;  // B given transposed (N x K, row-major: the TN layout of wgmma)
  cudalab::DeviceBuffer<float> A, B, S, ref;
  LargeGemm(int m_, int n_, int k_, bool bt_, std::uint64_t seed)
      : m(m_),
        n(n_),
        k(k_),
        bt(bt_),
        A(std::size_t(m_) * k_),
        B(std::size_t(k_) * n_),
        S(std::size_t(m_) * n_),
        ref(std::size_t(m_) * n_) {
    cudalab::testing::fill_dyadic_device(A.data(), A.size(), seed, 128, 128);
    cudalab::testing::fill_dyadic_device(B.data(), B.size(), seed + 1, 128, 128);
    cudalab::CublasHandle h;
    gemm(h, A.data(), B.data(), ref.data());
    cudalab::DeviceBuffer<float> absA(A.size()), absB(B.size());
    cudalab::testing::abs_device(A.data(), absA.data(), A.size());
    cudalab::testing::abs_device(B.data(), absB.data(), B.size());
    gemm(h, absA.data(), absB.data(), S.data());
    CUDALAB_CHECK(cudaDeviceSynchronize());
  }
  void gemm(cublasHandle_t h, const float* a, const float* b, float* c) const {
    cudalab::ch06::cublas_sgemm_row_major(h, cudalab::ch06::Op::kN,
                                          bt ? cudalab::ch06::Op::kT : cudalab::ch06::Op::kN, m, n,
                                          k, 1.0f, a, k, b, bt ? k : n, 0.0f, c, n);
  }
  // Checks `got` (m x n on the device) against cuBLAS within the bound above.
  ::testing::AssertionResult check(const float* got, double u_got, const std::string& what) const {
    const auto gamma = [&](double u) { return (k + 2.0) * u / (1.0 - (k + 2.0) * u); };
    const double scale = (gamma(u_got) + gamma(0x1p-24)) / (1.0 - gamma(0x1p-24));
    const auto r =
        cudalab::testing::check_within(got, ref.data(), S.data(), std::size_t(m) * n, scale);
    return cudalab::testing::device_matches(r, what + " (M x N x K = " + std::to_string(m) + "x" +
                                                   std::to_string(n) + "x" + std::to_string(k) +
                                                   ", against cuBLAS SGEMM on the GPU)");
  }
};

// A tensor-core GEMM with wmma_gemm's row-major NN signature at size^3, in fp16 and then in bf16:
// one LargeGemm's exact inputs converted to each type, C poisoned before each call, each result
// checked against cuBLAS SGEMM for fp32 accumulation that may truncate (u = 2^-23). `gemm` is
// called as gemm(M, N, K, alpha, A, B, beta, C) with __half, then __nv_bfloat16, pointers.
template <class Gemm>
void check_large_fp16_bf16_gemm(int size, const std::string& what, Gemm gemm) {
  const std::size_t mn = std::size_t(size) * size;
  const LargeGemm g(size, size, size, false, cudalab::Rng().seed());
  cudalab::DeviceBuffer<float> C(mn);
  const auto one_type = [&](auto tag, const char* type) {
    using T = decltype(tag);
    cudalab::DeviceBuffer<T> A(mn), B(mn);
    cudalab::ch06::convert(g.A.data(), A.data(), mn);
    cudalab::ch06::convert(g.B.data(), B.data(), mn);
    cudalab::poison_device(C.data(), C.bytes());
    gemm(size, size, size, 1.0f, static_cast<const T*>(A.data()), static_cast<const T*>(B.data()),
         0.0f, C.data());
    CUDALAB_CHECK(cudaDeviceSynchronize());
    EXPECT_TRUE(g.check(C.data(), kTensorCoreU, what + " " + type));
  };
  one_type(__half{}, "fp16");
  one_type(__nv_bfloat16{}, "bf16");
}

}  // namespace ch06_test
