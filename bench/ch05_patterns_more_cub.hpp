// CUB row of the chapter 5 histogram benchmark: a plain host function around
// cub::DeviceHistogram::HistogramEven (CUB compiles only in a .cu file; the benchmark is .cpp).
#pragma once

#include <cuda_runtime_api.h>

#include <cstddef>
#include <cstdint>

namespace cudalab::bench_ch05 {

// num_bins bins of width 1 over [0, num_bins): hist[b] = #{i : values[i] == b}; values outside
// are ignored, as in ch05::histogram. n < 2^31.
std::size_t cub_histogram_even_temp_bytes(const std::int32_t* values, std::size_t n,
                                          std::uint32_t* hist, int num_bins);
void cub_histogram_even(const std::int32_t* values, std::size_t n, std::uint32_t* hist,
                        int num_bins, void* temp, std::size_t temp_bytes, cudaStream_t stream);

}  // namespace cudalab::bench_ch05
