// Chapter 6 — tensor cores: WMMA (exercise 6.5), mma.sync, wgmma (sm_90a), conversions.
//
// All matrices are row-major (C-style) unless a function says otherwise. Device pointers, sizes
// and a stream, like CUB; any size works (0, 1, odd, not a multiple of a tile); bad arguments
// throw std::invalid_argument naming the argument. (ch06/ch06.hpp includes every topic.)
#pragma once

#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime_api.h>

#include <cstddef>

namespace cudalab::ch06 {

// ---------------------------------------------------------------------------------------------
// Tensor cores (exercise 6.5): C (M, N) fp32 = alpha * A (M, K) * B (K, N) + beta * C, A and B in
// fp16 or bf16, fp32 accumulation, all row-major and dense. Any M, N, K (beta == 0 never reads C).
// ---------------------------------------------------------------------------------------------
void wmma_gemm(int M, int N, int K, float alpha, const __half* A, const __half* B, float beta,
               float* C, cudaStream_t stream = nullptr);
void wmma_gemm(int M, int N, int K, float alpha, const __nv_bfloat16* A, const __nv_bfloat16* B,
               float beta, float* C, cudaStream_t stream = nullptr);
// The same product through mma.sync PTX (worked example between WMMA and wgmma): ldmatrix from
// XOR-swizzled shared memory, a 4-stage cp.async pipeline; same layouts, any M, N, K (16-byte
// copies when K and N are multiples of 8 and A, B are 16-byte aligned, a guarded path otherwise).
void mma_gemm(int M, int N, int K, float alpha, const __half* A, const __half* B, float beta,
              float* C, cudaStream_t stream = nullptr);
void mma_gemm(int M, int N, int K, float alpha, const __nv_bfloat16* A, const __nv_bfloat16* B,
              float beta, float* C, cudaStream_t stream = nullptr);
// Hopper path (sm_90a, worked example): C (M, N) fp32 = A (M, K) * Bt^T, with Bt (N, K) row-major
// (both operands K-major, like a Linear layer's weight). Precondition, checked: M and N multiples
// of 128, K a positive multiple of 64, 16-byte aligned pointers, a device of compute capability 9.0
// (std::runtime_error otherwise: wgmma_supported() says whether it can run).
bool wgmma_supported();
void wgmma_gemm_bf16_tn(int M, int N, int K, const __nv_bfloat16* A, const __nv_bfloat16* Bt,
                        float* C, cudaStream_t stream = nullptr);
// fp32 -> fp16 / bf16 on the device, round to nearest even (benchmark inputs).
void convert(const float* in, __half* out, std::size_t n, cudaStream_t stream = nullptr);
void convert(const float* in, __nv_bfloat16* out, std::size_t n, cudaStream_t stream = nullptr);

}  // namespace cudalab::ch06
