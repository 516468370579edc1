// Starter track — write your code at the TODO marks; the tests of each exercise
// fail until you do. (Generated from chapters/05_patterns/reference/stencil_tiled.cu by scripts/variants.py.)
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
  (void)in; (void)out; (void)width; (void)height; (void)filter; (void)radius;
}

}  // namespace

void launch_conv2d_tiled(dim3 grid, const float* in, float* out, int width, int height,
                         const float* filter, int radius, cudaStream_t stream) {
  const dim3 block(ConvConfig::kTileX, ConvConfig::kThreadsY);  // (32, 8), as the naive kernel
  conv2d_tiled_kernel<<<grid, block, 0, stream>>>(in, out, width, height, filter, radius);
  CUDALAB_CHECK_LAUNCH();
}

}  // namespace cudalab::ch05::detail
