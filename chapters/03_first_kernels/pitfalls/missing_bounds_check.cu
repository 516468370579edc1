// PITFALL (exercise 3.2): no bounds check in the kernel.
//
// The grid has blocks_for(n, 256) * 256 threads, up to 255 more than n. Without `if (i < n)` the
// extra threads read past the ends of a and b and write past the end of c. Usually nothing
// crashes — allocations are rounded up to large pages — so the bug corrupts the neighbouring
// buffer silently. Caught by: the guard zone of poisoned elements the tests place after c.
#include "ch03/ch03.hpp"
#include "cudalab/check.hpp"

namespace cudalab::ch03 {
namespace {

__global__ void vector_add_kernel(const float* a, const float* b, float* c) {
  const std::size_t i = std::size_t{blockIdx.x} * blockDim.x + threadIdx.x;
  c[i] = a[i] + b[i];  // BUG: no `if (i < n)`
}

}  // namespace

void vector_add(const float* a, const float* b, float* c, std::size_t n, cudaStream_t stream) {
  require_device_pointer(a, n, "a");
  require_device_pointer(b, n, "b");
  require_device_pointer(c, n, "c");
  if (n == 0) return;
  vector_add_kernel<<<blocks_for(n, kBlock), kBlock, 0, stream>>>(a, b, c);
  CUDALAB_CHECK_LAUNCH();
}

}  // namespace cudalab::ch03
