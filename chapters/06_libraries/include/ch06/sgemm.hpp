// Chapter 6 — the SGEMM ladder (exercises 6.1, 6.2).
//
// All matrices are row-major (C-style) unless a function says otherwise. Device pointers, sizes
// and a stream, like CUB; any size works (0, 1, odd, not a multiple of a tile); bad arguments
// throw std::invalid_argument naming the argument. (ch06/ch06.hpp includes every topic.)
#pragma once

#include <cuda_runtime_api.h>

#include <string_view>

namespace cudalab::ch06 {

// ---------------------------------------------------------------------------------------------
// SGEMM ladder: C = alpha * A * B + beta * C, FP32 on the CUDA cores.
//   A: (M, K) row-major, B: (K, N) row-major, C: (M, N) row-major, dense (ld = K, N, N).
//   beta == 0 never reads C (C may hold NaN: 0 * NaN would be NaN, BLAS semantics say "ignore").
//   K == 0 gives C = beta * C. M == 0 or N == 0 does nothing.
// ---------------------------------------------------------------------------------------------
enum class SgemmVariant {
  kNaive,          // one thread per C element, threadIdx.x walks down a column: uncoalesced
  kCoalesced,      // threadIdx.x walks along a row of C and B: coalesced           (worked example)
  kSmemTiled,      // 32x32 tiles of A and B staged in shared memory                 (exercise 6.1)
  kBlocktile1d,    // each thread computes 8 C elements of a column (1D register blocking) (ex. 6.1)
  kBlocktile2d,    // each thread computes an 8x8 C tile (2D register blocking)     (exercise 6.2)
  kVectorized,     // + 16-byte global loads and 16-byte shared-memory reads      (exercise 6.2)
  kWarptile,       // + warp tiles, 4x4 sub-tiles, double-buffered shared memory (worked example)
  kWarptileAsync,  // + 3-stage cp.async pipeline, BK = 16, A transposed by 4-byte copies (worked
                   //   example); any size and alignment, step 7's tile planner
};
inline constexpr SgemmVariant kAllSgemmVariants[] = {
    SgemmVariant::kNaive,       SgemmVariant::kCoalesced,    SgemmVariant::kSmemTiled,
    SgemmVariant::kBlocktile1d, SgemmVariant::kBlocktile2d,  SgemmVariant::kVectorized,
    SgemmVariant::kWarptile,    SgemmVariant::kWarptileAsync};
std::string_view to_string(SgemmVariant v);

void sgemm(SgemmVariant variant, int M, int N, int K, float alpha, const float* A, const float* B,
           float beta, float* C, cudaStream_t stream = nullptr);

// ---------------------------------------------------------------------------------------------
// Step 7's block tile (kWarptile, kWarptileAsync, gemm_bias_relu_fused). The 128 x 128
// tile (256 threads, 2 blocks per SM) does the most work per shared-memory read, but a problem of
// few such tiles leaves SMs idle: at 1024^3 its grid is 64 blocks for an H100's 132 SMs. The
// 64 x 64 tile (128 threads, 4 blocks per SM, 16 warps either way) makes 4x the blocks.
// plan_warptile_tile: k64x64 when the 128 x 128 grid, ceil(M / 128) * ceil(N / 128) blocks, has
// fewer than kWarptilePlanBlocksPerSm x num_sms blocks (under one block per SM: less than half of a
// wave of its 2 resident blocks per SM), else k128x128. On 132 SMs, 1024^3 (64 blocks) and
// 512 x 1024 (32) get 64 x 64; 2048^3 (256 blocks, 0.97 waves) keeps 128 x 128, where the 64 x 64
// tile measured slower. Runs on the CPU; M, N >= 0 and num_sms >= 1, or
// std::invalid_argument naming the argument. Never returns kAuto.
// ---------------------------------------------------------------------------------------------
enum class WarptileTile {
  kAuto,     // plan_warptile_tile for the current device
  k128x128,  // 256 threads, thread tile 8 x 8
  k64x64,    // 128 threads, thread tile 8 x 4
};
inline constexpr int kWarptilePlanBlocksPerSm = 1;
WarptileTile plan_warptile_tile(int M, int N, int num_sms);
std::string_view to_string(WarptileTile t);

// kWarptile with its block tile forced (kAuto: as sgemm(kWarptile, ...)); tests and benchmarks
// run both tiles on any shape this way. Same arguments and checks as sgemm.
void sgemm_warptile_tile(WarptileTile tile, int M, int N, int K, float alpha, const float* A,
                         const float* B, float beta, float* C, cudaStream_t stream = nullptr);
// kWarptileAsync (step 8) with its block tile forced, the same way.
void sgemm_warptile_async_tile(WarptileTile tile, int M, int N, int K, float alpha, const float* A,
                               const float* B, float beta, float* C, cudaStream_t stream = nullptr);

}  // namespace cudalab::ch06
