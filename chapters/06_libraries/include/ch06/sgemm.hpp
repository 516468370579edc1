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
  kWarptileAsync,  // + 3-stage cp.async pipeline, BK = 16 (worked; the best). Needs K, N % 4 == 0
                   //   and 16-byte aligned A, B, C; otherwise it runs kWarptile (any size works)
};
inline constexpr SgemmVariant kAllSgemmVariants[] = {
    SgemmVariant::kNaive,       SgemmVariant::kCoalesced,    SgemmVariant::kSmemTiled,
    SgemmVariant::kBlocktile1d, SgemmVariant::kBlocktile2d,  SgemmVariant::kVectorized,
    SgemmVariant::kWarptile,    SgemmVariant::kWarptileAsync};
std::string_view to_string(SgemmVariant v);

void sgemm(SgemmVariant variant, int M, int N, int K, float alpha, const float* A, const float* B,
           float beta, float* C, cudaStream_t stream = nullptr);

}  // namespace cudalab::ch06
