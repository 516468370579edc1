// CUB wrappers for the chapter 5 benchmarks (see cub_wrappers.hpp). No fmt in .cu files.
#include <climits>
#include <cstdint>
#include <cub/device/device_histogram.cuh>
#include <cub/device/device_reduce.cuh>
#include <cub/device/device_scan.cuh>

#include "cub_wrappers.hpp"
#include "cudalab/check.hpp"

namespace cudalab::bench_ch05 {
namespace {

// Calls f with the item count as int when it fits (CUB's 32-bit offsets), else as long long.
template <class F>
cudaError_t with_count(std::size_t n, F&& f) {
  if (n <= static_cast<std::size_t>(INT_MAX)) return f(static_cast<int>(n));
  return f(static_cast<long long>(n));
}

template <class T>
std::size_t scan_bytes(const T* in, T* out, std::size_t n) {
  std::size_t bytes = 0;
  CUDALAB_CHECK(with_count(n, [&](auto count) {
    return cub::DeviceScan::InclusiveSum(nullptr, bytes, in, out, count);
  }));
  return bytes;
}

template <class T>
void scan(const T* in, T* out, std::size_t n, void* temp, std::size_t temp_bytes,
          cudaStream_t stream) {
  CUDALAB_CHECK(with_count(n, [&](auto count) {
    return cub::DeviceScan::InclusiveSum(temp, temp_bytes, in, out, count, stream);
  }));
}

}  // namespace

std::size_t cub_reduce_sum_temp_bytes(const float* in, float* out, std::size_t n) {
  std::size_t bytes = 0;
  CUDALAB_CHECK(with_count(
      n, [&](auto count) { return cub::DeviceReduce::Sum(nullptr, bytes, in, out, count); }));
  return bytes;
}
void cub_reduce_sum(const float* in, float* out, std::size_t n, void* temp, std::size_t temp_bytes,
                    cudaStream_t stream) {
  CUDALAB_CHECK(with_count(n, [&](auto count) {
    return cub::DeviceReduce::Sum(temp, temp_bytes, in, out, count, stream);
  }));
}

std::size_t cub_inclusive_sum_temp_bytes(const int* in, int* out, std::size_t n) {
  return scan_bytes(in, out, n);
}
std::size_t cub_inclusive_sum_temp_bytes(const float* in, float* out, std::size_t n) {
  return scan_bytes(in, out, n);
}
void cub_inclusive_sum(const int* in, int* out, std::size_t n, void* temp, std::size_t temp_bytes,
                       cudaStream_t stream) {
  scan(in, out, n, temp, temp_bytes, stream);
}
void cub_inclusive_sum(const float* in, float* out, std::size_t n, void* temp,
                       std::size_t temp_bytes, cudaStream_t stream) {
  scan(in, out, n, temp, temp_bytes, stream);
}

std::size_t cub_histogram_even_temp_bytes(const std::int32_t* values, std::size_t n,
                                          std::uint32_t* hist, int num_bins) {
  require(n < (std::size_t{1} << 31), "n", "must be < 2^31");
  std::size_t bytes = 0;
  // num_bins + 1 level boundaries 0, 1, ..., num_bins: bin b holds the values in [b, b + 1).
  CUDALAB_CHECK(cub::DeviceHistogram::HistogramEven(nullptr, bytes, values, hist, num_bins + 1, 0,
                                                    num_bins, static_cast<int>(n)));
  return bytes;
}

void cub_histogram_even(const std::int32_t* values, std::size_t n, std::uint32_t* hist,
                        int num_bins, void* temp, std::size_t temp_bytes, cudaStream_t stream) {
  require(n < (std::size_t{1} << 31), "n", "must be < 2^31");
  CUDALAB_CHECK(cub::DeviceHistogram::HistogramEven(temp, temp_bytes, values, hist, num_bins + 1, 0,
                                                    num_bins, static_cast<int>(n), stream));
}

}  // namespace cudalab::bench_ch05
