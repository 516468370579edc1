// Bug hunt 5 — accumulate: out = x_0 + x_1 + ... + x_{k-1}, k arrays of n floats, one launch per
// array (out[i] += x_j[i]), as a gradient accumulation over micro-batches does.
//
// Launch shape: 1D, kBlock threads per block, one thread per element, k launches on one stream.
#include <vector>

#include "ch09/hunt.hpp"
#include "cudalab/check.hpp"
#include "cudalab/math.hpp"
#include "cudalab/memory.hpp"

namespace cudalab::ch09 {
namespace {

constexpr unsigned kBlock = 256;

__global__ void __launch_bounds__(kBlock)
    accumulate_kernel(const float* x, float* out, std::size_t n) {
  const std::size_t i = std::size_t{blockIdx.x} * kBlock + threadIdx.x;
  if (i < n) out[i] += x[i];
}

}  // namespace

HuntResult hunt_accumulate() {
  constexpr std::size_t n = 3000, k = 4;
  std::vector<float> x(n * k), want(n, 0.0f);
  for (std::size_t i = 0; i < x.size(); ++i) x[i] = static_cast<float>(i % 17);
  for (std::size_t j = 0; j < k; ++j)
    for (std::size_t i = 0; i < n; ++i) want[i] += x[j * n + i];
  const DeviceBuffer<float> in = to_device(x);
  DeviceBuffer<float> out(n);
  // BEGIN EXERCISE 9.6
  // TODO(9.6): this case has one bug. Run it under the sanitizers (README, "The bug hunt"), find
  // what they report, fix it; the ctest tests of 9.6 pass when every tool is clean.
  CUDALAB_CHECK(cudaMemsetAsync(out.data(), 0, out.bytes()));  // cudaMalloc'd memory holds anything
  // END EXERCISE
  for (std::size_t j = 0; j < k; ++j) {
    accumulate_kernel<<<static_cast<unsigned>(ceil_div<std::size_t>(n, kBlock)), kBlock>>>(
        in.data() + j * n, out.data(), n);
    CUDALAB_CHECK_LAUNCH();
  }
  CUDALAB_CHECK(cudaDeviceSynchronize());
  const std::string bad = first_mismatch(out.to_host(), want);
  return {bad.empty(), bad.empty() ? "n = 3000, k = 4 matched" : bad};
}

}  // namespace cudalab::ch09
