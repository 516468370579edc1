// PITFALL (exercise 3.5): rows assumed to be 3 * width bytes apart.
//
// cudaMallocPitch pads every row (to 512 bytes on current GPUs) so that each row starts aligned.
// Indexing with y * 3 * width instead of y * pitch reads row 0 right and every later row from the
// wrong place. Square power-of-two images often hide it (3 * 512 is already a multiple of 512);
// odd widths never do. Caught by: RgbToGrayGpu on odd shapes.
#include "ch03/ch03.hpp"
#include "cudalab/check.hpp"
#include "cudalab/math.hpp"

namespace cudalab::ch03 {
namespace {

__global__ void rgb_to_gray_kernel(const std::uint8_t* rgb, std::uint8_t* gray, int width, int height) {
  const int x = static_cast<int>(blockIdx.x * blockDim.x + threadIdx.x);
  const int y = static_cast<int>(blockIdx.y * blockDim.y + threadIdx.y);
  if (x >= width || y >= height) return;
  const std::uint8_t* in = rgb + (static_cast<std::size_t>(y) * width + x) * 3;  // BUG: no pitch
  gray[static_cast<std::size_t>(y) * width + x] = gray_of(in[0], in[1], in[2]);  // BUG: no pitch
}

}  // namespace

void rgb_to_gray(const std::uint8_t* rgb, std::size_t rgb_pitch, std::uint8_t* gray,
                 std::size_t gray_pitch, int width, int height, cudaStream_t stream) {
  require(width >= 0 && height >= 0, "width/height", "must not be negative");
  require(rgb_pitch >= 3 * static_cast<std::size_t>(width), "rgb_pitch", "must be at least 3 * width");
  require(gray_pitch >= static_cast<std::size_t>(width), "gray_pitch", "must be at least width");
  if (width == 0 || height == 0) return;
  const dim3 block(kBlockX, kBlockY);
  const dim3 grid(ceil_div<unsigned>(static_cast<unsigned>(width), kBlockX),
                  ceil_div<unsigned>(static_cast<unsigned>(height), kBlockY));
  rgb_to_gray_kernel<<<grid, block, 0, stream>>>(rgb, gray, width, height);
  CUDALAB_CHECK_LAUNCH();
}

}  // namespace cudalab::ch03
