// PITFALL (exercise 3.4): a vectorized loop that forgets the tail.
//
// With float4 the loop covers n / 4 vectors, i.e. the first 4 * (n / 4) floats. When n is not a
// multiple of 4 the last 1-3 elements are never written — the llm.c habit of guarding vector
// loads only by `i < N`. Tests with n = 1000 pass; n = 1001 fails.
// Caught by: GridStrideGpu with n % 4 != 0.
#include <algorithm>
#include <cstdint>

#include "ch03/ch03.hpp"
#include "cudalab/check.hpp"
#include "cudalab/math.hpp"

namespace cudalab::ch03 {
namespace {

__global__ void add_scalar(const float* a, const float* b, float* c, std::size_t n) {
  for (std::size_t i = std::size_t{blockIdx.x} * blockDim.x + threadIdx.x; i < n;
       i += std::size_t{blockDim.x} * gridDim.x)
    c[i] = a[i] + b[i];
}

__global__ void add_float4(const float4* a, const float4* b, float4* c, std::size_t n4) {
  for (std::size_t i = std::size_t{blockIdx.x} * blockDim.x + threadIdx.x; i < n4;
       i += std::size_t{blockDim.x} * gridDim.x) {
    const float4 x = a[i], y = b[i];
    c[i] = make_float4(x.x + y.x, x.y + y.y, x.z + y.z, x.w + y.w);
  }
  // BUG: the last n % 4 floats are never written
}

}  // namespace

void vector_add_grid_stride(const float* a, const float* b, float* c, std::size_t n,
                            StrideVariant variant, cudaStream_t stream) {
  require_device_pointer(a, n, "a");
  require_device_pointer(b, n, "b");
  require_device_pointer(c, n, "c");
  require(variant == StrideVariant::kScalar || variant == StrideVariant::kFloat4, "variant",
          "unknown StrideVariant");
  if (n == 0) return;
  const unsigned grid = static_cast<unsigned>(std::clamp<std::size_t>(ceil_div<std::size_t>(n, kBlock), 1, 1024));
  const bool aligned = (reinterpret_cast<std::uintptr_t>(a) | reinterpret_cast<std::uintptr_t>(b) |
                        reinterpret_cast<std::uintptr_t>(c)) % 16 == 0;
  if (variant == StrideVariant::kFloat4 && aligned)
    add_float4<<<grid, kBlock, 0, stream>>>(reinterpret_cast<const float4*>(a),
                                            reinterpret_cast<const float4*>(b),
                                            reinterpret_cast<float4*>(c), n / 4);
  else
    add_scalar<<<grid, kBlock, 0, stream>>>(a, b, c, n);
  CUDALAB_CHECK_LAUNCH();
}

}  // namespace cudalab::ch03
