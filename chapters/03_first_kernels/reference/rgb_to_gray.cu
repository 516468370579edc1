// Exercise 3.5 — a 2D kernel on a pitched image of any shape.
//
// Launch shape: blocks of kBlockX x kBlockY = 32 x 8 threads, grid ceil(width / 32) x
// ceil(height / 8), one pixel per thread. Rows are `pitch` bytes apart, not 3 * width:
// cudaMallocPitch pads each row to an aligned boundary. Bytes moved: 4 per pixel (3 read, 1
// written).
#include <cstdint>

#include "ch03/ch03.hpp"
#include "cudalab/check.hpp"
#include "cudalab/math.hpp"

namespace cudalab::ch03 {
namespace {

__global__ void __launch_bounds__(kBlockX* kBlockY)
    rgb_to_gray_kernel(const std::uint8_t* __restrict__ rgb, std::size_t rgb_pitch,
                       std::uint8_t* __restrict__ gray, std::size_t gray_pitch, int width,
                       int height) {
  // BEGIN EXERCISE 3.5
  // TODO(3.5): the body of rgb_to_gray_kernel.
  //   Contract: for every pixel (x, y) with x < width and y < height, the gray byte of row y at
  //     column x becomes gray_of(R, G, B) of the RGB pixel at the same place. Row y of `rgb` starts
  //     rgb_pitch BYTES after row y - 1 (3 bytes per pixel, then padding); row y of `gray` starts
  //     gray_pitch bytes after the previous. Nothing outside the width x height image may be
  //     written (the padding included). Launch: a 2D grid of kBlockX x kBlockY blocks covering the
  //     image.
  //   Constraints: one pixel per thread; any width and height (odd ones, 1 x N, N x 1); offsets
  //     that cannot overflow for images of several GB.
  //   Goal: BM_rgb_to_gray >= 0.25x BM_memcpy_d2d; `scripts/lab check 3.5`.
  const int x = static_cast<int>(blockIdx.x * blockDim.x + threadIdx.x);
  const int y = static_cast<int>(blockIdx.y * blockDim.y + threadIdx.y);
  if (x >= width || y >= height) return;
  // BEGIN PITFALL ignored_pitch EXERCISES 3.5
  // Rows assumed to be 3 * width bytes apart. cudaMallocPitch pads every row (to 512 bytes on
  // current GPUs) so that each row starts aligned. Indexing with y * 3 * width instead of y * pitch
  // reads row 0 right and every later row from the wrong place. Square power-of-two images often
  // hide it (3 * 512 is already a multiple of 512); odd widths never do.
  // Caught by: RgbToGrayGpu on odd shapes. The fix: row y starts at base + y * pitch (bytes).
  const std::uint8_t* in =
      rgb + static_cast<std::size_t>(y) * rgb_pitch + 3 * static_cast<std::size_t>(x);
  gray[static_cast<std::size_t>(y) * gray_pitch + x] = gray_of(in[0], in[1], in[2]);
  // BUG: (void)rgb_pitch, (void)gray_pitch;
  // BUG: const std::uint8_t* in = rgb + (static_cast<std::size_t>(y) * width + x) * 3;
  // BUG: gray[static_cast<std::size_t>(y) * width + x] = gray_of(in[0], in[1], in[2]);
  // END PITFALL
  // END EXERCISE
}

}  // namespace

void rgb_to_gray(const std::uint8_t* rgb, std::size_t rgb_pitch, std::uint8_t* gray,
                 std::size_t gray_pitch, int width, int height, cudaStream_t stream) {
  require(width >= 0, "width", "must not be negative");
  require(height >= 0, "height", "must not be negative");
  require(height <= 65535 * static_cast<long long>(kBlockY), "height",
          "exceeds the 65535 blocks a grid may have in y");
  const std::size_t w = static_cast<std::size_t>(width), h = static_cast<std::size_t>(height);
  require(rgb_pitch >= 3 * w, "rgb_pitch", "must be at least 3 * width bytes");
  require(gray_pitch >= w, "gray_pitch", "must be at least width bytes");
  require_device_pointer(rgb, w * h, "rgb");
  require_device_pointer(gray, w * h, "gray");
  if (w == 0 || h == 0) return;
  const dim3 block(kBlockX, kBlockY);
  const dim3 grid(ceil_div<unsigned>(static_cast<unsigned>(width), kBlockX),
                  ceil_div<unsigned>(static_cast<unsigned>(height), kBlockY));
  rgb_to_gray_kernel<<<grid, block, 0, stream>>>(rgb, rgb_pitch, gray, gray_pitch, width, height);
  CUDALAB_CHECK_LAUNCH();
}

}  // namespace cudalab::ch03
