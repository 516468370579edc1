// cub::DeviceHistogram::HistogramEven behind a plain function (see ch05_patterns_more_cub.hpp).
#include <cub/device/device_histogram.cuh>

#include "ch05_patterns_more_cub.hpp"
#include "cudalab/check.hpp"

namespace cudalab::bench_ch05 {

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
