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

// Blocks that cover a rows x cols matrix with kTile x kTile tiles; throws past 2^31 - 1 blocks.
unsigned tile_blocks(int rows, int cols, int tile, unsigned* tiles_x);

// transpose_2_tiled.cu: kTiled, kPadded and kPadded64 (rows, cols > 0, arguments already checked).
void launch_transpose_tiled(const float* in, float* out, int rows, int cols,
                            TransposeVariant variant, cudaStream_t stream);

}  // namespace cudalab::ch04::detail
