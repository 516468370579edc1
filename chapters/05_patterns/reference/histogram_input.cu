// Benchmark inputs for the histogram (a worked helper, not an exercise): generated on the device
// from a hash of (seed, i), so 256 MiB of values cost a few hundred microseconds, not seconds of
// host work and a copy.
#include <cstdint>

#include "ch05/histogram.hpp"
#include "cudalab/check.hpp"
#include "cudalab/math.hpp"

namespace cudalab::ch05 {
namespace {

__device__ __forceinline__ std::uint64_t splitmix64(std::uint64_t z) {
  z += 0x9E3779B97F4A7C15ull;
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  return z ^ (z >> 31);
}

constexpr unsigned kFillBlock = 256;  // threads per block of the fill (bounds, grid, launch)

__global__ void __launch_bounds__(kFillBlock)
    fill_histogram_input_kernel(std::int32_t* __restrict__ values, std::size_t n,
                                std::uint32_t num_bins, bool skewed, std::uint64_t seed) {
  const std::size_t stride = std::size_t{gridDim.x} * blockDim.x;
  const std::uint32_t hot = num_bins < 4 ? num_bins : 4;
  for (std::size_t i = std::size_t{blockIdx.x} * blockDim.x + threadIdx.x; i < n; i += stride) {
    const std::uint64_t h = splitmix64(seed ^ splitmix64(i));
    const std::uint32_t lo = static_cast<std::uint32_t>(h),
                        hi = static_cast<std::uint32_t>(h >> 32);
    // Skewed: 7 in 8 values (low 3 bits of hi != 0) fall in the `hot` first bins.
    const bool in_hot = skewed && (hi & 7u) != 0;
    values[i] = static_cast<std::int32_t>(lo % (in_hot ? hot : num_bins));
  }
}

}  // namespace

const char* to_string(HistogramVariant v) {
  switch (v) {
    case HistogramVariant::kGlobalAtomics:
      return "global_atomics";
    case HistogramVariant::kPrivatized:
      return "privatized";
  }
  return "?";
}

const char* to_string(HistogramInput s) {
  switch (s) {
    case HistogramInput::kUniform:
      return "uniform";
    case HistogramInput::kSkewed:
      return "skewed";
  }
  return "?";
}

void fill_histogram_input(std::int32_t* values, std::size_t n, int num_bins, HistogramInput shape,
                          std::uint64_t seed, cudaStream_t stream) {
  require(num_bins >= 1, "num_bins", "must be >= 1");
  require(shape == HistogramInput::kUniform || shape == HistogramInput::kSkewed, "shape",
          "unknown HistogramInput");
  require_device_pointer(values, n, "values");
  if (n == 0) return;
  const std::size_t blocks = ceil_div<std::size_t>(n, kFillBlock);
  fill_histogram_input_kernel<<<static_cast<unsigned>(blocks < 4096 ? blocks : 4096), kFillBlock, 0,
                                stream>>>(values, n, static_cast<std::uint32_t>(num_bins),
                                          shape == HistogramInput::kSkewed, seed);
  CUDALAB_CHECK_LAUNCH();
}

}  // namespace cudalab::ch05
