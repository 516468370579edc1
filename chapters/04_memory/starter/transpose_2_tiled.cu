// Starter track — write your code at the TODO marks; the tests of each exercise
// fail until you do. (Generated from chapters/04_memory/reference/transpose_2_tiled.cu by scripts/variants.py.)
// Exercise 4.2 — transpose through a shared-memory tile (ladder steps 2, 3 and 4).
//
// What it computes: out (cols x rows) = transpose of in (rows x cols), both row-major.
// Launch shape: a 1D grid of kTile x kTile tiles, blocks of 32 x 8 threads, so a thread moves
// (kTile / 8) x (kTile / 32) elements: 4 for a 32-tile, 16 for a 64-tile.
//
// The naive kernel writes columns: 32 sectors per warp store. The three steps here share one
// kernel and differ only in its template arguments:
//   kTiled    a 32 x 32 shared tile, no padding;
//   kPadded   the same tile, each row padded by one word (README section 3: why that matters);
//   kPadded64 a 64 x 64 tile padded by one word: more elements per thread, fewer blocks and
//             barriers per byte. The best step should reach >= 90% of cudaMemcpy device-to-device.
// Bytes that must move: 8 rows cols, for any shape (odd shapes, 1 x N, N x 1: partial edge tiles).
#include <type_traits>

#include "ch04/ch04.hpp"
#include "cudalab/check.hpp"
#include "cudalab/launch.hpp"
#include "transpose_common.cuh"

namespace cudalab::ch04 {
namespace {

constexpr int kThreadsX = TransposeShape::kThreadsX, kThreadsY = TransposeShape::kThreadsY;
// Resident blocks per SM the kernel is built for: 8 x 256 threads fill an SM's 2048 threads, and
// with 16 loads per thread (64-tile) that is 128 KB in flight per SM. It caps the registers at 32.
constexpr int kMinBlocksPerSm = 8;

template <int kTile, int kPad>
__global__ void __launch_bounds__(kThreadsX* kThreadsY, kMinBlocksPerSm)
    transpose_tiled_kernel(const float* __restrict__ in, float* __restrict__ out, int rows,
                           int cols, unsigned tiles_x) {
  // TODO(4.2): the body of transpose_tiled_kernel<kTile, kPad>.
  //   Contract: out (cols x rows, row-major) = the transpose of in (rows x cols, row-major) over
  //     this block's kTile x kTile tile, for any rows and cols (odd shapes, 1 x N, N x 1: edge
  //     tiles are partial). The block is 32 x 8 threads (TransposeShape); the grid is 1D, one block
  //     per tile: detail::tile_origin_by_columns<kTile>(tiles_x) gives this block's first input
  //     row and column.
  //   Constraints: both the global reads and the global writes coalesced (a warp touches 32
  //     consecutive floats of one row on each side); the tile staged in shared memory, each of its
  //     rows padded by kPad words; no element read or written outside its matrix; 64-bit offsets.
  //     kPad is the knob the ladder turns (0 for kTiled, 1 for kPadded and kPadded64): your kernel
  //     must work for both.
  //   Goal: the best BM_transpose/variant:1-3 at 8192 x 8192 >= 0.8x BM_transpose_memcpy of the
  //     same bytes, the padded row well ahead of the unpadded one;
  //     `scripts/lab check 4.2`.
}

template <int kTile, int kPad>
void launch(const float* in, float* out, int rows, int cols, cudaStream_t stream) {
  static_assert(kTile % kThreadsX == 0 && kTile % kThreadsY == 0, "whole threads per tile");
  static_assert(sizeof(float) * kTile * (kTile + kPad) <= 48 * 1024, "static shared memory limit");
  // Many tiles per SM are what keeps HBM busy: ask for the largest shared-memory carveout so that
  // shared memory (16.6 KB per 64-tile block) never limits the 8 resident blocks per SM.
  set_kernel_attribute_once(transpose_tiled_kernel<kTile, kPad>,
                            cudaFuncAttributePreferredSharedMemoryCarveout,
                            cudaSharedmemCarveoutMaxShared);
  unsigned tiles_x = 0;
  const unsigned blocks = detail::tile_blocks(rows, cols, kTile, &tiles_x);
  transpose_tiled_kernel<kTile, kPad>
      <<<blocks, dim3(kThreadsX, kThreadsY), 0, stream>>>(in, out, rows, cols, tiles_x);
  CUDALAB_CHECK_LAUNCH();
}

}  // namespace

namespace detail {
void launch_transpose_tiled(const float* in, float* out, int rows, int cols,
                            TransposeVariant variant, cudaStream_t stream) {
  switch (variant) {
    case TransposeVariant::kTiled:
      return launch<32, 0>(in, out, rows, cols, stream);
    case TransposeVariant::kPadded:
      return launch<32, 1>(in, out, rows, cols, stream);
    case TransposeVariant::kPadded64:
      return launch<64, 1>(in, out, rows, cols, stream);
    case TransposeVariant::kNaive:
      break;
  }
  require(false, "variant", "not a tiled TransposeVariant");
}
}  // namespace detail

}  // namespace cudalab::ch04
