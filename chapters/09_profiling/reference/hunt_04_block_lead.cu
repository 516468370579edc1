// Bug hunt 4 — block lead: out[i] = in[i] / |in[b kBlock]|, each element over the magnitude of the
// first element of its block of kBlock (a per-block scale, as in block-wise quantization).
//
// Launch shape: 1D, kBlock threads per block, a partial last block (n = 1000: 232 valid threads,
// 7 warps and 8 lanes); thread 0 of each block reads the scale into shared memory, and the block's
// barrier must stand between that write and every thread's read.
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
    block_lead_kernel(const float* in, float* out, std::size_t n) {
  __shared__ float lead;
  const std::size_t i = std::size_t{blockIdx.x} * kBlock + threadIdx.x;
  // BEGIN EXERCISE 9.5
  // TODO(9.5): this case has one bug. Run it under the sanitizers (README, "The bug hunt"), find
  // what they report, fix it; the ctest tests of 9.5 pass when every tool is clean.
  // STARTER: if (threadIdx.x == 0) {
  // STARTER:   lead = fabsf(in[i]);
  // STARTER:   __syncthreads();
  // STARTER: }
  // STARTER: if (i < n) out[i] = in[i] / lead;
  if (threadIdx.x == 0) lead = fabsf(in[i]);  // a block starts below n: its first element exists
  __syncthreads();  // every thread of the block reaches it: lead is written before anyone reads it
  if (i < n) out[i] = in[i] / lead;
  // END EXERCISE
}

}  // namespace

HuntResult hunt_block_lead() {
  constexpr std::size_t n = 1000;
  std::vector<float> x(n), want(n);
  for (std::size_t i = 0; i < n; ++i) x[i] = static_cast<float>(i % 11) + 1.0f;  // never 0
  for (std::size_t i = 0; i < n; ++i) want[i] = x[i] / std::fabs(x[i / kBlock * kBlock]);
  const DeviceBuffer<float> in = to_device(x);
  DeviceBuffer<float> out(n);
  block_lead_kernel<<<static_cast<unsigned>(ceil_div<std::size_t>(n, kBlock)), kBlock>>>(
      in.data(), out.data(), n);
  CUDALAB_CHECK_LAUNCH();
  CUDALAB_CHECK(cudaDeviceSynchronize());
  const std::string bad = first_mismatch(out.to_host(), want);
  return {bad.empty(), bad.empty() ? "n = 1000 matched" : bad};
}

}  // namespace cudalab::ch09
