// Device-side checks for tests too large to copy back to the host (the *LargeGpu tests past 2^31
// elements, the GEMMs at the benchmarked sizes): each counts, on the GPU with 64-bit indices, the
// elements that break a rule, and reports the first one (index, got, want) so that a failure
// message still tells the student where to look. The expected value is computed from the inputs
// that are still on the device, by code independent of the kernel under test.
#pragma once

#include <cuda_runtime_api.h>

#include <cstddef>
#include <cstdint>
#include <string>

namespace cudalab::testing {

struct DeviceCheck {
  std::size_t n = 0;  // elements checked
  std::size_t mismatches = 0;
  std::size_t first = 0;     // index of the first mismatch (valid when mismatches > 0)
  double got = 0, want = 0;  // at `first`
  double bound = 0;          // the allowed |got - want| at `first` (0: exact)
  bool ok() const noexcept { return mismatches == 0; }
  // "<what>: 3 of 2147487747 elements differ; first at index 2147483648: got 0.5, want 1.25"
  std::string message(const std::string& what) const;
};

// c[i] == a[i] + b[i] (one correctly rounded float add: exact).
DeviceCheck check_sum(const float* a, const float* b, const float* c, std::size_t n);
// out[i] == in[i * stride + offset], bit for bit.
DeviceCheck check_gather(const float* in, const float* out, std::size_t n, std::size_t stride,
                         std::size_t offset);
// out (cols x rows, row-major) == transpose of in (rows x cols, row-major), bit for bit.
DeviceCheck check_transpose(const float* in, const float* out, std::size_t rows, std::size_t cols);
// out is the inclusive (exclusive) scan of in, 32-bit wrap-around: out[i] - out[i - 1] == in[i]
// (in[i - 1]) and out[0] == in[0] (0). The differences pin every element, so this is exact.
DeviceCheck check_int_scan(const int* in, const int* out, std::size_t n, bool inclusive);
// |got[i] - want[i]| <= scale * bound[i] (NaN fails).
DeviceCheck check_within(const float* got, const float* want, const float* bound, std::size_t n,
                         double scale);
// The sum of in[0, n) in 64 bits.
long long sum_int64(const int* in, std::size_t n);
// out[i] = |in[i]|.
void abs_device(const float* in, float* out, std::size_t n);
// out[i] = k / denom with k uniform in [-kmax, kmax] from a counter-based hash of (seed, i): few
// significant bits, so the values are exact in fp16 / bf16 and their products exact in fp32.
void fill_dyadic_device(float* out, std::size_t n, std::uint64_t seed, int kmax, int denom);

}  // namespace cudalab::testing
