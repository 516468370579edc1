// Starter track — write your code at the TODO marks; the tests of each exercise
// fail until you do. (Generated from chapters/09_profiling/reference/scale_rows.cu by scripts/variants.py.)
// Exercise 9.1 — a kernel and its profile: out[r][c] = in[r][c] * scale[r], row-major.
//
// Launch shape: 1D, kBlock threads per block, one thread per element, ceil(rows * cols / kBlock)
// blocks. Bytes it must move: 8 rows cols + 4 rows (read in, write out, read scale); FLOPs:
// rows cols (one multiply). Intensity 1/8 FLOP/byte: far left of the ridge point, so DRAM
// bandwidth is its roof and the goal is the copy's speed (the benchmark runs cudaMemcpy beside it).
//
// The starter maps consecutive threads to consecutive *rows* (r = i % rows): a warp's 32 loads
// land in 32 different rows, 32 sectors per request where 4 would do. The README shows its ncu
// profile; the fix is the thread-to-element mapping, nothing else.
#include <cstdint>

#include "ch09/ch09.hpp"
#include "cudalab/check.hpp"
#include "cudalab/math.hpp"

namespace cudalab::ch09 {
namespace {

constexpr unsigned kBlock = 256;

__global__ void __launch_bounds__(kBlock)
    scale_rows_kernel(const float* __restrict__ in, const float* __restrict__ scale,
                      float* __restrict__ out, std::size_t rows, std::size_t cols) {
  const std::size_t i = std::size_t{blockIdx.x} * blockDim.x + threadIdx.x;
  if (i >= rows * cols) return;
  // TODO(9.1): this mapping is correct and its profile says why it is slow (README, "Exercises
  // from a profile"). Keep one thread per element and the bounds check; change which element
  // thread i owns. Goal: >= 0.6x the GB/s of cudaMemcpy D2D in bench_ch09_starter
  // (bench/ch09.toml).
  const std::size_t r = i % rows, c = i / rows;
  // Consecutive threads take consecutive columns of one row: a warp reads 128 contiguous bytes.
  out[r * cols + c] = in[r * cols + c] * scale[r];
}

}  // namespace

void scale_rows(const float* in, const float* scale, float* out, std::size_t rows, std::size_t cols,
                cudaStream_t stream) {
  require(cols == 0 || rows <= SIZE_MAX / cols, "rows", "rows * cols overflows");
  const std::size_t n = rows * cols;
  if (n == 0) return;
  require_device_pointer(in, n, "in");
  require_device_pointer(scale, rows, "scale");
  require_device_pointer(out, n, "out");
  const std::size_t blocks = ceil_div<std::size_t>(n, kBlock);
  require(blocks <= 0x7fffffff, "rows", "rows * cols needs more than 2^31 - 1 blocks");
  scale_rows_kernel<<<static_cast<unsigned>(blocks), kBlock, 0, stream>>>(in, scale, out, rows,
                                                                          cols);
  CUDALAB_CHECK_LAUNCH();
}

}  // namespace cudalab::ch09
