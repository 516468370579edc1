// Chapter 6 — GEMM + bias + ReLU, fused by hand or through cuBLAS (exercise 6.6).
//
// All matrices are row-major (C-style) unless a function says otherwise. Device pointers, sizes
// and a stream, like CUB; any size works (0, 1, odd, not a multiple of a tile); bad arguments
// throw std::invalid_argument naming the argument. (ch06/ch06.hpp includes every topic.)
#pragma once

#include <cublas_v2.h>
#include <cuda_runtime_api.h>

#include "ch06/sgemm.hpp"

namespace cudalab::ch06 {

// ---------------------------------------------------------------------------------------------
// Library versus hand-written (exercise 6.6): Y (M, N) = relu(A (M, K) * B (K, N) + bias (N)).
// ---------------------------------------------------------------------------------------------
// Fused: the bias and the ReLU applied in the GEMM's epilogue (one pass over Y). The GEMM is the
// skinny kernel for M <= kSkinnyMaxRows (gemm_skinny.cu: one block per 32 columns of B, K split
// over the block's warps), else the warp-tiled SGEMM with its planned tile.
inline constexpr int kSkinnyMaxRows = 64;
// Whether gemm_bias_relu_fused(tile, M, ...) runs the skinny kernel (the dispatch rule, for
// callers that report which kernel ran).
inline bool fused_takes_skinny(WarptileTile tile, int M) {
  return tile == WarptileTile::kAuto && M <= kSkinnyMaxRows;
}
void gemm_bias_relu_fused(int M, int N, int K, const float* A, const float* B, const float* bias,
                          float* Y, cudaStream_t stream = nullptr);
// The same with step 7's block tile forced (ch06/sgemm.hpp, WarptileTile; kAuto: as above, the
// skinny kernel included; a forced tile always runs step 7).
void gemm_bias_relu_fused(WarptileTile tile, int M, int N, int K, const float* A, const float* B,
                          const float* bias, float* Y, cudaStream_t stream = nullptr);
// The skinny kernel at any M (tests and benchmarks: rows past kSkinnyMaxRows take grid.y > 2).
void gemm_bias_relu_skinny(int M, int N, int K, const float* A, const float* B, const float* bias,
                           float* Y, cudaStream_t stream = nullptr);
// Library: cublasSgemm writes Y, then an elementwise kernel re-reads and rewrites it
// (8 M N extra bytes of DRAM traffic).
void gemm_bias_relu_cublas(cublasHandle_t handle, int M, int N, int K, const float* A,
                           const float* B, const float* bias, float* Y,
                           cudaStream_t stream = nullptr);
// The elementwise half of the library path: Y[m][n] = max(Y[m][n] + bias[n], 0).
void bias_relu(float* Y, const float* bias, int M, int N, cudaStream_t stream = nullptr);

}  // namespace cudalab::ch06
