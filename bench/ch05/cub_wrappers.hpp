// CUB rows of the chapter 5 benchmarks: plain host functions around cub::DeviceReduce,
// cub::DeviceScan and cub::DeviceHistogram (CUB templates compile only in a .cu file; the
// benchmarks themselves are .cpp).
//
// Item counts: CUB is called with a 32-bit `int` count whenever n < 2^31 (its fastest path: the
// 64-bit count instantiates wider offsets, which can be slower), and with `long long` only above.
#pragma once

#include <cuda_runtime_api.h>

#include <cstddef>
#include <cstdint>

namespace cudalab::bench_ch05 {

// Bytes of temporary storage CUB asks for (its size query: a first call with a null pointer).
std::size_t cub_reduce_sum_temp_bytes(const float* in, float* out, std::size_t n);
std::size_t cub_inclusive_sum_temp_bytes(const int* in, int* out, std::size_t n);
std::size_t cub_inclusive_sum_temp_bytes(const float* in, float* out, std::size_t n);

// *out = sum of in[0, n), out[i] = in[0] + ... + in[i]; temp holds the bytes asked for above.
void cub_reduce_sum(const float* in, float* out, std::size_t n, void* temp, std::size_t temp_bytes,
                    cudaStream_t stream);
void cub_inclusive_sum(const int* in, int* out, std::size_t n, void* temp, std::size_t temp_bytes,
                       cudaStream_t stream);
void cub_inclusive_sum(const float* in, float* out, std::size_t n, void* temp,
                       std::size_t temp_bytes, cudaStream_t stream);

// num_bins bins of width 1 over [0, num_bins): hist[b] = #{i : values[i] == b}; values outside
// are ignored, as in ch05::histogram. n < 2^31 (HistogramEven takes an int count).
std::size_t cub_histogram_even_temp_bytes(const std::int32_t* values, std::size_t n,
                                          std::uint32_t* hist, int num_bins);
void cub_histogram_even(const std::int32_t* values, std::size_t n, std::uint32_t* hist,
                        int num_bins, void* temp, std::size_t temp_bytes, cudaStream_t stream);

}  // namespace cudalab::bench_ch05
