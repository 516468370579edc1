// Shared by the transpose files (private to the chapter): how a 1D grid of blocks maps onto the
// tiles of a rows x cols matrix, and the launcher each ladder file provides.
#pragma once

#include <cuda_runtime_api.h>

#include <cstddef>

#include "ch04/ch04.hpp"

namespace cudalab::ch04::detail {

// One block per kTile x kTile tile; blockIdx.x enumerates tiles row-major (tiles_x per tile row),
// so consecutive blocks walk along a tile row as a 2D grid would, without the 65535 limit in y.
struct TileOrigin {
  std::size_t row0, col0;  // first input row and column of this block's tile
};
template <int kTile>
__device__ inline TileOrigin tile_origin(unsigned tiles_x) {
  return {std::size_t{blockIdx.x / tiles_x} * kTile, std::size_t{blockIdx.x % tiles_x} * kTile};
}

// The same tiles numbered down each tile column instead (gridDim.x / tiles_x per column): block
// b + 1 takes the tile BELOW block b's. The tiled transposes use it. Their output rows are
// written in kTile-float pieces, one per tile of a tile column; where a row is not 32-byte aligned
// (odd shapes) the 32-byte sector at each piece's end is shared with the next tile's piece.
// Numbered this way, the two blocks that share such a sector run side by side, as in a row copy,
// instead of a whole tile row (tiles_x blocks) apart.
template <int kTile>
__device__ inline TileOrigin tile_origin_by_columns(unsigned tiles_x) {
  const unsigned tiles_y = gridDim.x / tiles_x;  // the grid is exactly tiles_x * tiles_y blocks
  return {std::size_t{blockIdx.x % tiles_y} * kTile, std::size_t{blockIdx.x / tiles_y} * kTile};
}

// Blocks that cover a rows x cols matrix with kTile x kTile tiles; throws past 2^31 - 1 blocks.
unsigned tile_blocks(int rows, int cols, int tile, unsigned* tiles_x);

// transpose_2_tiled.cu: kTiled, kPadded and kPadded64 (rows, cols > 0, arguments already checked).
void launch_transpose_tiled(const float* in, float* out, int rows, int cols,
                            TransposeVariant variant, cudaStream_t stream);

}  // namespace cudalab::ch04::detail
