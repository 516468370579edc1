// Starter track — write your code at the TODO marks; the tests of each exercise
// fail until you do. (Generated from chapters/03_first_kernels/reference/rgb_to_gray.cu by scripts/variants.py.)
// Exercise 3.5 — a 2D kernel on a pitched image of any shape.
//
// Launch shape: blocks of kBlockX x kBlockY = 32 x 8 threads, grid
// ceil(width / (kBlockX * kPixelsPerThread)) x ceil(height / 8): a thread converts kPixelsPerThread
// pixels of one row. Rows are `pitch` bytes apart, not 3 * width: cudaMallocPitch pads each row to
// an aligned boundary. Bytes moved: 4 per pixel (3 read, 1 written).
#include <cstdint>

#include "ch03/ch03.hpp"
#include "cudalab/check.hpp"
#include "cudalab/launch.hpp"
#include "cudalab/math.hpp"

namespace cudalab::ch03 {
namespace {

// TODO(3.5): kPixelsPerThread, the pixels of one row that one thread of rgb_to_gray_kernel
//   converts; rgb_to_gray() launches ceil(width / (kBlockX * kPixelsPerThread)) blocks in x. The
//   exercise keeps 1: one pixel per thread.
constexpr unsigned kPixelsPerThread = 1;

__global__ void __launch_bounds__(kBlockX* kBlockY)
    rgb_to_gray_kernel(const std::uint8_t* __restrict__ rgb, std::size_t rgb_pitch,
                       std::uint8_t* __restrict__ gray, std::size_t gray_pitch, int width,
                       int height) {
  // TODO(3.5): the body of rgb_to_gray_kernel.
  //   Contract: for every pixel (x, y) with x < width and y < height, the gray byte of row y at
  //     column x becomes gray_of(R, G, B) of the RGB pixel at the same place. Row y of `rgb` starts
  //     rgb_pitch BYTES after row y - 1 (3 bytes per pixel, then padding); row y of `gray` starts
  //     gray_pitch bytes after the previous. Nothing outside the width x height image may be
  //     written (the padding included). Launch: a 2D grid of kBlockX x kBlockY blocks, each
  //     covering kBlockX * kPixelsPerThread columns and kBlockY rows of the image.
  //   Constraints: one pixel per thread (kPixelsPerThread = 1); any width and height (odd ones,
  //     1 x N, N x 1); any pitch and any byte alignment of the two images; offsets that cannot
  //     overflow for images of several GB.
  //   Goal: BM_rgb_to_gray >= 0.25x BM_memcpy_d2d; `scripts/lab check 3.5`.
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
  const dim3 grid(ceil_div<unsigned>(static_cast<unsigned>(width), kBlockX * kPixelsPerThread),
                  ceil_div<unsigned>(static_cast<unsigned>(height), kBlockY));
  // Shared memory before L1 in the SM's unified storage: a kernel that stages its bytes there keeps
  // 8 blocks an SM resident (a hint; harmless for a kernel that uses none).
  set_kernel_attribute_once(rgb_to_gray_kernel, cudaFuncAttributePreferredSharedMemoryCarveout,
                            cudaSharedmemCarveoutMaxShared);
  rgb_to_gray_kernel<<<grid, block, 0, stream>>>(rgb, rgb_pitch, gray, gray_pitch, width, height);
  CUDALAB_CHECK_LAUNCH();
}

}  // namespace cudalab::ch03
