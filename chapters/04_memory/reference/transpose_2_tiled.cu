// Exercise 4.2 — transpose through a shared-memory tile (ladder steps 2, 3 and 4).
//
// What it computes: out (cols x rows) = transpose of in (rows x cols), both row-major.
// Launch shape: a 1D grid of kTile x kTile tiles, blocks of 32 x 8 threads, so a thread moves
// (kTile / 8) x (kTile / 32) elements: 4 for a 32-tile, 16 for a 64-tile.
//
// The naive kernel writes columns: 32 sectors per warp store. The three steps here share one
// kernel and differ only in its template arguments:
//   kTiled    a 32 x 32 shared tile, no padding;
//   kPadded   the same tile, each row padded by one word (README section 3: why that matters);
//   kPadded64 a 64 x 64 tile padded by one word: more elements per thread, fewer blocks and
//             barriers per byte. The best step should reach >= 90% of cudaMemcpy device-to-device.
// Bytes that must move: 8 rows cols, for any shape (odd shapes, 1 x N, N x 1: partial edge tiles).
#include <type_traits>

#include "ch04/ch04.hpp"
#include "cudalab/check.hpp"
#include "cudalab/launch.hpp"
#include "transpose_common.cuh"

namespace cudalab::ch04 {
namespace {

constexpr int kThreadsX = TransposeShape::kThreadsX, kThreadsY = TransposeShape::kThreadsY;
// Resident blocks per SM the kernel is built for: 8 x 256 threads fill an SM's 2048 threads, and
// with 16 loads per thread (64-tile) that is 128 KB in flight per SM. It caps the registers at 32.
constexpr int kMinBlocksPerSm = 8;

template <int kTile, int kPad>
__global__ void __launch_bounds__(kThreadsX* kThreadsY, kMinBlocksPerSm)
    transpose_tiled_kernel(const float* __restrict__ in, float* __restrict__ out, int rows,
                           int cols, unsigned tiles_x) {
  // BEGIN EXERCISE 4.2
  // TODO(4.2): the body of transpose_tiled_kernel<kTile, kPad>.
  //   Contract: out (cols x rows, row-major) = the transpose of in (rows x cols, row-major) over
  //     this block's kTile x kTile tile, for any rows and cols (odd shapes, 1 x N, N x 1: edge
  //     tiles are partial). The block is 32 x 8 threads (TransposeShape); the grid is 1D, one block
  //     per tile: detail::tile_origin_by_columns<kTile>(tiles_x) gives this block's first input
  //     row and column.
  //   Constraints: both the global reads and the global writes coalesced (a warp touches 32
  //     consecutive floats of one row on each side); the tile staged in shared memory, each of its
  //     rows padded by kPad words; no element read or written outside its matrix; 64-bit offsets.
  //     kPad is the knob the ladder turns (0 for kTiled, 1 for kPadded and kPadded64): your kernel
  //     must work for both.
  //   Goal: the best BM_transpose/variant:1-3 at 8192 x 8192 >= 0.8x BM_transpose_memcpy of the
  //     same bytes, the padded row well ahead of the unpadded one;
  //     `scripts/lab check 4.2`.
  constexpr int kRowsPerThread = kTile / kThreadsY, kColsPerThread = kTile / kThreadsX;
  __shared__ float tile[kTile][kTile + kPad];  // (kTile input rows, kTile input columns + pad)
  const auto [row0, col0] = detail::tile_origin_by_columns<kTile>(tiles_x);
  const std::size_t n_rows = static_cast<std::size_t>(rows),
                    n_cols = static_cast<std::size_t>(cols);

  // The whole tile moves in two phases; move_tile is written once and instantiated twice.
  // Interior tiles (every tile but the last tile row and column) take kEdge = false: the bounds
  // checks compile away and the loads and stores are issued back to back, with no predicate
  // arithmetic between them. Only edge tiles pay for the guards. The decision is per block.
  const auto move_tile = [&](auto edge) {  // std::true_type: an edge tile, with guards
    constexpr bool kEdge = decltype(edge)::value;
    // (1) All loads first, into registers: they are independent, so the memory system has all of
    // them in flight at once. A warp (fixed ty, i, j) reads 32 consecutive floats of one row.
    // One 64-bit row pointer per i, advanced by kThreadsY rows: the offsets within a row are
    // compile-time constants, so the interior path needs no per-element address arithmetic.
    float v[kRowsPerThread][kColsPerThread];
    const float* src = in + (row0 + threadIdx.y) * n_cols + col0 + threadIdx.x;
#pragma unroll
    for (int i = 0; i < kRowsPerThread; ++i, src += kThreadsY * n_cols)
#pragma unroll
      for (int j = 0; j < kColsPerThread; ++j) {
        const std::size_t r = row0 + threadIdx.y + i * kThreadsY,
                          c = col0 + threadIdx.x + j * kThreadsX;
        v[i][j] = (!kEdge || (r < n_rows && c < n_cols)) ? src[j * kThreadsX] : 0.0f;
      }
      // Row-wise store to the tile: lane l writes word (row * (kTile + kPad) + l): banks all
      // differ.
#pragma unroll
    for (int i = 0; i < kRowsPerThread; ++i)
#pragma unroll
      for (int j = 0; j < kColsPerThread; ++j)
        tile[threadIdx.y + i * kThreadsY][threadIdx.x + j * kThreadsX] = v[i][j];

    // (2) Each thread is about to read elements that OTHER warps stored: wait until the whole
    // tile is in shared memory.
    // BEGIN PITFALL transpose_missing_sync EXERCISES 4.2 RACE
    // No __syncthreads() between writing the tile and reading it. Each thread stores its own
    // elements into the tile, then reads elements that OTHER warps stored (a column of the tile).
    // Without the barrier, a warp whose loads came back early reads tile words that slower warps
    // have not written yet: leftovers of the previous tile on this SM, or garbage. Small matrices
    // with one block often pass by luck; large ones never do, and compute-sanitizer --tool
    // racecheck reports the hazard at once. Caught by: TransposeGpu (shapes with many tiles, e.g.
    // 1000x1000, 2049x3001), variants tiled, padded and padded64; and, whatever the timing, by the
    // GPU suite's racecheck pass over these tests (RACE). The fix: the barrier.
    __syncthreads();
    // BUG:
    // END PITFALL

    // (3) Output tile: output rows col0.., output columns row0... A warp (fixed ty, i, j) writes
    // 32 consecutive floats of one output row (coalesced) and reads one column of the tile.
#pragma unroll
    for (int i = 0; i < kRowsPerThread; ++i)
#pragma unroll
      for (int j = 0; j < kColsPerThread; ++j) {
        const std::size_t out_r = col0 + threadIdx.y + i * kThreadsY;  // an input column
        const std::size_t out_c = row0 + threadIdx.x + j * kThreadsX;  // an input row
        // BEGIN PITFALL transpose_swapped_bounds EXERCISES 4.2
        // The store guard checks the input's bounds, not the output's. The output is cols x rows:
        // its row index runs up to cols, its column index up to rows. Copying the load guard (r <
        // rows, c < cols) to the store swaps them. Every square matrix passes (the bounds are
        // equal), and so does every shape that is a multiple of the tile. On a non-square edge
        // tile it either skips elements that exist (they keep the poison) or writes elements that
        // do not, wrapping into the next output row or past the end of the array. Caught by:
        // TransposeGpu on non-square shapes (1x1000, 1000x1, 33x17, 2049x3001): poisoned ("never
        // written") elements and the guard zone behind the output. The fix: guard the store with
        // the output's bounds (r < cols, c < rows).
        if (!kEdge || (out_r < n_cols && out_c < n_rows))
          // BUG: if (!kEdge || (out_r < n_rows && out_c < n_cols))
          // END PITFALL
          out[out_r * n_rows + out_c] =
              tile[threadIdx.x + j * kThreadsX][threadIdx.y + i * kThreadsY];
      }
  };
  // Block-uniform: every thread of the block takes the same branch (the barrier inside is safe).
  if (row0 + kTile <= n_rows && col0 + kTile <= n_cols)
    move_tile(std::false_type{});
  else
    move_tile(std::true_type{});
  // END EXERCISE
}

template <int kTile, int kPad>
void launch(const float* in, float* out, int rows, int cols, cudaStream_t stream) {
  static_assert(kTile % kThreadsX == 0 && kTile % kThreadsY == 0, "whole threads per tile");
  static_assert(sizeof(float) * kTile * (kTile + kPad) <= 48 * 1024, "static shared memory limit");
  // Many tiles per SM are what keeps HBM busy: ask for the largest shared-memory carveout so that
  // shared memory (16.6 KB per 64-tile block) never limits the 8 resident blocks per SM.
  set_kernel_attribute_once(transpose_tiled_kernel<kTile, kPad>,
                            cudaFuncAttributePreferredSharedMemoryCarveout,
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
    case TransposeVariant::kTiled:
      return launch<32, 0>(in, out, rows, cols, stream);
    case TransposeVariant::kPadded:
      return launch<32, 1>(in, out, rows, cols, stream);
    case TransposeVariant::kPadded64:
      return launch<64, 1>(in, out, rows, cols, stream);
    case TransposeVariant::kNaive:
      break;
  }
  require(false, "variant", "not a tiled TransposeVariant");
}
}  // namespace detail

}  // namespace cudalab::ch04
