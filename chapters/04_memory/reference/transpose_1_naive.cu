// Transpose ladder, steps 0 and 1: the copy it is measured against and the naive transpose.
//
// Launch shape (both kernels): a 1D grid of 32x32 tiles, blocks of 32 x 8 threads; each thread
// moves 4 elements (rows ty, ty + 8, ty + 16, ty + 24 of the tile). Bytes that must move: 8 rows
// cols (read every element once, write it once). The copy reads and writes rows: both coalesced,
// it should run near cudaMemcpy. The naive transpose reads rows (coalesced) but writes columns:
// the 32 lanes of a warp store to 32 different output rows, `rows` floats apart — 32 sectors per
// store instruction for 128 useful bytes. Expect it far below the copy (typically 3-5x slower);
// the tiled steps (transpose_2_tiled.cu) fix the writes through shared memory.
#include <limits>

#include "ch04/ch04.hpp"
#include "cudalab/check.hpp"
#include "cudalab/math.hpp"
#include "transpose_common.cuh"

namespace cudalab::ch04 {
namespace {

constexpr int kTile = 32;
constexpr int kThreadsX = TransposeShape::kThreadsX, kThreadsY = TransposeShape::kThreadsY;
static_assert(kTile % kThreadsY == 0 && kTile == kThreadsX, "32 x 8 threads cover a 32 x 32 tile");

__global__ void __launch_bounds__(kThreadsX* kThreadsY)
    copy_2d_kernel(const float* __restrict__ in, float* __restrict__ out, int rows, int cols,
                   unsigned tiles_x) {
  const auto [row0, col0] = detail::tile_origin<kTile>(tiles_x);
  const std::size_t c = col0 + threadIdx.x;  // a warp: 32 consecutive columns of one row
#pragma unroll
  for (int k = 0; k < kTile / kThreadsY; ++k) {
    const std::size_t r = row0 + threadIdx.y + k * kThreadsY;
    if (r < static_cast<std::size_t>(rows) && c < static_cast<std::size_t>(cols))
      out[r * cols + c] = in[r * cols + c];
  }
}

__global__ void __launch_bounds__(kThreadsX* kThreadsY)
    transpose_naive_kernel(const float* __restrict__ in, float* __restrict__ out, int rows,
                           int cols, unsigned tiles_x) {
  const auto [row0, col0] = detail::tile_origin<kTile>(tiles_x);
  const std::size_t c = col0 + threadIdx.x;
#pragma unroll
  for (int k = 0; k < kTile / kThreadsY; ++k) {
    const std::size_t r = row0 + threadIdx.y + k * kThreadsY;
    // Read: consecutive lanes, consecutive columns (coalesced). Write: consecutive lanes write
    // out[c * rows + r] for consecutive c, i.e. `rows` floats apart (one sector per lane).
    if (r < static_cast<std::size_t>(rows) && c < static_cast<std::size_t>(cols))
      out[c * rows + r] = in[r * cols + c];
  }
}

void check_matrix(const float* in, const float* out, int rows, int cols) {
  require(rows >= 0, "rows", "must not be negative");
  require(cols >= 0, "cols", "must not be negative");
  const std::size_t n = static_cast<std::size_t>(rows) * static_cast<std::size_t>(cols);
  require_device_pointer(in, n, "in");
  require_device_pointer(out, n, "out");
}

}  // namespace

namespace detail {
unsigned tile_blocks(int rows, int cols, int tile, unsigned* tiles_x) {
  const std::size_t tx = ceil_div<std::size_t>(static_cast<std::size_t>(cols), tile);
  const std::size_t ty = ceil_div<std::size_t>(static_cast<std::size_t>(rows), tile);
  require(tx * ty <= static_cast<std::size_t>(std::numeric_limits<int>::max()), "rows/cols",
          "the matrix needs more than 2^31 - 1 tiles");
  *tiles_x = static_cast<unsigned>(tx);
  return static_cast<unsigned>(tx * ty);
}
}  // namespace detail

std::string_view name(TransposeVariant variant) {
  switch (variant) {
    case TransposeVariant::kNaive:
      return "naive";
    case TransposeVariant::kTiled:
      return "tiled";
    case TransposeVariant::kPadded:
      return "padded";
    case TransposeVariant::kPadded64:
      return "padded64";
  }
  return "unknown";
}

void copy_2d(const float* in, float* out, int rows, int cols, cudaStream_t stream) {
  check_matrix(in, out, rows, cols);
  if (rows == 0 || cols == 0) return;
  unsigned tiles_x = 0;
  const unsigned blocks = detail::tile_blocks(rows, cols, kTile, &tiles_x);
  copy_2d_kernel<<<blocks, dim3(kThreadsX, kThreadsY), 0, stream>>>(in, out, rows, cols, tiles_x);
  CUDALAB_CHECK_LAUNCH();
}

void transpose(const float* in, float* out, int rows, int cols, TransposeVariant variant,
               cudaStream_t stream) {
  require(name(variant) != "unknown", "variant", "unknown TransposeVariant");
  check_matrix(in, out, rows, cols);
  if (rows == 0 || cols == 0) return;
  if (variant != TransposeVariant::kNaive) {
    detail::launch_transpose_tiled(in, out, rows, cols, variant, stream);
    return;
  }
  unsigned tiles_x = 0;
  const unsigned blocks = detail::tile_blocks(rows, cols, kTile, &tiles_x);
  transpose_naive_kernel<<<blocks, dim3(kThreadsX, kThreadsY), 0, stream>>>(in, out, rows, cols,
                                                                            tiles_x);
  CUDALAB_CHECK_LAUNCH();
}

}  // namespace cudalab::ch04
