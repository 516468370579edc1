// Chapter 6 — convolution, implicit GEMM by hand and through cuDNN (exercise 6.4).
//
// All matrices are row-major (C-style) unless a function says otherwise. Device pointers, sizes
// and a stream, like CUB; any size works (0, 1, odd, not a multiple of a tile); bad arguments
// throw std::invalid_argument naming the argument. (ch06/ch06.hpp includes every topic.)
#pragma once

#include <cuda_runtime_api.h>

#include <cstddef>
#include <string>
#include <vector>

namespace cudalab::ch06 {

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
// The workspace holds, in this order: (1) when C is a multiple of 16 or large enough (3 Cp <= 4 C,
// Cp = C rounded up to 16), the filters transposed to [(r S + s) Cp + c][K rounded up to 128]
// (zero padded), rewritten by every call; (2) for shapes with few output pixels and a long C R S,
// the split-K partial sums, one N K P Q slab per block slice, added by a second kernel in a fixed
// order (the same bits on every run). conv2d_implicit_gemm_workspace_bytes(shape) says how much
// (0: neither; the split depends on the current device's SM count); allocate it once, outside a
// timed loop. With less, or a workspace that is not 16-byte aligned (or nullptr): no room for the
// filters runs the slower (c, r, s)-order kernel, fewer slabs split less or not at all; still
// correct, maybe slower. Every kernel runs on `stream`; the workspace is busy until it finishes.
std::size_t conv2d_implicit_gemm_workspace_bytes(const ConvShape& shape);
void conv2d_implicit_gemm(const ConvShape& shape, const float* x, const float* w, float* y,
                          void* workspace = nullptr, std::size_t workspace_bytes = 0,
                          cudaStream_t stream = nullptr);

// cuDNN side (chapters/06_libraries/reference/cudnn_conv.cpp). Built only when CMake found cuDNN
// (CUDALAB_HAVE_CUDNN); otherwise have_cudnn() is false and the functions throw std::runtime_error.
bool have_cudnn() noexcept;
enum class ConvLayout { kNCHW, kNHWC };
enum class ConvType { kF32, kF16 };
struct ConvAlgoResult {
  std::string algo;           // "IMPLICIT_PRECOMP_GEMM", ...
  std::string status;         // "SUCCESS", "NOT_SUPPORTED", ...
  float time_ms = -1;         // measured by cudnnFindConvolutionForwardAlgorithmEx (-1: not run)
  std::size_t workspace = 0;  // bytes of workspace it needs
  std::string math;           // "DEFAULT_MATH", "TENSOR_OP_MATH", ...
  bool from_find = false;     // true: timed by Find; false: ranked by the Get_v7 heuristics
  int rank = 0;               // position in cuDNN's list (0 = its first choice)
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

// How CudnnConvForward chooses its algorithm, always with FMA math (fp32 on the CUDA cores) and
// within the workspace limit:
//   kFastest      cudnnFind: the fastest measured algorithm of any kind (FFT and Winograd
//                 included: what cudnn.benchmark = True gives a framework) — the strongest
//                 baseline;
//   kFastestGemm  cudnnFind restricted to the GEMM family (IMPLICIT_GEMM, IMPLICIT_PRECOMP_GEMM,
//                 GEMM): the same algorithm as exercise 6.4, the like-for-like baseline;
//   kHeuristic    cudnnGetConvolutionForwardAlgorithm_v7's first choice (no measurement: what a
//                 framework does by default). On the H200 it was not the fastest on 3x3 layers.
enum class CudnnConvChoice { kFastest, kFastestGemm, kHeuristic };

// cuDNN forward convolution for the benchmark and the tests: NCHW fp32, the algorithm `choice`
// gives within `max_workspace_bytes` (the object owns the workspace). kFastest and kFastestGemm
// run cuDNN's Find once, in the constructor (tens of ms: keep the object out of a timed loop).
class CudnnConvForward {
 public:
  CudnnConvForward(const ConvShape& shape, std::size_t max_workspace_bytes = std::size_t{1} << 30,
                   CudnnConvChoice choice = CudnnConvChoice::kFastest);
  ~CudnnConvForward();
  CudnnConvForward(const CudnnConvForward&) = delete;
  CudnnConvForward& operator=(const CudnnConvForward&) = delete;
  void run(const float* x, const float* w, float* y, cudaStream_t stream = nullptr);
  std::string algo_name() const;

 private:
  struct Impl;
  Impl* impl_ = nullptr;
};

}  // namespace cudalab::ch06
