// Exercise 5.5: the tiled 2D convolution. A block loads its input tile plus the r-pixel halo into
// shared memory once, then reads all (2r + 1)^2 taps of its outputs from there. Cost model,
// naive kernel and dispatch: stencil.cu.
#include "ch05/stencil.hpp"
#include "cudalab/check.hpp"
#include "stencil_internal.hpp"

namespace cudalab::ch05::detail {
namespace {

// Tiled: a block computes a kTileY x kTileX output tile from a shared copy of its input tile plus
// the halo. Launch: (32, 8) threads, grid (ceil(width / 32), ceil(height / 128)). R == radius:
// one instantiation per radius (launch_conv2d_tiled switches), so the taps unroll.
template <int R>
__global__ void __launch_bounds__(ConvConfig::kThreads)
    conv2d_tiled_kernel(const float* __restrict__ in, float* __restrict__ out, int width,
                        int height, const float* __restrict__ filter, int radius) {
  // BEGIN EXERCISE 5.5
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
  // STARTER: (void)in; (void)out; (void)width; (void)height; (void)filter; (void)radius;
  __shared__ float tile[ConvConfig::kInY][ConvConfig::kInX];  // (kTileY + 2R, kTileX + 2R)
  (void)radius;                                               // == R
  constexpr int k = 2 * R + 1;
  // The k x k taps in registers, loaded once: with every loop below unrolled, each FMA names its
  // tap at compile time (no filter load per tap, no loop counters, no k * dy index arithmetic).
  float f[k * k];
#pragma unroll
  for (int i = 0; i < k * k; ++i) f[i] = filter[i];
  const int tid = threadIdx.y * ConvConfig::kTileX + threadIdx.x;
  constexpr int in_w = ConvConfig::kTileX + 2 * R, in_h = ConvConfig::kTileY + 2 * R;
  // Image coordinates of tile[0][0]; negative on the first row/column of tiles (signed on purpose).
  const int x0 = static_cast<int>(blockIdx.x) * ConvConfig::kTileX - R;
  const int y0 = static_cast<int>(blockIdx.y) * ConvConfig::kTileY - R;
  for (int e = tid; e < in_w * in_h; e += ConvConfig::kThreads) {
    const int row = e / in_w, col = e % in_w;  // consecutive e: consecutive columns of one row
    const int gx = x0 + col, gy = y0 + row;
    // BEGIN PITFALL stencil_missing_halo EXERCISES 5.5
    // The tile is loaded without its halo. Each thread loads only the pixels of its own output tile
    // into shared memory and the border of r pixels around it is left at 0, as if every tile edge
    // were the image edge. Outputs in the interior of a tile are right; every output within r
    // pixels of a tile edge (but not of the image edge) misses the neighbour tile's pixels. With a
    // 32 x 128 tile and r = 2, about one pixel in seven is wrong, and nothing crashes. The halo is
    // the whole difficulty of tiling a stencil: the input tile is larger than the output tile.
    // Caught by: Conv2dGpu.MatchesOracle (every shape larger than one tile, radius >= 1). The fix:
    // load the whole (kTileY + 2r) x (kTileX + 2r) input tile.
    tile[row][col] =
        (gx >= 0 && gx < width && gy >= 0 && gy < height)
            // BUG: const bool halo = row < radius || row >= radius + ConvConfig::kTileY || col < radius ||
            // BUG:                   col >= radius + ConvConfig::kTileX;
            // BUG: tile[row][col] = (!halo && gx >= 0 && gx < width && gy >= 0 && gy < height)
            // END PITFALL
            ? in[static_cast<std::size_t>(gy) * width + gx]
            : 0.0f;
  }
  __syncthreads();  // the tile (halo included) is complete before anyone reads a neighbour's pixel

  // This thread: column threadIdx.x, kRowsPerThread CONSECUTIVE output rows from ly0. Input row
  // ly0 + i feeds output rows ly0 + i - dy for every dy in 0..2R, so each of its k taps is read
  // from shared memory once and used for up to k outputs from a register: (kRowsPerThread + 2R) k
  // shared loads for kRowsPerThread k^2 FMAs (r = 3: 154 loads for 784 FMAs, against one load per
  // FMA when each output re-reads its k x k window).
  const int ly0 = threadIdx.y * ConvConfig::kRowsPerThread;
  float acc[ConvConfig::kRowsPerThread];
#pragma unroll
  for (int j = 0; j < ConvConfig::kRowsPerThread; ++j) acc[j] = 0.0f;
#pragma unroll
  for (int i = 0; i < ConvConfig::kRowsPerThread + 2 * R; ++i) {
    float v[k];
#pragma unroll
    for (int dx = 0; dx < k; ++dx)
      v[dx] = tile[ly0 + i][threadIdx.x + dx];  // a warp: one row, no conflict
#pragma unroll
    for (int dy = 0; dy < k; ++dy) {
      const int j = i - dy;  // a compile-time constant once unrolled: the test costs nothing
      if (j < 0 || j >= ConvConfig::kRowsPerThread) continue;
#pragma unroll
      for (int dx = 0; dx < k; ++dx)
        acc[j] += f[dy * k + dx] * v[dx];  // per output: dy, then dx (naive's order)
    }
  }
  const int x = blockIdx.x * ConvConfig::kTileX + threadIdx.x;
#pragma unroll
  for (int j = 0; j < ConvConfig::kRowsPerThread; ++j) {
    const int y = blockIdx.y * ConvConfig::kTileY + ly0 + j;
    if (x < width && y < height)  // edge tiles: outputs past the image are not stored
      out[static_cast<std::size_t>(y) * width + x] = acc[j];
  }
  // END EXERCISE
}

}  // namespace

void launch_conv2d_tiled(dim3 grid, const float* in, float* out, int width, int height,
                         const float* filter, int radius, cudaStream_t stream) {
  const dim3 block(ConvConfig::kTileX, ConvConfig::kThreadsY);  // (32, 8), as the naive kernel
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
