// PITFALL (exercise 4.2): no __syncthreads() between writing the tile and reading it.
//
// Each thread stores its own elements into the tile, then reads elements that OTHER warps stored
// (a column of the tile). Without the barrier, a warp whose loads came back early reads tile
// words that slower warps have not written yet: leftovers of the previous tile on this SM, or
// garbage. Small matrices with one block often pass by luck; large ones never do, and
// compute-sanitizer --tool racecheck reports the hazard at once.
// Caught by: TransposeGpu (shapes with many tiles, e.g. 1000x1000, 2049x3001), variants tiled,
// padded and padded64; and, whatever the timing, by the GPU suite's racecheck pass over these
// tests (the pitfall is declared RACE in CMakeLists.txt).
#include "ch04/ch04.hpp"
#include "cudalab/check.hpp"
#include "cudalab/launch.hpp"
#include "transpose_detail.cuh"

namespace cudalab::ch04 {
namespace {

constexpr int kThreadsX = TransposeShape::kThreadsX, kThreadsY = TransposeShape::kThreadsY;

template <int kTile, int kPad>
__global__ void __launch_bounds__(kThreadsX * kThreadsY)
transpose_tiled_kernel(const float* __restrict__ in, float* __restrict__ out, int rows, int cols,
                       unsigned tiles_x) {
  constexpr int kRowsPerThread = kTile / kThreadsY, kColsPerThread = kTile / kThreadsX;
  __shared__ float tile[kTile][kTile + kPad];  // (kTile input rows, kTile input columns + pad)
  const auto [row0, col0] = detail::tile_origin<kTile>(tiles_x);
  const std::size_t n_rows = static_cast<std::size_t>(rows), n_cols = static_cast<std::size_t>(cols);

  // (1) All loads first, into registers: they are independent, so the memory system has all of
  // them in flight at once. A warp (fixed ty, i, j) reads 32 consecutive floats of one row.
  float v[kRowsPerThread][kColsPerThread];
#pragma unroll
  for (int i = 0; i < kRowsPerThread; ++i)
#pragma unroll
    for (int j = 0; j < kColsPerThread; ++j) {
      const std::size_t r = row0 + threadIdx.y + i * kThreadsY, c = col0 + threadIdx.x + j * kThreadsX;
      v[i][j] = (r < n_rows && c < n_cols) ? in[r * n_cols + c] : 0.0f;
    }
  // Row-wise store to the tile: lane l writes word (row * (kTile + kPad) + l): banks all differ.
#pragma unroll
  for (int i = 0; i < kRowsPerThread; ++i)
#pragma unroll
    for (int j = 0; j < kColsPerThread; ++j)
      tile[threadIdx.y + i * kThreadsY][threadIdx.x + j * kThreadsX] = v[i][j];

  // BUG: no __syncthreads() here — the reads below race with other warps' stores above.

  // (3) Output tile: output rows col0.., output columns row0... A warp (fixed ty, i, j) writes 32
  // consecutive floats of one output row (coalesced) and reads one column of the tile.
#pragma unroll
  for (int i = 0; i < kRowsPerThread; ++i)
#pragma unroll
    for (int j = 0; j < kColsPerThread; ++j) {
      const std::size_t out_r = col0 + threadIdx.y + i * kThreadsY;  // an input column
      const std::size_t out_c = row0 + threadIdx.x + j * kThreadsX;  // an input row
      if (out_r < n_cols && out_c < n_rows)
        out[out_r * n_rows + out_c] = tile[threadIdx.x + j * kThreadsX][threadIdx.y + i * kThreadsY];
    }
}

template <int kTile, int kPad>
void launch(const float* in, float* out, int rows, int cols, cudaStream_t stream) {
  static_assert(kTile % kThreadsX == 0 && kTile % kThreadsY == 0, "whole threads per tile");
  static_assert(sizeof(float) * kTile * (kTile + kPad) <= 48 * 1024, "static shared memory limit");
  // Many tiles per SM are what keeps HBM busy: ask for the largest shared-memory carveout so that
  // shared memory (16.6 KB per 64-tile block) never limits the 8 resident blocks per SM.
  set_kernel_attribute_once(transpose_tiled_kernel<kTile, kPad>, cudaFuncAttributePreferredSharedMemoryCarveout,
                            cudaSharedmemCarveoutMaxShared);
  unsigned tiles_x = 0;
  const unsigned blocks = detail::tile_blocks(rows, cols, kTile, &tiles_x);
  transpose_tiled_kernel<kTile, kPad>
      <<<blocks, dim3(kThreadsX, kThreadsY), 0, stream>>>(in, out, rows, cols, tiles_x);
  CUDALAB_CHECK_LAUNCH();
}

}  // namespace

namespace detail {
void launch_transpose_tiled(const float* in, float* out, int rows, int cols,
                            TransposeVariant variant, cudaStream_t stream) {
  switch (variant) {
    case TransposeVariant::kTiled: return launch<32, 0>(in, out, rows, cols, stream);
    case TransposeVariant::kPadded: return launch<32, 1>(in, out, rows, cols, stream);
    case TransposeVariant::kPadded64: return launch<64, 1>(in, out, rows, cols, stream);
    case TransposeVariant::kNaive: break;
  }
  require(false, "variant", "not a tiled TransposeVariant");
}
}  // namespace detail

}  // namespace cudalab::ch04
