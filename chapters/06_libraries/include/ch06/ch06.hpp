// Chapter 6 — libraries and the hand-written GEMM ladder: cuBLAS, cuDNN, tensor cores.
//
// All matrices are row-major (C-style) unless a function says otherwise. Device pointers, sizes
// and a stream, like CUB; any size works (0, 1, odd, not a multiple of a tile); bad arguments
// throw std::invalid_argument naming the argument.
#pragma once

#include <cublas_v2.h>
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime_api.h>

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace cudalab::ch06 {

// ---------------------------------------------------------------------------------------------
// SGEMM ladder: C = alpha * A * B + beta * C, FP32 on the CUDA cores.
//   A: (M, K) row-major, B: (K, N) row-major, C: (M, N) row-major, dense (ld = K, N, N).
//   beta == 0 never reads C (C may hold NaN: 0 * NaN would be NaN, BLAS semantics say "ignore").
//   K == 0 gives C = beta * C. M == 0 or N == 0 does nothing.
// ---------------------------------------------------------------------------------------------
enum class SgemmVariant {
  kNaive,        // one thread per C element, threadIdx.x walks down a column: uncoalesced
  kCoalesced,    // threadIdx.x walks along a row of C and B: coalesced           (worked example)
  kSmemTiled,    // 32x32 tiles of A and B staged in shared memory                 (exercise 6.1)
  kBlocktile1d,  // each thread computes 8 C elements of a column (1D register blocking) (ex. 6.1)
  kBlocktile2d,  // each thread computes an 8x8 C tile (2D register blocking)     (exercise 6.2)
  kVectorized,   // + 16-byte global loads and 16-byte shared-memory reads      (exercise 6.2)
  kWarptile,     // + warp tiles, 4x4 sub-tiles, double-buffered shared memory (worked example)
  kWarptileAsync,  // + 3-stage cp.async pipeline, BK = 16 (worked; the best). Needs K, N % 4 == 0
                   //   and 16-byte aligned A, B, C; otherwise it runs kWarptile (any size works)
};
inline constexpr SgemmVariant kAllSgemmVariants[] = {
    SgemmVariant::kNaive,       SgemmVariant::kCoalesced,   SgemmVariant::kSmemTiled,
    SgemmVariant::kBlocktile1d, SgemmVariant::kBlocktile2d, SgemmVariant::kVectorized,
    SgemmVariant::kWarptile,    SgemmVariant::kWarptileAsync};
std::string_view to_string(SgemmVariant v);

void sgemm(SgemmVariant variant, int M, int N, int K, float alpha, const float* A, const float* B,
           float beta, float* C, cudaStream_t stream = nullptr);

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

// `batch` independent products C_i = alpha A_i B_i + beta C_i, dense row-major, A_i = A + i * strideA
// (elements), and so on: one cuBLAS call for all of them (exercise 6.3).
void cublas_sgemm_strided_batched_row_major(cublasHandle_t handle, int M, int N, int K, float alpha,
                                            const float* A, long long strideA, const float* B,
                                            long long strideB, float beta, float* C,
                                            long long strideC, int batch,
                                            cudaStream_t stream = nullptr);

// ---------------------------------------------------------------------------------------------
// Tensor cores (exercise 6.5): C (M, N) fp32 = alpha * A (M, K) * B (K, N) + beta * C, A and B in
// fp16 or bf16, fp32 accumulation, all row-major and dense. Any M, N, K (beta == 0 never reads C).
// ---------------------------------------------------------------------------------------------
void wmma_gemm(int M, int N, int K, float alpha, const __half* A, const __half* B, float beta,
               float* C, cudaStream_t stream = nullptr);
void wmma_gemm(int M, int N, int K, float alpha, const __nv_bfloat16* A, const __nv_bfloat16* B,
               float beta, float* C, cudaStream_t stream = nullptr);
// Hopper path (sm_90a, worked example): C (M, N) fp32 = A (M, K) * Bt^T, with Bt (N, K) row-major
// (both operands K-major, like a Linear layer's weight). Precondition, checked: M and N multiples of
// 128, K a positive multiple of 64, 16-byte aligned pointers, a device of compute capability 9.0
// (std::runtime_error otherwise: wgmma_supported() says whether it can run).
bool wgmma_supported();
void wgmma_gemm_bf16_tn(int M, int N, int K, const __nv_bfloat16* A, const __nv_bfloat16* Bt, float* C,
                        cudaStream_t stream = nullptr);
// fp32 -> fp16 / bf16 on the device, round to nearest even (benchmark inputs).
void convert(const float* in, __half* out, std::size_t n, cudaStream_t stream = nullptr);
void convert(const float* in, __nv_bfloat16* out, std::size_t n, cudaStream_t stream = nullptr);
// The vendor row: cublasGemmEx with CUBLAS_COMPUTE_32F, same row-major convention.
void cublas_gemm_ex_row_major(cublasHandle_t handle, int M, int N, int K, float alpha, const void* A,
                              const void* B, cudaDataType_t ab_type, float beta, float* C,
                              cudaStream_t stream = nullptr);

// ---------------------------------------------------------------------------------------------
// Library versus hand-written (exercise 6.6): Y (M, N) = relu(A (M, K) * B (K, N) + bias (N)).
// ---------------------------------------------------------------------------------------------
// Fused: the warp-tiled SGEMM with the bias and the ReLU applied in its epilogue (one pass over Y).
void gemm_bias_relu_fused(int M, int N, int K, const float* A, const float* B, const float* bias,
                          float* Y, cudaStream_t stream = nullptr);
// Library: cublasSgemm writes Y, then an elementwise kernel re-reads and rewrites it
// (8 M N extra bytes of DRAM traffic).
void gemm_bias_relu_cublas(cublasHandle_t handle, int M, int N, int K, const float* A,
                           const float* B, const float* bias, float* Y,
                           cudaStream_t stream = nullptr);
// The elementwise half of the library path: Y[m][n] = max(Y[m][n] + bias[n], 0).
void bias_relu(float* Y, const float* bias, int M, int N, cudaStream_t stream = nullptr);

// ---------------------------------------------------------------------------------------------
// Convolution (exercise 6.4): NCHW fp32, cross-correlation like every DL framework,
//   y[n][k][p][q] = sum_{c, r, s} x[n][c][p*stride - pad + r][q*stride - pad + s] * w[k][c][r][s]
// (out-of-range input reads are zeros: padding). x (N, C, H, W), w (K, C, R, S), y (N, K, P, Q).
// ---------------------------------------------------------------------------------------------
struct ConvShape {
  int n = 1, c = 1, h = 1, w = 1;  // input
  int k = 1, r = 1, s = 1;         // filters
  int stride = 1, pad = 0;
  int p() const { return (h + 2 * pad - r) / stride + 1; }  // output height
  int q() const { return (w + 2 * pad - s) / stride + 1; }  // output width
  double flops() const { return 2.0 * n * k * p() * q() * c * r * s; }
};
// Throws std::invalid_argument (naming the field) when a size is < 1, the filter does not fit in
// the padded input, pad >= r or s, or an element count exceeds 2^31 - 1 (32-bit indices inside).
void check_conv_shape(const ConvShape& shape);

// Hand-written implicit-GEMM convolution: GEMM rows are output pixels (n, p, q), columns output
// channels k, and the reduction runs over (c, r, s); the im2col matrix is never written.
void conv2d_implicit_gemm(const ConvShape& shape, const float* x, const float* w, float* y,
                          cudaStream_t stream = nullptr);

// cuDNN side (chapters/06_libraries/reference/cudnn_conv.cpp). Built only when CMake found cuDNN
// (CUDALAB_HAVE_CUDNN); otherwise have_cudnn() is false and the functions throw std::runtime_error.
bool have_cudnn() noexcept;
enum class ConvLayout { kNCHW, kNHWC };
enum class ConvType { kF32, kF16 };
struct ConvAlgoResult {
  std::string algo;          // "IMPLICIT_PRECOMP_GEMM", ...
  std::string status;        // "SUCCESS", "NOT_SUPPORTED", ...
  float time_ms = -1;        // measured by cudnnFindConvolutionForwardAlgorithmEx (-1: not run)
  std::size_t workspace = 0; // bytes of workspace it needs
  std::string math;          // "DEFAULT_MATH", "TENSOR_OP_MATH", ...
  bool from_find = false;    // true: timed by Find; false: ranked by the Get_v7 heuristics
  int rank = 0;              // position in cuDNN's list (0 = its first choice)
};
struct ConvAlgoReport {
  std::vector<ConvAlgoResult> heuristics;  // cudnnGetConvolutionForwardAlgorithm_v7
  std::vector<ConvAlgoResult> measured;    // cudnnFindConvolutionForwardAlgorithmEx
  std::string pick_no_workspace;           // fastest SUCCESS with workspace == 0
  std::string pick_unlimited;              // fastest SUCCESS, any workspace
  float time_no_workspace_ms = -1, time_unlimited_ms = -1;
};
// Enumerates cuDNN's forward algorithms for one shape (allocates its own tensors, random data).
ConvAlgoReport enumerate_conv_algos(const ConvShape& shape, ConvLayout layout, ConvType type,
                                    std::size_t max_workspace_bytes);

// cuDNN forward convolution for the benchmark and the tests: NCHW fp32, the algorithm cuDNN's
// heuristics pick within `max_workspace_bytes` (the object owns the workspace).
class CudnnConvForward {
 public:
  CudnnConvForward(const ConvShape& shape, std::size_t max_workspace_bytes = std::size_t{1} << 30);
  ~CudnnConvForward();
  CudnnConvForward(const CudnnConvForward&) = delete;
  CudnnConvForward& operator=(const CudnnConvForward&) = delete;
  void run(const float* x, const float* w, float* y, cudaStream_t stream = nullptr);
  std::string algo_name() const;

 private:
  struct Impl;
  Impl* impl_ = nullptr;
};

// ---------------------------------------------------------------------------------------------
// CPU oracles (cpu/oracle.cpp), in double.
// ---------------------------------------------------------------------------------------------
// C = alpha op(A) op(B) + beta C with the row-major conventions of cublas_sgemm_row_major; C is
// read only when beta != 0. Also returns, in `abs_sum` (when not null, size M * ldc), the
// sum_k |alpha a_ik b_kj| + |beta c_ij| of each element: the scale of its rounding error.
void gemm_oracle(Op opA, Op opB, int M, int N, int K, double alpha, const float* A, int lda,
                 const float* B, int ldb, double beta, const float* C_in, int ldc, double* C_out,
                 double* abs_sum);
// y = conv(x, w) in double.
std::vector<double> conv2d_oracle(const ConvShape& shape, const std::vector<float>& x,
                                  const std::vector<float>& w);

}  // namespace cudalab::ch06
