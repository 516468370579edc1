// CUB wrappers for the chapter 5 benchmark (see ch05_cub.hpp). No fmt here (TOOLCHAIN.md).
#include <cub/device/device_reduce.cuh>
#include <cub/device/device_scan.cuh>

#include "ch05_cub.hpp"
#include "cudalab/check.hpp"

namespace cudalab::bench_ch05 {

std::size_t cub_reduce_sum_temp_bytes(const float* in, float* out, std::size_t n) {
  std::size_t bytes = 0;
  CUDALAB_CHECK(cub::DeviceReduce::Sum(nullptr, bytes, in, out, static_cast<long long>(n)));
  return bytes;
}
void cub_reduce_sum(const float* in, float* out, std::size_t n, void* temp, std::size_t temp_bytes,
                    cudaStream_t stream) {
  CUDALAB_CHECK(cub::DeviceReduce::Sum(temp, temp_bytes, in, out, static_cast<long long>(n), stream));
}

template <class T>
std::size_t scan_bytes(const T* in, T* out, std::size_t n) {
  std::size_t bytes = 0;
  CUDALAB_CHECK(cub::DeviceScan::InclusiveSum(nullptr, bytes, in, out, static_cast<long long>(n)));
  return bytes;
}
std::size_t cub_inclusive_sum_temp_bytes(const int* in, int* out, std::size_t n) { return scan_bytes(in, out, n); }
std::size_t cub_inclusive_sum_temp_bytes(const float* in, float* out, std::size_t n) { return scan_bytes(in, out, n); }

void cub_inclusive_sum(const int* in, int* out, std::size_t n, void* temp, std::size_t temp_bytes,
                       cudaStream_t stream) {
  CUDALAB_CHECK(cub::DeviceScan::InclusiveSum(temp, temp_bytes, in, out, static_cast<long long>(n), stream));
}
void cub_inclusive_sum(const float* in, float* out, std::size_t n, void* temp, std::size_t temp_bytes,
                       cudaStream_t stream) {
  CUDALAB_CHECK(cub::DeviceScan::InclusiveSum(temp, temp_bytes, in, out, static_cast<long long>(n), stream));
}

}  // namespace cudalab::bench_ch05
