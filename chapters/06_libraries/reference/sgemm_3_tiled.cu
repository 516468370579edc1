// Exercise 6.1 — SGEMM step 3: 32x32 tiles of A and B staged in shared memory.
//
// A block of 32 x 32 threads computes a 32x32 tile of C from 32x32 tiles of A and B staged in
// shared memory: each global element is loaded by one thread of the block instead of 32, so global
// traffic drops 32x (intensity 32 x 0.25 = 8 FLOP/byte), and shared memory becomes the limit.
// Boehm: 8.5% -> 12.8% of cuBLAS. Edges: loads outside A or B read as 0, stores are guarded.
#include "ch06/sgemm.hpp"
#include "cudalab/check.hpp"
#include "cudalab/math.hpp"
#include "sgemm_common.cuh"

namespace cudalab::ch06::detail {
namespace {

struct TiledConfig {
  static constexpr int kTile = 32;  // block tile of C and K step: (32, 32)
  static constexpr int kThreads = kTile * kTile;
};
static_assert(TiledConfig::kThreads <= 1024);

// Launch: grid (ceil(N / 32), ceil(M / 32)), block (32, 32); thread (ty, tx) owns C[row][col].
__global__ void __launch_bounds__(TiledConfig::kThreads) sgemm_tiled_kernel(SgemmArgs a) {
  constexpr int T = TiledConfig::kTile;
  const int tx = threadIdx.x, ty = threadIdx.y;
  const int row = blockIdx.y * T + ty, col = blockIdx.x * T + tx;
  // BEGIN EXERCISE 6.1
  // TODO(6.1): sgemm_tiled_kernel, step 3 of the ladder.
  //   Contract: C = alpha A B + beta C (SgemmArgs a: row-major, dense) for the 32 x 32 tile of C
  //     this block owns; thread (ty, tx) owns C[row][col] (computed above). Any M, N, K (1 x 1 x 1,
  //     17 x 33 x 9, K = 0): elements outside A or B count as 0, nothing outside C is written, and
  //     beta == 0 never reads C (C may hold NaN). Epilogue through store1 with Axpby
  //     (sgemm_common.cuh).
  //   Constraints: every element of A and B this block needs is read from global memory once per
  //     block, staged in __shared__ tiles of 32 x 32; coalesced global loads; no library call;
  //     race-free (check it with compute-sanitizer --tool racecheck).
  //   Goal: BM_sgemm/smem_tiled/4096 >= 0.14x BM_sgemm_cublas/4096;
  //     `scripts/lab check 6.1`.
  // STARTER: (void)a; (void)row; (void)col;
  __shared__ float As[T][T];  // (TILE_M, TILE_K)
  __shared__ float Bs[T][T];  // (TILE_K, TILE_N)
  float acc = 0.0f;
  for (int k0 = 0; k0 < a.K; k0 += T) {
    // BEGIN PITFALL unguarded_edge_tiles EXERCISES 6.1
    // Tile loads without bounds checks ("sizes are multiples of 32 anyway"). When K (or M, N) is
    // not a multiple of the tile, the last tile reaches past the matrix: As reads A[row][k0 + tx]
    // with k0 + tx >= K, which is the start of the NEXT row of A (or past the end of the
    // allocation), and Bs reads rows of B past K. Those values are not zero, so they are added into
    // the dot products: the result is silently wrong for every element, not just the edges.
    // Tutorials that only test 4096^3 never see it. Caught by: SgemmGpu.MatchesOracle on the odd
    // shapes (17x33x9, 127x129x131, ...) for smem_tiled. The fix: 0 outside the matrices.
    As[ty][tx] = (row < a.M && k0 + tx < a.K) ? a.A[at(row, k0 + tx, a.K)] : 0.0f;
    Bs[ty][tx] = (k0 + ty < a.K && col < a.N) ? a.B[at(k0 + ty, col, a.N)] : 0.0f;
    // BUG: As[ty][tx] = a.A[at(row, k0 + tx, a.K)];
    // BUG: Bs[ty][tx] = a.B[at(k0 + ty, col, a.N)];
    // END PITFALL
    __syncthreads();  // the tiles are complete before anyone reads them
#pragma unroll
    for (int k = 0; k < T; ++k) acc += As[ty][k] * Bs[k][tx];
    // BEGIN PITFALL missing_second_sync EXERCISES 6.1 RACE
    // The second __syncthreads is missing. After the inner product over the tile, a fast warp goes
    // straight on to the next K step and overwrites its row of Bs (and of As) while slower warps of
    // the same block are still reading the old tile: they multiply a mix of two tiles. A one-tile K
    // hides it (there is no next load); it shows with many K steps and several blocks per SM, and
    // it is intermittent: the worst kind of bug. compute-sanitizer --tool racecheck names the
    // shared-memory hazard at once. Caught by: the GPU suite's racecheck pass on every run (RACE:
    // racecheck over this pitfall's SgemmGpu / SgemmRaceGpu tests reports the hazard); by a test
    // only intermittently: SgemmRaceGpu.RaceProneShapes/smem_tiled (512^3: 16 K tiles, 256 blocks,
    // inputs in L2, 4 repeats) and, less reliably, the larger SgemmGpu.MatchesOracle shapes. An
    // intermittent wrong answer from a kernel with shared memory: run racecheck.
    __syncthreads();  // everyone has finished reading before the next iteration overwrites them
    // BUG:
    // END PITFALL
  }
  if (row < a.M) store1(a.C + at(row, 0, a.N), col, a.N, acc, Axpby{a.alpha, a.beta});
  // END EXERCISE
}

}  // namespace

void sgemm_smem_tiled(const SgemmArgs& a, cudaStream_t stream) {
  constexpr int t = TiledConfig::kTile;
  sgemm_tiled_kernel<<<dim3(ceil_div(a.N, t), ceil_div(a.M, t)), dim3(t, t), 0, stream>>>(a);
  CUDALAB_CHECK_LAUNCH();
}

}  // namespace cudalab::ch06::detail
