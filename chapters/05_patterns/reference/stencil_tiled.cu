// Exercise 5.5: the tiled 2D convolution. A block loads its input tile plus the r-pixel halo into
// shared memory once, then reads all (2r + 1)^2 taps of its outputs from there. Cost model,
// naive kernel and dispatch: stencil.cu.
#include "ch05/stencil.hpp"
#include "cudalab/check.hpp"
#include "stencil_internal.hpp"

namespace cudalab::ch05::detail {
namespace {

// Tiled: a block computes a kTileY x kTileX output tile from a shared copy of its input tile plus
// the halo. Launch: (32, 8) threads, grid (ceil(width / 32), ceil(height / 32)).
__global__ void __launch_bounds__(ConvConfig::kThreads)
conv2d_tiled_kernel(const float* __restrict__ in, float* __restrict__ out, int width, int height,
                    const float* __restrict__ filter, int radius) {
  // BEGIN EXERCISE 5.5
  // TODO(5.5): 0. Declare the shared tile, sized for the largest radius:
  //               __shared__ float tile[ConvConfig::kInY][ConvConfig::kInX];  // (kTileY + 2R, kTileX + 2R)
  //            1. Load the input tile AND its halo into `tile`: the (kTileY + 2 r) x (kTileX + 2 r)
  //               pixels whose top-left corner is (blockIdx.y * kTileY - r, blockIdx.x * kTileX - r).
  //               There are more of them than threads: loop e = tid, tid + kThreads, ... and map e
  //               to (row, col) = (e / in_w, e % in_w) so consecutive threads load consecutive
  //               pixels of a row (coalesced). Outside the image store 0 (the zero-padding rule).
  //            2. __syncthreads(): no thread may read the tile before every thread has written it.
  //            3. Each thread computes kRowsPerThread outputs (rows threadIdx.y + j * kThreadsY),
  //               out(y, x) = sum filter[dy * k + dx] * tile[ly + dy][threadIdx.x + dx], dy and dx
  //               in 0..2r (same order as the naive kernel), and stores it if (x, y) is inside.
  // STARTER: (void)in; (void)out; (void)width; (void)height; (void)filter; (void)radius;
  __shared__ float tile[ConvConfig::kInY][ConvConfig::kInX];  // (kTileY + 2R, kTileX + 2R)
  const int tid = threadIdx.y * ConvConfig::kTileX + threadIdx.x;
  const int in_w = ConvConfig::kTileX + 2 * radius, in_h = ConvConfig::kTileY + 2 * radius;
  // Image coordinates of tile[0][0]; negative on the first row/column of tiles (signed on purpose).
  const int x0 = static_cast<int>(blockIdx.x) * ConvConfig::kTileX - radius;
  const int y0 = static_cast<int>(blockIdx.y) * ConvConfig::kTileY - radius;
  for (int e = tid; e < in_w * in_h; e += ConvConfig::kThreads) {
    const int row = e / in_w, col = e % in_w;  // consecutive e: consecutive columns of one row
    const int gx = x0 + col, gy = y0 + row;
    // BEGIN PITFALL stencil_missing_halo EXERCISES 5.5
    // The tile is loaded without its halo. Each thread loads only the pixels of its own output tile
    // into shared memory and the border of r pixels around it is left at 0, as if every tile edge
    // were the image edge. Outputs in the interior of a tile are right; every output within r
    // pixels of a tile edge (but not of the image edge) misses the neighbour tile's pixels. With a
    // 32 x 32 tile and r = 2, a quarter of the pixels are wrong, and nothing crashes. The halo is
    // the whole difficulty of tiling a stencil: the input tile is larger than the output tile.
    // Caught by: Conv2dGpu.MatchesOracle (every shape larger than one tile, radius >= 1). The fix:
    // load the whole (kTileY + 2r) x (kTileX + 2r) input tile.
    tile[row][col] = (gx >= 0 && gx < width && gy >= 0 && gy < height)
    // BUG: const bool halo = row < radius || row >= radius + ConvConfig::kTileY || col < radius ||
    // BUG:                   col >= radius + ConvConfig::kTileX;
    // BUG: tile[row][col] = (!halo && gx >= 0 && gx < width && gy >= 0 && gy < height)
    // END PITFALL
                         ? in[static_cast<std::size_t>(gy) * width + gx] : 0.0f;
  }
  __syncthreads();  // the tile (halo included) is complete before anyone reads a neighbour's pixel

  const int k = 2 * radius + 1;
  const int x = blockIdx.x * ConvConfig::kTileX + threadIdx.x;
#pragma unroll
  for (int j = 0; j < ConvConfig::kRowsPerThread; ++j) {
    const int ly = threadIdx.y + j * ConvConfig::kThreadsY;  // row within the output tile
    const int y = blockIdx.y * ConvConfig::kTileY + ly;
    if (x >= width || y >= height) continue;  // edge tiles: outputs past the image are not stored
    float acc = 0.0f;
    for (int dy = 0; dy < k; ++dy)
      for (int dx = 0; dx < k; ++dx)  // a warp reads 32 consecutive floats: no bank conflict
        acc += filter[dy * k + dx] * tile[ly + dy][threadIdx.x + dx];
    out[static_cast<std::size_t>(y) * width + x] = acc;
  }
  // END EXERCISE
}

}  // namespace

void launch_conv2d_tiled(dim3 grid, const float* in, float* out, int width, int height,
                         const float* filter, int radius, cudaStream_t stream) {
  const dim3 block(ConvConfig::kTileX, ConvConfig::kThreadsY);  // (32, 8), as the naive kernel
  conv2d_tiled_kernel<<<grid, block, 0, stream>>>(in, out, width, height, filter, radius);
  CUDALAB_CHECK_LAUNCH();
}

}  // namespace cudalab::ch05::detail
