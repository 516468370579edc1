// Starter track — write your code at the TODO marks; the tests of each exercise
// fail until you do. (Generated from chapters/03_first_kernels/reference/saxpy.cu by scripts/variants.py.)
// Exercise 3.3 — SAXPY, y = alpha * x + y, correct for any n, also past 2^31 elements.
//
// blockIdx.x * blockDim.x is computed in 32-bit unsigned arithmetic; stored in an `int` it turns
// negative at 2^31 (8.6 GB of floats — an ordinary size on an H200). Widen to 64 bits *before*
// multiplying. Bytes moved: 12 n (read x, read y, write y); FLOPs: 2 n.
#include "ch03/ch03.hpp"
#include "cudalab/check.hpp"

namespace cudalab::ch03 {
namespace {

__global__ void __launch_bounds__(kBlock)
saxpy_kernel(float alpha, const float* __restrict__ x, float* __restrict__ y, std::size_t n) {
  // TODO(3.3): one element per thread: a 64-bit global index i (widen blockIdx.x before the
  //            multiplication), a bounds check, then y[i] = alpha * x[i] + y[i].
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
