// PITFALL (exercise 3.6): launches nobody checks, faults nobody waits for.
//
// fill() with 2048 threads per block is refused by the driver, but a launch returns no status:
// without cudaGetLastError() the caller sees success and an output that was never written.
// launch_faulty_kernel() returns before the kernel runs; its illegal-address fault then surfaces
// in some later, unrelated call (here: in the test's next CUDA call), far from its cause.
// Caught by: ErrorsGpu and ErrorsFaultGpu, which expect cudalab::CudaError from these functions.
#include "ch03/ch03.hpp"
#include "cudalab/check.hpp"

namespace cudalab::ch03 {
namespace {

__global__ void fill_kernel(float* out, std::size_t n, float value) {
  const std::size_t i = std::size_t{blockIdx.x} * blockDim.x + threadIdx.x;
  if (i < n) out[i] = value;
}

__global__ void faulty_kernel(float* bad) { bad[threadIdx.x] = 1.0f; }

}  // namespace

void fill(float* out, std::size_t n, float value, unsigned threads_per_block, cudaStream_t stream) {
  require_device_pointer(out, n, "out");
  if (n == 0) return;
  const std::size_t blocks = threads_per_block == 0 ? 1 : (n + threads_per_block - 1) / threads_per_block;
  fill_kernel<<<static_cast<unsigned>(blocks), threads_per_block, 0, stream>>>(out, n, value);
  // BUG: no launch check
}

void launch_faulty_kernel(cudaStream_t stream) {
  faulty_kernel<<<1, 32, 0, stream>>>(reinterpret_cast<float*>(0x10));
  // BUG: returns without waiting for the kernel or checking it
}

}  // namespace cudalab::ch03
