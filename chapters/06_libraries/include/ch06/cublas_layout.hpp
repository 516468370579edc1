// Chapter 6 — cuBLAS from row-major code (exercise 6.3).
//
// All matrices are row-major (C-style) unless a function says otherwise. Device pointers, sizes
// and a stream, like CUB; any size works (0, 1, odd, not a multiple of a tile); bad arguments
// throw std::invalid_argument naming the argument. (ch06/ch06.hpp includes every topic.)
#pragma once

#include <cublas_v2.h>
#include <cuda_runtime_api.h>

namespace cudalab::ch06 {

// ---------------------------------------------------------------------------------------------
// cuBLAS from row-major code (exercise 6.3). cuBLAS is column-major: a row-major (M, N) matrix
// with leading dimension ld is, bit for bit, a column-major (N, M) matrix with the same ld, i.e.
// its transpose. Exercise 6.3 turns that into the calls below: no copy, no transpose kernel.
// ---------------------------------------------------------------------------------------------
enum class Op { kN, kT };  // op(X) = X or X^T, as the row-major caller sees X

// C (M, N) = alpha * op(A) * op(B) + beta * C, all row-major with leading dimensions (elements
// between the starts of two rows): op(A) is (M, K): A is (M, K) with lda >= K when opA == kN,
// (K, M) with lda >= M when kT. Same for B: (K, N), ldb >= N when kN; (N, K), ldb >= K when kT.
// ldc >= N. A sub-matrix of a bigger matrix is its top-left pointer plus the big matrix's ld.
void cublas_sgemm_row_major(cublasHandle_t handle, Op opA, Op opB, int M, int N, int K, float alpha,
                            const float* A, int lda, const float* B, int ldb, float beta, float* C,
                            int ldc, cudaStream_t stream = nullptr);

// `batch` independent products C_i = alpha A_i B_i + beta C_i, dense row-major, A_i = A + i *
// strideA (elements), and so on: one cuBLAS call for all of them (exercise 6.3).
void cublas_sgemm_strided_batched_row_major(cublasHandle_t handle, int M, int N, int K, float alpha,
                                            const float* A, long long strideA, const float* B,
                                            long long strideB, float beta, float* C,
                                            long long strideC, int batch,
                                            cudaStream_t stream = nullptr);

// C (fp32) = alpha A B + beta C, dense row-major, A and B of type ab_type (CUDA_R_16F or
// CUDA_R_16BF), fp32 accumulation on the tensor cores: one cuBLAS call (exercise 6.3).
void cublas_gemm_ex_row_major(cublasHandle_t handle, int M, int N, int K, float alpha,
                              const void* A, const void* B, cudaDataType_t ab_type, float beta,
                              float* C, cudaStream_t stream = nullptr);

}  // namespace cudalab::ch06
