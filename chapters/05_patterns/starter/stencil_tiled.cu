// Starter track — write your code at the TODO marks; the tests of each exercise
// fail until you do. (Generated from chapters/05_patterns/reference/stencil_tiled.cu by scripts/variants.py.)
// Exercise 5.5: the tiled 2D convolution. A block loads its input tile plus the r-pixel halo into
// shared memory once, then reads all (2r + 1)^2 taps of its outputs from there. Cost model,
// naive kernel and dispatch: stencil.cu.
#include <cstddef>
#include <cstdint>

#include "ch05/stencil.hpp"
#include "cudalab/check.hpp"
#include "stencil_internal.hpp"

namespace cudalab::ch05::detail {
namespace {

// Tiled: a block computes a kTileY x kTileX (32 x 128) output tile from a shared copy of its input
// tile plus the halo. Launch: (32, 8) threads, grid (ceil(width / 128), ceil(height / 32)). R ==
// radius: one instantiation per radius (launch_conv2d_tiled switches), so the taps unroll.
// kConvTiledBlocksPerSm: the register cap that keeps 4 blocks (1024 threads) resident per SM.
template <int R>
__global__ void __launch_bounds__(ConvConfig::kThreads, kConvTiledBlocksPerSm)
    conv2d_tiled_kernel(const float* __restrict__ in, float* __restrict__ out, int width,
                        int height, const float* __restrict__ filter, int radius) {
  // TODO(5.5): conv2d_tiled_kernel, the tiled 2D convolution.
  //   Contract: the same outputs as conv2d_naive_kernel (stencil.cu), within the test's float
  //     tolerance: for every pixel (x, y) of this block's kTileY x kTileX output tile that lies
  //     inside the image, out(y, x) is the filter-weighted sum of the (2r + 1)^2 neighbourhood of
  //     (x, y) (filter row-major, centred), with pixels outside the image reading as 0. Any width
  //     and height (1 x 1, one row, not multiples of the tile), 0 <= radius <= kConvMaxRadius.
  //     Launch (fixed): ConvConfig::kThreads = 32 x 8 threads per block, one block per output tile.
  //   Constraints: every input pixel the block needs is read from global memory once per block,
  //     into shared memory (at most the ConvConfig::kInY x kInX floats it is sized for); the taps
  //     are read from shared memory; coalesced global loads; race-free.
  //   Goal: BM_stencil/tiled/r3 >= 3.0x faster than BM_stencil/naive/r3, and the
  //     r = 1 pair no slower; `scripts/lab check 5.5`.
  (void)in; (void)out; (void)width; (void)height; (void)filter; (void)radius;
  // The input tile (its first kTileY + 2R rows at this radius): row `row` is image row y0 + row,
  // column `col` image column x0 + col, with kHaloX = 4 halo columns each side whatever R (>= R,
  // and every tile row starts 16-byte aligned).
}

}  // namespace

void launch_conv2d_tiled(dim3 grid, const float* in, float* out, int width, int height,
                         const float* filter, int radius, cudaStream_t stream) {
  const dim3 block(ConvConfig::kThreadsX, ConvConfig::kThreadsY);  // (32, 8), as the naive kernel
  switch (radius) {  // conv2d checked 0 <= radius <= kConvMaxRadius
    case 0:
      conv2d_tiled_kernel<0><<<grid, block, 0, stream>>>(in, out, width, height, filter, radius);
      break;
    case 1:
      conv2d_tiled_kernel<1><<<grid, block, 0, stream>>>(in, out, width, height, filter, radius);
      break;
    case 2:
      conv2d_tiled_kernel<2><<<grid, block, 0, stream>>>(in, out, width, height, filter, radius);
      break;
    case 3:
      conv2d_tiled_kernel<3><<<grid, block, 0, stream>>>(in, out, width, height, filter, radius);
      break;
    default:
      conv2d_tiled_kernel<4><<<grid, block, 0, stream>>>(in, out, width, height, filter, radius);
      break;
  }
  static_assert(kConvMaxRadius == 4, "one case per radius");
  CUDALAB_CHECK_LAUNCH();
}

}  // namespace cudalab::ch05::detail
