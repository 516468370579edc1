// Starter track — write your code at the TODO marks; the tests of each exercise
// fail until you do. (Generated from chapters/04_memory/reference/transpose_2_tiled.cu by scripts/variants.py.)
// Exercise 4.2 — transpose through a shared-memory tile (ladder steps 2, 3 and 4).
//
// What it computes: out (cols x rows) = transpose of in (rows x cols), both row-major.
// Launch shape: a 1D grid of kTile x kTile tiles, blocks of 32 x 8 threads; each thread moves
// (kTile / 8) x (kTile / 32) elements: 4 for a 32-tile, 16 for a 64-tile.
//
// The naive kernel writes columns: 32 sectors per warp store. Here a block first reads its tile
// row by row (a warp reads 32 consecutive floats: coalesced) into shared memory, waits for the
// whole tile, then writes the transposed tile row by row (a warp writes 32 consecutive floats of
// an output row: coalesced). The column walk now happens in shared memory, where it is cheap —
// provided it does not hit one bank 32 times:
//   kTiled   tile[32][32]: lane l reads tile[l][c], word 32 l + c, bank c for every lane ->
//            a 32-way bank conflict, the read takes 32 passes.
//   kPadded  tile[32][33]: word 33 l + c, bank (l + c) % 32 -> 32 different banks, 1 pass.
//   kPadded64 tile[64][65], 16 elements per thread: 16 independent loads in flight per thread
//            (Little's law: HBM needs tens of KB in flight per SM), fewer blocks and barriers
//            per byte. The best step should reach >= 90% of cudaMemcpy device-to-device.
// Bytes that must move: 8 rows cols. Edge tiles (odd shapes, 1 x N, N x 1) are guarded on both
// sides: the load checks (r < rows, c < cols) of the input, the store (r < cols, c < rows) of
// the output — the output's bounds are the input's, swapped.
#include "ch04/ch04.hpp"
#include "cudalab/check.hpp"
#include "cudalab/launch.hpp"
#include "transpose_common.cuh"

namespace cudalab::ch04 {
namespace {

constexpr int kThreadsX = TransposeShape::kThreadsX, kThreadsY = TransposeShape::kThreadsY;

template <int kTile, int kPad>
__global__ void __launch_bounds__(kThreadsX * kThreadsY)
transpose_tiled_kernel(const float* __restrict__ in, float* __restrict__ out, int rows, int cols,
                       unsigned tiles_x) {
  // TODO(4.2): declare __shared__ float tile[kTile][kTile + kPad]; find the tile's first input
  //            row and column with detail::tile_origin<kTile>(tiles_x). Thread (tx, ty) handles
  //            tile rows ty + 8 i and tile columns tx + 32 j. (1) Load those elements of `in`
  //            (guard r < rows && c < cols) into registers first, then store them to
  //            tile[row][col]. (2) __syncthreads(). (3) Write output row col0 + ty + 8 i, output
  //            column row0 + tx + 32 j (guard: output row < cols, output column < rows) from
  //            tile[tx + 32 j][ty + 8 i]. 64-bit index arithmetic.
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
