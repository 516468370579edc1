// Bug hunt 8 — two stages: tmp = 2 in, then out = tmp + 1, through a temporary the function
// allocates and frees itself.
//
// Launch shape: two 1D launches of kBlock threads per block on the default stream.
#include <vector>

#include "ch09/hunt.hpp"
#include "cudalab/check.hpp"
#include "cudalab/math.hpp"
#include "cudalab/memory.hpp"

namespace cudalab::ch09 {
namespace {

constexpr unsigned kBlock = 256;

__global__ void __launch_bounds__(kBlock)
    double_kernel(const float* in, float* tmp, std::size_t n) {
  const std::size_t i = std::size_t{blockIdx.x} * kBlock + threadIdx.x;
  if (i < n) tmp[i] = 2.0f * in[i];
}

__global__ void __launch_bounds__(kBlock)
    add_one_kernel(const float* tmp, float* out, std::size_t n) {
  const std::size_t i = std::size_t{blockIdx.x} * kBlock + threadIdx.x;
  if (i < n) out[i] = tmp[i] + 1.0f;
}

}  // namespace

HuntResult hunt_two_stage() {
  constexpr std::size_t n = 2048;
  std::vector<float> x(n), want(n);
  for (std::size_t i = 0; i < n; ++i) x[i] = static_cast<float>(i % 29);
  for (std::size_t i = 0; i < n; ++i) want[i] = 2.0f * x[i] + 1.0f;
  const DeviceBuffer<float> in = to_device(x);
  DeviceBuffer<float> out(n);
  const unsigned blocks = static_cast<unsigned>(ceil_div<std::size_t>(n, kBlock));
  float* tmp = nullptr;
  CUDALAB_CHECK(cudaMalloc(&tmp, n * sizeof(float)));
  double_kernel<<<blocks, kBlock>>>(in.data(), tmp, n);
  CUDALAB_CHECK_LAUNCH();
  // BEGIN EXERCISE 9.9
  // TODO(9.9): this case has one bug. Run it under the sanitizers (README, "The bug hunt"), find
  // what they report, fix it; the ctest tests of 9.9 pass when every tool is clean.
  // STARTER: CUDALAB_CHECK(cudaFree(tmp));
  // STARTER: add_one_kernel<<<blocks, kBlock>>>(tmp, out.data(), n);
  // STARTER: CUDALAB_CHECK_LAUNCH();
  add_one_kernel<<<blocks, kBlock>>>(tmp, out.data(), n);
  CUDALAB_CHECK_LAUNCH();
  CUDALAB_CHECK(cudaFree(tmp));  // after the last kernel that reads it (cudaFree waits for it)
  // END EXERCISE
  CUDALAB_CHECK(cudaDeviceSynchronize());
  const std::string bad = first_mismatch(out.to_host(), want);
  return {bad.empty(), bad.empty() ? "n = 2048 matched" : bad};
}

}  // namespace cudalab::ch09
