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
// land in 32 different rows, 32 sectors per request where 4 would do. The README gives the ncu
// command that shows it (tools/gpu_check.sh prints it); the fix is the thread-to-element mapping,
// owner(), nothing else (ScaleRowsGpu.AWarpOwnsConsecutiveAddresses checks the mapping).
#include <cstdint>

#include "ch09/ch09.hpp"
#include "cudalab/check.hpp"
#include "cudalab/math.hpp"

namespace cudalab::ch09 {
namespace {

constexpr unsigned kBlock = 256;

struct Element {
  std::size_t r, c;  // row, column
};

// The element thread i owns (i < rows * cols); the kernel and scale_rows_owners share it.
__device__ inline Element owner(std::size_t i, std::size_t rows, std::size_t cols) {
  // TODO(9.1): this mapping is correct and its profile says why it is slow (README, "Exercises
  // from a profile"). Keep one thread per element; change which element thread i owns. Goal:
  // >= 0.6x the GB/s of cudaMemcpy D2D in bench_ch09_starter (bench/ch09/ch09.toml).
  (void)cols;
  return {i % rows, i / rows};
}

__global__ void __launch_bounds__(kBlock)
    scale_rows_kernel(const float* __restrict__ in, const float* __restrict__ scale,
                      float* __restrict__ out, std::size_t rows, std::size_t cols) {
  const std::size_t i = std::size_t{blockIdx.x} * blockDim.x + threadIdx.x;
  if (i >= rows * cols) return;
  const Element e = owner(i, rows, cols);
  out[e.r * cols + e.c] = in[e.r * cols + e.c] * scale[e.r];
}

// owners[i] = the memory index of the element thread i owns (the kernel's mapping, made visible).
__global__ void __launch_bounds__(kBlock)
    owners_kernel(std::size_t* __restrict__ owners, std::size_t rows, std::size_t cols) {
  const std::size_t i = std::size_t{blockIdx.x} * blockDim.x + threadIdx.x;
  if (i >= rows * cols) return;
  const Element e = owner(i, rows, cols);
  owners[i] = e.r * cols + e.c;
}

unsigned blocks_for(std::size_t rows, std::size_t cols) {
  require(cols == 0 || rows <= SIZE_MAX / cols, "rows", "rows * cols overflows");
  const std::size_t blocks = ceil_div<std::size_t>(rows * cols, kBlock);
  require(blocks <= 0x7fffffff, "rows", "rows * cols needs more than 2^31 - 1 blocks");
  return static_cast<unsigned>(blocks);
}

}  // namespace

void scale_rows(const float* in, const float* scale, float* out, std::size_t rows, std::size_t cols,
                cudaStream_t stream) {
  const unsigned blocks = blocks_for(rows, cols);
  if (blocks == 0) return;
  require_device_pointer(in, rows * cols, "in");
  require_device_pointer(scale, rows, "scale");
  require_device_pointer(out, rows * cols, "out");
  scale_rows_kernel<<<blocks, kBlock, 0, stream>>>(in, scale, out, rows, cols);
  CUDALAB_CHECK_LAUNCH();
}

void scale_rows_owners(std::size_t rows, std::size_t cols, std::size_t* owners,
                       cudaStream_t stream) {
  const unsigned blocks = blocks_for(rows, cols);
  if (blocks == 0) return;
  require_device_pointer(owners, rows * cols, "owners");
  owners_kernel<<<blocks, kBlock, 0, stream>>>(owners, rows, cols);
  CUDALAB_CHECK_LAUNCH();
}

}  // namespace cudalab::ch09
