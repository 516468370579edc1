// PITFALL (exercise 6.1): the second __syncthreads is missing.
//
// After the inner product over the tile, a fast warp goes straight on to the next K step and
// overwrites its row of Bs (and of As) while slower warps of the same block are still reading
// the old tile: they multiply a mix of two tiles. A one-tile K hides it (there is no next load);
// it shows with many K steps and several blocks per SM, and it is intermittent — the worst kind
// of bug. compute-sanitizer --tool racecheck names the shared-memory hazard at once: the reads of
// one K step and the stores of the next are no longer separated by a barrier, whatever the timing.
// Caught by: the GPU suite's racecheck pass on every run (declared RACE in CMakeLists.txt: racecheck
// over this pitfall's SgemmGpu / SgemmRaceGpu tests reports the hazard); by a test only
// intermittently: SgemmRaceGpu.RaceProneShapes/smem_tiled (512^3: 16 K tiles, 256 blocks, inputs
// in L2, 4 repeats) and, less reliably, the larger SgemmGpu.MatchesOracle shapes.
// An intermittent wrong answer from a kernel with shared memory: run racecheck.
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
    As[ty][tx] = (row < a.M && k0 + tx < a.K) ? a.A[at(row, k0 + tx, a.K)] : 0.0f;
    Bs[ty][tx] = (k0 + ty < a.K && col < a.N) ? a.B[at(k0 + ty, col, a.N)] : 0.0f;
    __syncthreads();
#pragma unroll
    for (int k = 0; k < T; ++k) acc += As[ty][k] * Bs[k][tx];
    // BUG: no __syncthreads() here — the next iteration's stores race with these reads.
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
