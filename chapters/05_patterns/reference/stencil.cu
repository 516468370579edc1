// Shared-memory tiling: a 2D convolution with halos, zero padding at the edges (exercise 5.5).
//
// Cost model for an r-radius filter, K = (2r + 1)^2 taps, n = width x height pixels:
//   bytes that must cross DRAM: 4 n read + 4 n written (each pixel once) = 8 n
//   FLOPs: 2 K n (one FMA per tap)
// The naive kernel issues K global loads per output pixel; neighbours share most of them, so L1
// and L2 catch the reuse, but every load is still an instruction plus a trip through the load/store
// unit and the tag lookup. The tiled kernel loads each input pixel of its tile (plus the halo: the
// r-pixel border its outputs also need) once into shared memory, then reads the K taps from there.
// For r = 3 and the reference's 128 x 32 output tile the input tile is 134 x 38 pixels: 5092 global
// loads instead of 49 x 4096 = 200704, a 39x cut in global load instructions (the reference loads
// 136 x 38, as 1292 float4s where the rows are 16-byte aligned).
// This file: the naive kernel and the dispatch. The tiled kernel (exercise 5.5) is in
// stencil_tiled.cu, a file of its own so that a pitfall can replace it alone; so is the second
// kernel its launcher may pick at r = 3 (the stretch of 5.5).
#include "ch05/stencil.hpp"
#include "cudalab/check.hpp"
#include "cudalab/math.hpp"
#include "stencil_internal.hpp"

namespace cudalab::ch05 {
namespace {

using detail::ConvConfig;

// Naive: one thread per output pixel, (2r+1)^2 bounds-checked global loads each.
// Launch: (32, 8) threads, grid (ceil(width / 32), ceil(height / 8)).
__global__ void __launch_bounds__(ConvConfig::kThreads)
    conv2d_naive_kernel(const float* __restrict__ in, float* __restrict__ out, int width,
                        int height, const float* __restrict__ filter, int radius) {
  const int x = blockIdx.x * ConvConfig::kThreadsX + threadIdx.x;
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
                          ? in[static_cast<std::size_t>(gy) * width + gx]
                          : 0.0f;
      acc += filter[dy * k + dx] * v;  // the filter index is warp-uniform: one broadcast load
    }
  }
  out[static_cast<std::size_t>(y) * width + x] = acc;
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
  const dim3 block(ConvConfig::kThreadsX, ConvConfig::kThreadsY);
  // A naive block covers its 32 x 8 threads' outputs; a tiled block its kTileX x kTileY tile.
  const bool naive = variant == ConvVariant::kNaive;
  const int cols_per_block = naive ? ConvConfig::kThreadsX : ConvConfig::kTileX;
  const int rows_per_block = naive ? ConvConfig::kThreadsY : ConvConfig::kTileY;
  const dim3 grid(ceil_div(width, cols_per_block), ceil_div(height, rows_per_block));
  require(grid.y <= 65535u, "height", "too many rows for a 2D grid (grid.y <= 65535)");
  if (variant == ConvVariant::kNaive) {
    conv2d_naive_kernel<<<grid, block, 0, stream>>>(in, out, width, height, filter, radius);
    CUDALAB_CHECK_LAUNCH();
  } else {
    detail::launch_conv2d_tiled(grid, in, out, width, height, filter, radius, stream);
  }
}

}  // namespace cudalab::ch05
