// Starter track — write your code at the TODO marks; the tests of each exercise
// fail until you do. (Generated from chapters/09_profiling/reference/hunt_03_neighbor_diff.cu by scripts/variants.py.)
// Bug hunt 3 — neighbor differences: out[i] = in[i + 1] - in[i], out[n - 1] = 0.
//
// Launch shape: 1D, kBlock threads per block; each block stages its kBlock inputs and the first
// of the next block (the halo) in shared memory, tile (kBlock + 1), so every input is read from
// DRAM once.
#include <vector>

#include "ch09/hunt.hpp"
#include "cudalab/check.hpp"
#include "cudalab/math.hpp"
#include "cudalab/memory.hpp"

namespace cudalab::ch09 {
namespace {

constexpr unsigned kBlock = 256;

__global__ void __launch_bounds__(kBlock)
    neighbor_diff_kernel(const float* in, float* out, std::size_t n) {
  __shared__ float tile[kBlock + 1];
  const unsigned t = threadIdx.x;
  const std::size_t i = std::size_t{blockIdx.x} * kBlock + t;
  tile[t] = i < n ? in[i] : 0.0f;
  if (t == 0) {
    const std::size_t halo = std::size_t{blockIdx.x} * kBlock + kBlock;
    tile[kBlock] = halo < n ? in[halo] : 0.0f;
  }
  // TODO(9.4): this case has one bug. Run it under the sanitizers (README, "The bug hunt"), find
  // what they report, fix it; the ctest tests of 9.4 pass when every tool is clean.
  if (i + 1 < n)
    out[i] = tile[t + 1] - tile[t];
  else if (i + 1 == n)
    out[i] = 0.0f;
}

}  // namespace

HuntResult hunt_neighbor_diff() {
  constexpr std::size_t n = 4099;
  std::vector<float> x(n), want(n);
  for (std::size_t i = 0; i < n; ++i) x[i] = static_cast<float>((i * 7) % 31);
  for (std::size_t i = 0; i + 1 < n; ++i) want[i] = x[i + 1] - x[i];
  want[n - 1] = 0.0f;
  const DeviceBuffer<float> in = to_device(x);
  DeviceBuffer<float> out(n);
  neighbor_diff_kernel<<<static_cast<unsigned>(ceil_div<std::size_t>(n, kBlock)), kBlock>>>(
      in.data(), out.data(), n);
  CUDALAB_CHECK_LAUNCH();
  CUDALAB_CHECK(cudaDeviceSynchronize());
  const std::string bad = first_mismatch(out.to_host(), want);
  return {bad.empty(), bad.empty() ? "n = 4099 matched" : bad};
}

}  // namespace cudalab::ch09
