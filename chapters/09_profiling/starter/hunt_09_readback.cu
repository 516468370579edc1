// Starter track — write your code at the TODO marks; the tests of each exercise
// fail until you do. (Generated from chapters/09_profiling/reference/hunt_09_readback.cu by scripts/variants.py.)
// Bug hunt 9 — readback: a kernel writes its result (slowly: it models a long kernel with a
// ~20 ms spin), cudaMemcpyAsync copies it to pinned host memory, and the host reads it.
//
// No compute-sanitizer tool sees a host read: the host is not instrumented. The spin makes the
// bug deterministic instead: without it the copy might end before the read by luck.
#include <cmath>
#include <limits>
#include <vector>

#include "ch09/hunt.hpp"
#include "cudalab/check.hpp"
#include "cudalab/math.hpp"
#include "cudalab/memory.hpp"
#include "cudalab/stream.hpp"

namespace cudalab::ch09 {
namespace {

constexpr unsigned kBlock = 256;
constexpr unsigned kSpinMicroseconds = 20'000;

__global__ void __launch_bounds__(kBlock) slow_fill_kernel(float* out, std::size_t n) {
  // Every thread sleeps (at most ~1 ms per __nanosleep call, so a loop): the kernel's duration
  // is at least kSpinMicroseconds whatever the GPU.
  for (unsigned us = 0; us < kSpinMicroseconds; us += 1000) __nanosleep(1'000'000);
  const std::size_t i = std::size_t{blockIdx.x} * kBlock + threadIdx.x;
  if (i < n) out[i] = static_cast<float>(i % 101);
}

}  // namespace

HuntResult hunt_readback() {
  constexpr std::size_t n = 1024;
  DeviceBuffer<float> dev(n);
  PinnedBuffer<float> host(n);
  for (std::size_t i = 0; i < n; ++i) host[i] = std::numeric_limits<float>::quiet_NaN();  // poison
  Stream stream;
  slow_fill_kernel<<<static_cast<unsigned>(ceil_div<std::size_t>(n, kBlock)), kBlock, 0,
                     stream.get()>>>(dev.data(), n);
  CUDALAB_CHECK_LAUNCH();
  CUDALAB_CHECK(
      cudaMemcpyAsync(host.data(), dev.data(), dev.bytes(), cudaMemcpyDeviceToHost, stream.get()));
  // TODO(9.10): this case has one bug. Run it under the sanitizers and as a plain program (README,
  // "The bug hunt"), find what goes wrong, fix it; the ctest tests of 9.10 pass when it is right.
  std::vector<float> got(host.data(), host.data() + n), want(n);
  for (std::size_t i = 0; i < n; ++i) want[i] = static_cast<float>(i % 101);
  stream.synchronize();  // before the buffers are freed, in any case
  const std::string bad = first_mismatch(got, want);
  return {bad.empty(),
          bad.empty() ? "n = 1024 matched after the copy" : "read before the copy ended: " + bad};
}

}  // namespace cudalab::ch09
