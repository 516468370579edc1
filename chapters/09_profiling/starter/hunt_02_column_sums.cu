// Starter track — write your code at the TODO marks; the tests of each exercise
// fail until you do. (Generated from chapters/09_profiling/reference/hunt_02_column_sums.cu by scripts/variants.py.)
// Bug hunt 2 — column sums of a row-major rows x cols matrix (cols a multiple of 32).
//
// Launch shape: blocks of (32, kRowsPerBlock) threads, one block per 32 columns: thread (x, y)
// adds rows y, y + kRowsPerBlock, ... of column 32 blockIdx.x + x (coalesced: a warp reads 32
// contiguous floats), then the kRowsPerBlock partial sums of a column meet in shared memory,
// tile (kRowsPerBlock, 32).
#include <vector>

#include "ch09/hunt.hpp"
#include "cudalab/check.hpp"
#include "cudalab/memory.hpp"

namespace cudalab::ch09 {
namespace {

constexpr unsigned kWarp = 32, kRowsPerBlock = 8;

__global__ void __launch_bounds__(kWarp* kRowsPerBlock)
    column_sum_kernel(const float* in, float* out, std::size_t rows, std::size_t cols) {
  __shared__ float tile[kRowsPerBlock][kWarp];  // (row group, column)
  const std::size_t c = std::size_t{blockIdx.x} * kWarp + threadIdx.x;
  float acc = 0.0f;
  for (std::size_t r = threadIdx.y; r < rows; r += kRowsPerBlock) acc += in[r * cols + c];
  // TODO(9.3): this case has one bug. Run it under the sanitizers (README, "The bug hunt"), find
  // what they report, fix it; the ctest tests of 9.3 pass when every tool is clean.
  tile[threadIdx.x][threadIdx.y] = acc;
  __syncthreads();  // every partial sum is in the tile before row 0 adds them
  if (threadIdx.y == 0) {
    float sum = 0.0f;
    for (unsigned k = 0; k < kRowsPerBlock; ++k) sum += tile[k][threadIdx.x];
    out[c] = sum;
  }
}

}  // namespace

HuntResult hunt_column_sums() {
  constexpr std::size_t rows = 301, cols = 128;
  std::vector<float> x(rows * cols), want(cols, 0.0f);
  for (std::size_t i = 0; i < x.size(); ++i)
    x[i] = static_cast<float>(i % 13) - 6.0f;  // small integers: exact sums
  for (std::size_t r = 0; r < rows; ++r)
    for (std::size_t c = 0; c < cols; ++c) want[c] += x[r * cols + c];
  const DeviceBuffer<float> in = to_device(x);
  DeviceBuffer<float> out(cols);
  column_sum_kernel<<<static_cast<unsigned>(cols / kWarp), dim3(kWarp, kRowsPerBlock)>>>(
      in.data(), out.data(), rows, cols);
  CUDALAB_CHECK_LAUNCH();
  CUDALAB_CHECK(cudaDeviceSynchronize());
  const std::string bad = first_mismatch(out.to_host(), want);
  return {bad.empty(), bad.empty() ? "301 x 128 matched" : bad};
}

}  // namespace cudalab::ch09
