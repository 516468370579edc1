// Bug hunt 6 — normalize: out[i] = in[i] / max_j |in[j]|.
//
// Two launches: the largest magnitude by atomicMax on its bits (for floats >= 0 the IEEE bit
// patterns order like the values, so an int max is a float max), then the division. The peak
// lives in a one-float device workspace.
#include <cmath>
#include <vector>

#include "ch09/hunt.hpp"
#include "cudalab/check.hpp"
#include "cudalab/math.hpp"
#include "cudalab/memory.hpp"

namespace cudalab::ch09 {
namespace {

constexpr unsigned kBlock = 256;

__global__ void __launch_bounds__(kBlock)
    peak_kernel(const float* in, int* peak_bits, std::size_t n) {
  const std::size_t i = std::size_t{blockIdx.x} * kBlock + threadIdx.x;
  if (i < n) atomicMax(peak_bits, __float_as_int(fabsf(in[i])));
}

__global__ void __launch_bounds__(kBlock)
    divide_kernel(const float* in, const int* peak_bits, float* out, std::size_t n) {
  const std::size_t i = std::size_t{blockIdx.x} * kBlock + threadIdx.x;
  if (i < n) out[i] = in[i] / __int_as_float(*peak_bits);
}

}  // namespace

HuntResult hunt_normalize() {
  constexpr std::size_t n = 2500;
  std::vector<float> x(n), want(n);
  for (std::size_t i = 0; i < n; ++i) x[i] = static_cast<float>(i % 23) - 11.0f;
  float peak = 0.0f;
  for (float v : x) peak = std::fmax(peak, std::fabs(v));
  for (std::size_t i = 0; i < n; ++i) want[i] = x[i] / peak;
  const DeviceBuffer<float> in = to_device(x);
  DeviceBuffer<float> out(n);
  const unsigned blocks = static_cast<unsigned>(ceil_div<std::size_t>(n, kBlock));
  // BEGIN EXERCISE 9.7
  // TODO(9.7): this case has one bug. Run it under the sanitizers (README, "The bug hunt"), find
  // what they report, fix it; the ctest tests of 9.7 pass when every tool is clean.
  // STARTER: int* peak_bits = nullptr;
  // STARTER: CUDALAB_CHECK(cudaMalloc(&peak_bits, sizeof(int)));
  DeviceBuffer<int> workspace(1);  // owned: freed on every path out of this function
  int* peak_bits = workspace.data();
  // END EXERCISE
  CUDALAB_CHECK(cudaMemsetAsync(peak_bits, 0, sizeof(int)));  // 0 is the bits of +0.0f
  peak_kernel<<<blocks, kBlock>>>(in.data(), peak_bits, n);
  CUDALAB_CHECK_LAUNCH();
  divide_kernel<<<blocks, kBlock>>>(in.data(), peak_bits, out.data(), n);
  CUDALAB_CHECK_LAUNCH();
  CUDALAB_CHECK(cudaDeviceSynchronize());
  const std::string bad = first_mismatch(out.to_host(), want);
  return {bad.empty(), bad.empty() ? "n = 2500 matched" : bad};
}

}  // namespace cudalab::ch09
