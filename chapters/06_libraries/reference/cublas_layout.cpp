// Exercise 6.3 — calling column-major cuBLAS from row-major code.
//
// cuBLAS follows Fortran BLAS: matrices are column-major. The bytes of a row-major (M, N) matrix
// with leading dimension ld are exactly the bytes of a column-major (N, M) matrix with the same
// ld: its transpose. Exercise 6.3 derives, from that fact alone, the cuBLAS calls that compute a
// row-major product with no copy and no transpose kernel.
#include "ch06/cublas_layout.hpp"

#include <algorithm>

#include "ch06/fused.hpp"
#include "cudalab/check.hpp"
#include "cudalab/cublas.hpp"

namespace cudalab::ch06 {
namespace {

cublasOperation_t to_cublas(Op op) {
  return op == Op::kN ? CUBLAS_OP_N : CUBLAS_OP_T;
}

// Elements a row-major matrix of `rows` rows of `cols` used columns spans with leading dimension
// ld.
std::size_t span_of(int rows, int cols, int ld) {
  return rows == 0 || cols == 0 ? 0 : static_cast<std::size_t>(rows - 1) * ld + cols;
}

}  // namespace

void cublas_sgemm_row_major(cublasHandle_t handle, Op opA, Op opB, int M, int N, int K, float alpha,
                            const float* A, int lda, const float* B, int ldb, float beta, float* C,
                            int ldc, cudaStream_t stream) {
  require(handle != nullptr, "handle", "is null (create one with cudalab::CublasHandle)");
  require(M >= 0, "M", "must be >= 0");
  require(N >= 0, "N", "must be >= 0");
  require(K >= 0, "K", "must be >= 0");
  // op(A) is (M, K): stored as (M, K) when not transposed, as (K, M) when transposed.
  const int a_rows = opA == Op::kN ? M : K, a_cols = opA == Op::kN ? K : M;
  const int b_rows = opB == Op::kN ? K : N, b_cols = opB == Op::kN ? N : K;
  require(lda >= std::max(1, a_cols), "lda",
          "must be >= the stored columns of A (K, or M when transposed)");
  require(ldb >= std::max(1, b_cols), "ldb",
          "must be >= the stored columns of B (N, or K when transposed)");
  require(ldc >= std::max(1, N), "ldc", "must be >= N");
  if (M == 0 || N == 0) return;
  require_device_pointer(A, span_of(a_rows, a_cols, lda), "A");
  require_device_pointer(B, span_of(b_rows, b_cols, ldb), "B");
  require_device_pointer(C, span_of(M, N, ldc), "C");
  CUDALAB_CHECK_CUBLAS(cublasSetStream(handle, stream));
  // BEGIN EXERCISE 6.3
  // TODO(6.3): cublas_sgemm_row_major: C = alpha op(A) op(B) + beta C with cuBLAS.
  //   Contract: everything in ch06/ch06.hpp: row-major A, B, C with the leading dimensions given
  //     (sub-matrices of bigger matrices included), op(A) (M, K), op(B) (K, N), C (M, N); any M, N,
  //     K >= 0; the arguments are checked above and the handle's stream is set; a cuBLAS error
  //     comes back as cudalab::LibraryError (CUDALAB_CHECK_CUBLAS).
  //   Constraints: exactly one cuBLAS call, no copy, no transpose kernel, no temporary buffer:
  //     cuBLAS reads and writes these very bytes, which it sees as column-major.
  //   Goal: correctness (`scripts/lab check 6.3`); the speed is cuBLAS's: BM_sgemm_cublas is the
  //     yardstick of the whole SGEMM ladder.
  // STARTER: (void)to_cublas(opA); (void)alpha; (void)beta;
  // STARTER: throw NotImplemented("Exercise 6.3: row-major SGEMM through column-major cuBLAS");
  CUDALAB_CHECK_CUBLAS(cublasSgemm(handle, to_cublas(opB), to_cublas(opA), N, M, K, &alpha, B, ldb,
                                   A, lda, &beta, C, ldc));
  // END EXERCISE
}

void cublas_sgemm_strided_batched_row_major(cublasHandle_t handle, int M, int N, int K, float alpha,
                                            const float* A, long long strideA, const float* B,
                                            long long strideB, float beta, float* C,
                                            long long strideC, int batch, cudaStream_t stream) {
  require(handle != nullptr, "handle", "is null (create one with cudalab::CublasHandle)");
  require(M >= 0 && N >= 0 && K >= 0, "M, N, K", "must be >= 0");
  require(batch >= 0, "batch", "must be >= 0");
  require(strideA >= 1LL * M * K, "strideA", "must be >= M * K (batches would overlap)");
  require(strideB >= 1LL * K * N, "strideB", "must be >= K * N (batches would overlap)");
  require(strideC >= 1LL * M * N, "strideC", "must be >= M * N (outputs would overlap)");
  if (M == 0 || N == 0 || batch == 0) return;
  require_device_pointer(A, static_cast<std::size_t>(strideA) * (batch - 1) + 1ULL * M * K, "A");
  require_device_pointer(B, static_cast<std::size_t>(strideB) * (batch - 1) + 1ULL * K * N, "B");
  require_device_pointer(C, static_cast<std::size_t>(strideC) * (batch - 1) + 1ULL * M * N, "C");
  CUDALAB_CHECK_CUBLAS(cublasSetStream(handle, stream));
  // BEGIN EXERCISE 6.3
  // TODO(6.3): cublas_sgemm_strided_batched_row_major: the `batch` dense row-major products C_i =
  //   alpha A_i B_i + beta C_i, with X_i = X + i * strideX (elements); checked above.
  //   Constraints: one cuBLAS call for all the batches (no loop over them), no copy.
  //   Goal: correctness (`scripts/lab check 6.3`).
  // STARTER: (void)alpha; (void)beta;
  // STARTER: throw NotImplemented("Exercise 6.3: strided-batched row-major SGEMM");
  CUDALAB_CHECK_CUBLAS(cublasSgemmStridedBatched(
      handle, CUBLAS_OP_N, CUBLAS_OP_N, N, M, K, &alpha, B, std::max(1, N), strideB, A,
      std::max(1, K), strideA, &beta, C, std::max(1, N), strideC, batch));
  // END EXERCISE
}

void cublas_gemm_ex_row_major(cublasHandle_t handle, int M, int N, int K, float alpha,
                              const void* A, const void* B, cudaDataType_t ab_type, float beta,
                              float* C, cudaStream_t stream) {
  require(handle != nullptr, "handle", "is null (create one with cudalab::CublasHandle)");
  require(M >= 0 && N >= 0 && K >= 0, "M, N, K", "must be >= 0");
  require(ab_type == CUDA_R_16F || ab_type == CUDA_R_16BF, "ab_type",
          "must be CUDA_R_16F or CUDA_R_16BF");
  if (M == 0 || N == 0) return;
  require_device_pointer(A, 1ULL * M * K, "A");
  require_device_pointer(B, 1ULL * K * N, "B");
  require_device_pointer(C, 1ULL * M * N, "C");
  CUDALAB_CHECK_CUBLAS(cublasSetStream(handle, stream));
  // BEGIN EXERCISE 6.3
  // TODO(6.3): cublas_gemm_ex_row_major: C (fp32, M x N) = alpha A B + beta C for dense row-major
  //   A (M x K) and B (K x N) of type ab_type (fp16 or bf16); checked above. It is exercise 6.5's
  //   second implementation under test (CublasGemmExGpu).
  //   Constraints: one cuBLAS call, mixed precision: fp16/bf16 inputs, fp32 output and fp32
  //     accumulation (the tensor cores); no copy.
  //   Goal: correctness (`scripts/lab check 6.3`).
  // STARTER: (void)alpha; (void)beta;
  // STARTER: throw NotImplemented("Exercise 6.3: mixed-precision row-major GEMM (cublas_gemm_ex_row_major)");
  CUDALAB_CHECK_CUBLAS(cublasGemmEx(handle, CUBLAS_OP_N, CUBLAS_OP_N, N, M, K, &alpha, B, ab_type,
                                    std::max(1, N), A, ab_type, std::max(1, K), &beta, C,
                                    CUDA_R_32F, std::max(1, N), CUBLAS_COMPUTE_32F,
                                    CUBLAS_GEMM_DEFAULT));
  // END EXERCISE
}

void gemm_bias_relu_cublas(cublasHandle_t handle, int M, int N, int K, const float* A,
                           const float* B, const float* bias, float* Y, cudaStream_t stream) {
  require(N >= 0, "N", "must be >= 0");
  require_device_pointer(bias, static_cast<std::size_t>(N), "bias");
  cublas_sgemm_row_major(handle, Op::kN, Op::kN, M, N, K, 1.0f, A, std::max(1, K), B,
                         std::max(1, N), 0.0f, Y, std::max(1, N), stream);
  bias_relu(Y, bias, M, N, stream);  // a second pass: reads and writes Y again
}

}  // namespace cudalab::ch06
