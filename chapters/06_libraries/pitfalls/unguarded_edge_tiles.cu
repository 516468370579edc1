// PITFALL (exercise 6.1): tile loads without bounds checks ("sizes are multiples of 32 anyway").
//
// When K (or M, N) is not a multiple of the tile, the last tile reaches past the matrix: As reads
// A[row][k0 + tx] with k0 + tx >= K, which is the start of the NEXT row of A (or past the end of
// the allocation), and Bs reads rows of B past K. Those values are not zero, so they are added
// into the dot products: the result is silently wrong for every element, not just the edges.
// Tutorials that only test 4096^3 never see it. Caught by: SgemmGpu.MatchesOracle on the odd
// shapes (17x33x9, 127x129x131, ...) for smem_tiled.
#include "ch06/ch06.hpp"
#include "cudalab/check.hpp"
#include "cudalab/math.hpp"
#include "sgemm_common.cuh"

namespace cudalab::ch06::detail {
namespace {

struct TiledConfig {
  static constexpr int kTile = 32;
  static constexpr int kThreads = kTile * kTile;
};

__global__ void __launch_bounds__(TiledConfig::kThreads) sgemm_tiled_kernel(SgemmArgs a) {
  constexpr int T = TiledConfig::kTile;
  const int tx = threadIdx.x, ty = threadIdx.y;
  const int row = blockIdx.y * T + ty, col = blockIdx.x * T + tx;
  __shared__ float As[T][T];
  __shared__ float Bs[T][T];
  float acc = 0.0f;
  for (int k0 = 0; k0 < a.K; k0 += T) {
    As[ty][tx] = a.A[at(row, k0 + tx, a.K)];  // BUG: no check of row < M and k0 + tx < K
    Bs[ty][tx] = a.B[at(k0 + ty, col, a.N)];  // BUG: no check of k0 + ty < K and col < N
    __syncthreads();
#pragma unroll
    for (int k = 0; k < T; ++k) acc += As[ty][k] * Bs[k][tx];
    __syncthreads();
  }
  if (row < a.M) store1(a.C + at(row, 0, a.N), col, a.N, acc, Axpby{a.alpha, a.beta});
}

}  // namespace

void sgemm_smem_tiled(const SgemmArgs& a, cudaStream_t stream) {
  constexpr int t = TiledConfig::kTile;
  sgemm_tiled_kernel<<<dim3(ceil_div(a.N, t), ceil_div(a.M, t)), dim3(t, t), 0, stream>>>(a);
  CUDALAB_CHECK_LAUNCH();
}

}  // namespace cudalab::ch06::detail
