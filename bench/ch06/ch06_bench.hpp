// Chapter 6 benchmarks, what several topic files share: the tolerance of a K-long fp32 dot product,
// the sampled host oracle of a GEMM, the cuBLAS calls in row-major terms, and the SGEMM operands
// (sgemm.cpp, tc_gemm.cpp, conv.cpp, fused.cpp).
#pragma once

#include <string>
#include <vector>

#include "cudalab/bench.hpp"
#include "cudalab/cublas.hpp"
#include "cudalab/device_fill.hpp"
#include "cudalab/memory.hpp"

namespace cudalab::bench_ch06 {

// |got - want| <= 2e-5 K + 1e-5 |want|: an fp32 dot product of K terms in [-1, 1] x [-1, 1] rounds
// by about sqrt(K) 2^-24 K / 4 in practice; a skipped tile or K slab is off by ~1 or more.
inline Tolerance dot_tolerance(int k) {
  return {.abs = 2e-5 * k, .rel = 1e-5};
}

// 64 sample indices in [0, n): both ends and a spread in between.
inline std::vector<int> samples(int n) {
  std::vector<int> s;
  for (int i = 0; i < 64; ++i)
    s.push_back(static_cast<int>((static_cast<long long>(n - 1) * i) / 63));
  return s;
}

// Host oracle of C (M x N) = A (M x K) op(B) on 64 x 64 sampled elements. B is K x N row-major
// (NN) or, with b_transposed, Bt (N x K) row-major (TN). `c` is the device result.
inline std::string check_gemm_sampled(const std::vector<float>& a, const std::vector<float>& b,
                                      bool b_transposed, int m, int n, int k,
                                      const std::vector<float>& c, const char* what) {
  std::vector<double> got, want;
  for (int i : samples(m))
    for (int j : samples(n)) {
      double acc = 0;
      for (int p = 0; p < k; ++p)
        acc += double(a[std::size_t(i) * k + p]) *
               double(b_transposed ? b[std::size_t(j) * k + p] : b[std::size_t(p) * n + j]);
      want.push_back(acc);
      got.push_back(c[std::size_t(i) * n + j]);
    }
  return bench::mismatch(got, want, dot_tolerance(k), what);
}

// Row-major C (M x N) = A (M x K) B (K x N) with column-major cuBLAS: C^T = B^T A^T.
inline void cublas_sgemm_nn(cublasHandle_t h, int m, int n, int k, const float* a, const float* b,
                            float* c, cudaStream_t s) {
  const float one = 1.0f, zero = 0.0f;
  CUDALAB_CHECK_CUBLAS(cublasSetStream(h, s));
  CUDALAB_CHECK_CUBLAS(
      cublasSgemm(h, CUBLAS_OP_N, CUBLAS_OP_N, n, m, k, &one, b, n, a, k, &zero, c, n));
}

// cublasGemmEx, fp32 output and compute. NN: B (K x N) row-major. TN: Bt (N x K) row-major, the
// wgmma kernel's layout: C^T = Bt A^T, Bt is the column-major K x N matrix (Bt)^T, taken with op T.
inline void cublas_gemm_ex(cublasHandle_t h, bool tn, int m, int n, int k, const void* a,
                           const void* b, cudaDataType_t type, float* c, cudaStream_t s) {
  const float one = 1.0f, zero = 0.0f;
  CUDALAB_CHECK_CUBLAS(cublasSetStream(h, s));
  CUDALAB_CHECK_CUBLAS(cublasGemmEx(h, tn ? CUBLAS_OP_T : CUBLAS_OP_N, CUBLAS_OP_N, n, m, k, &one,
                                    b, type, tn ? k : n, a, type, k, &zero, c, CUDA_R_32F, n,
                                    CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT));
}

struct GemmData {
  int m, n, k;
  DeviceBuffer<float> a, b, c, ref;  // ref: the library's result for the same inputs
  GemmData(int m_, int n_, int k_)
      : m(m_),
        n(n_),
        k(k_),
        a(uniform_device_buffer(std::size_t(m_) * k_, 11, -1.0f, 1.0f)),
        b(uniform_device_buffer(std::size_t(k_) * n_, 12, -1.0f, 1.0f)),
        c(uniform_device_buffer(std::size_t(m_) * n_, 13, -1.0f, 1.0f)),
        ref(std::size_t(m_) * n_) {}
  double flops() const { return 2.0 * m * n * k; }
  // Compulsory traffic: read A and B once, write C (beta = 0).
  double bytes() const { return 4.0 * (double(m) * k + double(k) * n + double(m) * n); }
};

}  // namespace cudalab::bench_ch06
