// Bug hunt 1 — shift: out[0] = 0, out[i] = in[i - 1] for 0 < i < n.
//
// Launch shape: 1D, kBlock threads per block, one thread per input element, a partial last block
// (n = 1000). The answer is checked on the host; compute-sanitizer checks the rest.
#include <vector>

#include "ch09/hunt.hpp"
#include "cudalab/check.hpp"
#include "cudalab/math.hpp"
#include "cudalab/memory.hpp"

namespace cudalab::ch09 {
namespace {

constexpr unsigned kBlock = 256;

__global__ void __launch_bounds__(kBlock) shift_kernel(const float* in, float* out, std::size_t n) {
  const std::size_t i = std::size_t{blockIdx.x} * blockDim.x + threadIdx.x;
  // BEGIN EXERCISE 9.2
  // TODO(9.2): this case has one bug. Run it under the sanitizers (README, "The bug hunt"), find
  // what they report, fix it; the ctest tests of 9.2 pass when every tool is clean.
  // STARTER: if (i < n) out[i + 1] = in[i];
  if (i + 1 < n) out[i + 1] = in[i];  // the last input has no successor slot
  // END EXERCISE
  if (i == 0) out[0] = 0.0f;
}

}  // namespace

HuntResult hunt_shift() {
  constexpr std::size_t n = 1000;
  std::vector<float> x(n), want(n);
  for (std::size_t i = 0; i < n; ++i) x[i] = static_cast<float>(i % 97) - 48.0f;
  want[0] = 0.0f;
  for (std::size_t i = 1; i < n; ++i) want[i] = x[i - 1];
  const DeviceBuffer<float> in = to_device(x);
  DeviceBuffer<float> out(n);
  shift_kernel<<<static_cast<unsigned>(ceil_div<std::size_t>(n, kBlock)), kBlock>>>(in.data(),
                                                                                    out.data(), n);
  CUDALAB_CHECK_LAUNCH();
  CUDALAB_CHECK(cudaDeviceSynchronize());
  const std::string bad = first_mismatch(out.to_host(), want);
  return {bad.empty(), bad.empty() ? "n = 1000 matched" : bad};
}

}  // namespace cudalab::ch09
