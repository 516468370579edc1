// PITFALL (exercise 5.5): the tile is loaded without its halo.
//
// Each thread loads only the pixels of its own output tile into shared memory and the border of
// r pixels around it is left at 0, as if every tile edge were the image edge. Outputs in the
// interior of a tile are right; every output within r pixels of a tile edge (but not of the image
// edge) misses the neighbour tile's pixels. With a 32 x 32 tile and r = 2, a quarter of the
// pixels are wrong, and nothing crashes. The halo is the whole difficulty of tiling a stencil:
// the input tile is larger than the output tile.
// Caught by: Conv2dGpu.MatchesOracle (every shape larger than one tile, radius >= 1).
#include "ch05/stencil.hpp"
#include "cudalab/check.hpp"
#include "cudalab/math.hpp"

namespace cudalab::ch05 {
namespace {

// One config drives the block shape, the launch bounds, the shared tile and the grid.
struct ConvConfig {
  static constexpr int kTileX = 32;      // output tile width: a warp covers one row (coalesced)
  static constexpr int kTileY = 32;      // output tile height
  static constexpr int kThreadsY = 8;    // 32 x 8 threads; each thread computes kTileY / 8 rows
  static constexpr int kRowsPerThread = kTileY / kThreadsY;
  static constexpr int kThreads = kTileX * kThreadsY;
  // Shared tile sized for the largest radius: (kTileY + 2 R) x (kTileX + 2 R) floats.
  static constexpr int kInY = kTileY + 2 * kConvMaxRadius;
  static constexpr int kInX = kTileX + 2 * kConvMaxRadius;
};
static_assert(ConvConfig::kRowsPerThread * ConvConfig::kThreadsY == ConvConfig::kTileY,
              "whole rows per thread");
static_assert(ConvConfig::kThreads <= 1024 && ConvConfig::kThreads % 32 == 0);
static_assert(ConvConfig::kInY * ConvConfig::kInX * sizeof(float) <= 48 * 1024, "static shared limit");

// Naive: one thread per output pixel, (2r+1)^2 bounds-checked global loads each.
// Launch: (32, 8) threads, grid (ceil(width / 32), ceil(height / 8)).
__global__ void __launch_bounds__(ConvConfig::kThreads)
conv2d_naive_kernel(const float* __restrict__ in, float* __restrict__ out, int width, int height,
                    const float* __restrict__ filter, int radius) {
  const int x = blockIdx.x * ConvConfig::kTileX + threadIdx.x;
  const int y = blockIdx.y * ConvConfig::kThreadsY + threadIdx.y;
  if (x >= width || y >= height) return;
  const int k = 2 * radius + 1;
  float acc = 0.0f;
  for (int dy = 0; dy < k; ++dy) {
    const int gy = y + dy - radius;
    for (int dx = 0; dx < k; ++dx) {
      const int gx = x + dx - radius;
      // Zero padding: taps outside the image contribute nothing.
      const float v = (gx >= 0 && gx < width && gy >= 0 && gy < height)
                          ? in[static_cast<std::size_t>(gy) * width + gx] : 0.0f;
      acc += filter[dy * k + dx] * v;  // the filter index is warp-uniform: one broadcast load
    }
  }
  out[static_cast<std::size_t>(y) * width + x] = acc;
}

// Tiled: a block computes a kTileY x kTileX output tile from a shared copy of its input tile plus
// the halo. Launch: (32, 8) threads, grid (ceil(width / 32), ceil(height / 32)).
__global__ void __launch_bounds__(ConvConfig::kThreads)
conv2d_tiled_kernel(const float* __restrict__ in, float* __restrict__ out, int width, int height,
                    const float* __restrict__ filter, int radius) {
  __shared__ float tile[ConvConfig::kInY][ConvConfig::kInX];  // (kTileY + 2R, kTileX + 2R)
  const int tid = threadIdx.y * ConvConfig::kTileX + threadIdx.x;
  const int in_w = ConvConfig::kTileX + 2 * radius, in_h = ConvConfig::kTileY + 2 * radius;
  // Image coordinates of tile[0][0]; negative on the first row/column of tiles (signed on purpose).
  const int x0 = static_cast<int>(blockIdx.x) * ConvConfig::kTileX - radius;
  const int y0 = static_cast<int>(blockIdx.y) * ConvConfig::kTileY - radius;
  for (int e = tid; e < in_w * in_h; e += ConvConfig::kThreads) {
    const int row = e / in_w, col = e % in_w;
    const int gx = x0 + col, gy = y0 + row;
    // BUG: only the block's own output tile is loaded; the halo ring stays 0.
    const bool halo = row < radius || row >= radius + ConvConfig::kTileY || col < radius ||
                      col >= radius + ConvConfig::kTileX;
    tile[row][col] = (!halo && gx >= 0 && gx < width && gy >= 0 && gy < height)
                         ? in[static_cast<std::size_t>(gy) * width + gx] : 0.0f;
  }
  __syncthreads();  // the tile is complete before anyone reads a neighbour's pixel

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
}

}  // namespace

void conv2d(const float* in, float* out, int width, int height, const float* filter, int radius,
            ConvVariant variant, cudaStream_t stream) {
  require(width >= 0, "width", "must be >= 0");
  require(height >= 0, "height", "must be >= 0");
  require(radius >= 0 && radius <= kConvMaxRadius, "radius", "must be in 0..kConvMaxRadius (4)");
  require(variant == ConvVariant::kNaive || variant == ConvVariant::kTiled, "variant",
          "unknown ConvVariant");
  const std::size_t n = static_cast<std::size_t>(width) * static_cast<std::size_t>(height);
  const std::size_t taps = static_cast<std::size_t>(2 * radius + 1) * (2 * radius + 1);
  require_device_pointer(in, n, "in");
  require_device_pointer(out, n, "out");
  require_device_pointer(filter, n > 0 ? taps : 0, "filter");
  if (n == 0) return;
  const dim3 block(ConvConfig::kTileX, ConvConfig::kThreadsY);
  const int rows_per_block = variant == ConvVariant::kNaive ? ConvConfig::kThreadsY : ConvConfig::kTileY;
  const dim3 grid(ceil_div(width, ConvConfig::kTileX), ceil_div(height, rows_per_block));
  require(grid.y <= 65535u, "height", "too many rows for a 2D grid (grid.y <= 65535)");
  if (variant == ConvVariant::kNaive)
    conv2d_naive_kernel<<<grid, block, 0, stream>>>(in, out, width, height, filter, radius);
  else
    conv2d_tiled_kernel<<<grid, block, 0, stream>>>(in, out, width, height, filter, radius);
  CUDALAB_CHECK_LAUNCH();
}

}  // namespace cudalab::ch05
