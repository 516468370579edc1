// Exercise 3.2 — the first kernel: c = a + b, one thread per element.
//
// Launch shape: 1D, kBlock threads per block, blocks_for(n, kBlock) blocks. Bytes moved: 12 n
// (two 4-byte reads, one 4-byte write per element) — this kernel is memory-bound; on an H200 it
// should run near the device-to-device copy bandwidth (the benchmark shows the ratio).
#include "ch03/ch03.hpp"
#include "cudalab/check.hpp"

namespace cudalab::ch03 {
namespace {

__global__ void __launch_bounds__(kBlock)
    vector_add_kernel(const float* __restrict__ a, const float* __restrict__ b,
                      float* __restrict__ c, std::size_t n) {
  // BEGIN EXERCISE 3.2
  // TODO(3.2): the body of vector_add_kernel.
  //   Contract: c[i] = a[i] + b[i] for every i < n, and nothing written at or past n. The launch
  //     (vector_add below) gives at least one thread per element: blocks_for(n, kBlock) blocks of
  //     kBlock threads, so the last block may have threads with nothing to do.
  //   Constraints: one element per thread; indices must stay correct for n >= 2^31 (an H200 holds
  //     such arrays); neighbouring threads should touch neighbouring elements.
  //   Goal: BM_vector_add >= 0.7x BM_memcpy_d2d at 2^28 floats;
  //     `scripts/lab check 3.2`.
  const std::size_t i = std::size_t{blockIdx.x} * blockDim.x + threadIdx.x;
  // BEGIN PITFALL missing_bounds_check EXERCISES 3.2
  // No bounds check. The grid has blocks_for(n, 256) * 256 threads, up to 255 more than n. Without
  // `if (i < n)` the extra threads read past the ends of a and b and write past the end of c.
  // Usually nothing crashes (allocations are rounded up to large pages), so the bug corrupts the
  // neighbouring buffer silently. Caught by: the guard zone of poisoned elements the tests place
  // after c. The fix: `if (i < n)` before every access.
  if (i < n) c[i] = a[i] + b[i];  // the last block may have threads past the end
  // BUG: (void)n;
  // BUG: c[i] = a[i] + b[i];
  // END PITFALL
  // END EXERCISE
}

}  // namespace

void vector_add(const float* a, const float* b, float* c, std::size_t n, cudaStream_t stream) {
  require_device_pointer(a, n, "a");
  require_device_pointer(b, n, "b");
  require_device_pointer(c, n, "c");
  if (n == 0) return;  // a grid of 0 blocks is an invalid configuration
  vector_add_kernel<<<blocks_for(n, kBlock), kBlock, 0, stream>>>(a, b, c, n);
  CUDALAB_CHECK_LAUNCH();
}

}  // namespace cudalab::ch03
