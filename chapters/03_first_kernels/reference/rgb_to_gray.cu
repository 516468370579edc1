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

// BEGIN EXERCISE 3.5
// TODO(3.5): kPixelsPerThread, the pixels of one row that one thread of rgb_to_gray_kernel
//   converts; rgb_to_gray() launches ceil(width / (kBlockX * kPixelsPerThread)) blocks in x. The
//   exercise keeps 1: one pixel per thread.
// STARTER: constexpr unsigned kPixelsPerThread = 1;
constexpr unsigned kPixelsPerThread = 16;
// A warp converts kSegment consecutive pixels of one row: 3 * kSegment = 1536 rgb bytes, 96
// 16-byte words (three per lane), and kSegment = 512 gray bytes (one 16-byte word per lane).
constexpr unsigned kSegment = kBlockX * kPixelsPerThread;
constexpr unsigned kVecBytes = sizeof(uint4);
constexpr unsigned kRgbWordsPerLane = 3 * kPixelsPerThread / kVecBytes;  // 3
static_assert(kPixelsPerThread == kVecBytes, "one 16-byte gray store per lane");

// Byte i of 16-byte word w (little-endian, as the bytes lie in memory).
__device__ inline unsigned byte_of(const uint4& w, unsigned i) {
  const unsigned word = i / 4 == 0 ? w.x : i / 4 == 1 ? w.y : i / 4 == 2 ? w.z : w.w;
  return (word >> (8 * (i % 4))) & 0xFFu;
}
// END EXERCISE

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
  //     written (the padding included). Launch: a 2D grid of kBlockX x kBlockY blocks, each
  //     covering kBlockX * kPixelsPerThread columns and kBlockY rows of the image.
  //   Constraints: one pixel per thread (kPixelsPerThread = 1); any width and height (odd ones,
  //     1 x N, N x 1); any pitch and any byte alignment of the two images; offsets that cannot
  //     overflow for images of several GB.
  //   Goal: BM_rgb_to_gray >= 0.25x BM_memcpy_d2d; `scripts/lab check 3.5`.
  const int y = static_cast<int>(blockIdx.y * blockDim.y + threadIdx.y);
  // Warp threadIdx.y of the block owns row y, columns [x0, x0 + kSegment): lane l the 16 pixels
  // x0 + 16 l .. x0 + 16 l + 15 on the vector path.
  if (y >= height) return;  // the whole warp: warps never straddle rows
  const unsigned lane = threadIdx.x;
  const std::size_t n_x = static_cast<std::size_t>(width);
  const std::size_t x0 = static_cast<std::size_t>(blockIdx.x) * kSegment;
  // BEGIN PITFALL ignored_pitch EXERCISES 3.5
  // Rows assumed to be 3 * width bytes apart. cudaMallocPitch pads every row (to 512 bytes on
  // current GPUs) so that each row starts aligned. Indexing with y * 3 * width instead of y * pitch
  // reads row 0 right and every later row from the wrong place. Square power-of-two images often
  // hide it (3 * 512 is already a multiple of 512); odd widths never do.
  // Caught by: RgbToGrayGpu on odd shapes. The fix: row y starts at base + y * pitch (bytes).
  const std::uint8_t* in_row = rgb + static_cast<std::size_t>(y) * rgb_pitch;
  std::uint8_t* out_row = gray + static_cast<std::size_t>(y) * gray_pitch;
  // BUG: (void)rgb_pitch, (void)gray_pitch;
  // BUG: const std::uint8_t* in_row = rgb + static_cast<std::size_t>(y) * 3 * width;
  // BUG: std::uint8_t* out_row = gray + static_cast<std::size_t>(y) * width;
  // END PITFALL

  // Vector path: a whole segment of a row whose two starts are 16-byte aligned (every row of a
  // cudaMallocPitch image). The warp reads its 1536 rgb bytes as 96 consecutive 16-byte words
  // (three fully coalesced 512-byte loads), stages them in shared memory, and each lane reads back
  // the 48 bytes of its own 16 pixels: 12 words at word 12 l, conflict-free (in each quarter-warp
  // phase the 8 lanes' 4-word reads fall on distinct banks).
  __shared__ uint4 stage[kBlockY][kRgbWordsPerLane * kBlockX];
  uint4* my_stage = stage[threadIdx.y];
  if (x0 + kSegment <= n_x && is_aligned(in_row, kVecBytes) &&
      is_aligned(out_row, kVecBytes)) {  // warp-uniform
    const uint4* src = reinterpret_cast<const uint4*>(in_row + 3 * x0);
    uint4 raw[kRgbWordsPerLane];
#pragma unroll
    for (unsigned k = 0; k < kRgbWordsPerLane; ++k) raw[k] = src[lane + k * kBlockX];
#pragma unroll
    for (unsigned k = 0; k < kRgbWordsPerLane; ++k) my_stage[lane + k * kBlockX] = raw[k];
    __syncwarp();
    uint4 mine[kRgbWordsPerLane];
#pragma unroll
    for (unsigned k = 0; k < kRgbWordsPerLane; ++k) mine[k] = my_stage[kRgbWordsPerLane * lane + k];
    unsigned packed[kPixelsPerThread / 4] = {};
#pragma unroll
    for (unsigned p = 0; p < kPixelsPerThread; ++p) {
      const unsigned b = 3 * p;  // first byte of pixel p among the lane's 48
      const unsigned r = byte_of(mine[b / kVecBytes], b % kVecBytes),
                     g = byte_of(mine[(b + 1) / kVecBytes], (b + 1) % kVecBytes),
                     bl = byte_of(mine[(b + 2) / kVecBytes], (b + 2) % kVecBytes);
      packed[p / 4] |= static_cast<unsigned>(gray_of(r, g, bl)) << (8 * (p % 4));
    }
    *reinterpret_cast<uint4*>(out_row + x0 + kPixelsPerThread * lane) =
        make_uint4(packed[0], packed[1], packed[2], packed[3]);
    return;
  }
  // Scalar path: the row's last, partial segment, and rows that are not 16-byte aligned (a tight
  // or offset view). Lane l takes pixels x0 + l + 32 t: each of the kPixelsPerThread steps is a
  // coalesced warp access, and all of them are independent (in flight together).
#pragma unroll
  for (unsigned t = 0; t < kPixelsPerThread; ++t) {
    const std::size_t x = x0 + lane + t * kBlockX;
    if (x < n_x) {
      const std::uint8_t* in = in_row + 3 * x;
      out_row[x] = gray_of(in[0], in[1], in[2]);
    }
  }
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
