// Starter track — write your code at the TODO marks; the tests of each exercise
// fail until you do. (Generated from chapters/03_first_kernels/reference/rgb_to_gray.cu by scripts/variants.py.)
// Exercise 3.5 — a 2D kernel on a pitched image of any shape.
//
// Launch shape: blocks of kBlockX x kBlockY = 32 x 8 threads, grid ceil(width / 32) x
// ceil(height / 8); thread (x, y) converts pixel (x, y). A warp is 32 consecutive pixels of one
// row: its reads span 96 consecutive bytes and its writes 32 (coalesced). Rows are `pitch` bytes
// apart, not 3 * width: cudaMallocPitch pads each row to an aligned boundary, so
// row y starts at base + y * pitch. Both dimensions need a bounds check (odd shapes).
// Bytes moved: 4 per pixel (3 read, 1 written).
#include "ch03/ch03.hpp"
#include "cudalab/check.hpp"
#include "cudalab/math.hpp"

namespace cudalab::ch03 {
namespace {

__global__ void __launch_bounds__(kBlockX * kBlockY)
rgb_to_gray_kernel(const std::uint8_t* __restrict__ rgb, std::size_t rgb_pitch,
                   std::uint8_t* __restrict__ gray, std::size_t gray_pitch, int width, int height) {
  // TODO(3.5): x from the .x components, y from the .y components; return if x >= width or
  //            y >= height; find the row starts with the pitches (bytes!), then
  //            gray_row[x] = gray_of(r, g, b) with r, g, b at rgb_row[3x], [3x+1], [3x+2].
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
