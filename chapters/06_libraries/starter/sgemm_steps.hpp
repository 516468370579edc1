// Starter track — write your code at the TODO marks; the tests of each exercise
// fail until you do. (Generated from chapters/06_libraries/reference/sgemm_steps.hpp by scripts/variants.py.)
// The host side of the SGEMM ladder: the arguments, and the launchers the dispatcher
// (sgemm.cpp) calls, one per ladder step (each in its own .cu file).
#pragma once

#include <cuda_runtime_api.h>

#include <cstddef>
#include <cstdint>

#include "ch06/sgemm.hpp"

namespace cudalab::ch06::detail {

// The arguments of one SGEMM, dense row-major: A (M, K), B (K, N), C (M, N).
struct SgemmArgs {
  int M, N, K;
  float alpha;
  const float* A;
  const float* B;
  float beta;
  float* C;
};

// A row of `cols` floats starting at p can be read with 16-byte loads: aligned base, cols % 4 == 0.
inline bool rows_are_float4(const void* p, int cols) {
  return cols % 4 == 0 && reinterpret_cast<std::uintptr_t>(p) % 16 == 0;
}

// Launchers, one per ladder step (each in its own file). M, N > 0; K >= 0.
void sgemm_naive(const SgemmArgs& a, cudaStream_t stream);
void sgemm_coalesced(const SgemmArgs& a, cudaStream_t stream);
void sgemm_smem_tiled(const SgemmArgs& a, cudaStream_t stream);
void sgemm_blocktile_1d(const SgemmArgs& a, cudaStream_t stream);
void sgemm_blocktile_2d(const SgemmArgs& a, cudaStream_t stream);
void sgemm_vectorized(const SgemmArgs& a, cudaStream_t stream);
void sgemm_warptile(const SgemmArgs& a, cudaStream_t stream);  // the planned tile
void sgemm_warptile_tile(const SgemmArgs& a, WarptileTile tile, cudaStream_t stream);
// Step 8 (cp.async pipeline), any shape and alignment: the planned tile, or the one forced.
void sgemm_warptile_async(const SgemmArgs& a, cudaStream_t stream);
void sgemm_warptile_async_tile(const SgemmArgs& a, WarptileTile tile, cudaStream_t stream);
// The warp-tiled kernel with the bias + ReLU epilogue (alpha = 1, beta = 0).
void sgemm_warptile_bias_relu(const SgemmArgs& a, const float* bias, WarptileTile tile,
                              cudaStream_t stream);
// The skinny path of gemm_bias_relu_fused (gemm_skinny.cu), the same epilogue: any M, though
// made for M <= kSkinnyMaxRows (ch06/fused.hpp).
void gemm_skinny_bias_relu(const SgemmArgs& a, const float* bias, cudaStream_t stream);

}  // namespace cudalab::ch06::detail
