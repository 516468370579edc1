// PITFALL (exercise 3.3): a 32-bit index.
//
// `int i = blockIdx.x * blockDim.x + threadIdx.x` is fine up to 2^31 - 1 elements. Past that the
// product (unsigned, 32-bit) no longer fits an int: i turns negative, the comparison with the
// 64-bit n converts it to a huge unsigned value, and the bounds check skips every element from
// 2^31 on. Arrays of 2^31 floats are 8.6 GB — small for an H200 (141 GB).
// Caught by: SaxpyLargeGpu (n = 2^31 + 4099), which checks the elements around 2^31.
#include "ch03/ch03.hpp"
#include "cudalab/check.hpp"

namespace cudalab::ch03 {
namespace {

__global__ void saxpy_kernel(float alpha, const float* x, float* y, std::size_t n) {
  const int i = static_cast<int>(blockIdx.x * blockDim.x + threadIdx.x);  // BUG: 32-bit index
  if (static_cast<std::size_t>(i) < n) y[i] = alpha * x[i] + y[i];
}

}  // namespace

void saxpy(float alpha, const float* x, float* y, std::size_t n, cudaStream_t stream) {
  require_device_pointer(x, n, "x");
  require_device_pointer(y, n, "y");
  if (n == 0) return;
  saxpy_kernel<<<blocks_for(n, kBlock), kBlock, 0, stream>>>(alpha, x, y, n);
  CUDALAB_CHECK_LAUNCH();
}

}  // namespace cudalab::ch03
