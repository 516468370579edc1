// Chapter 5 — histograms: global atomics versus privatized shared-memory atomics (exercise 5.10).
#pragma once

#include <cuda_runtime_api.h>

#include <cstddef>
#include <cstdint>

namespace cudalab::ch05 {

// The privatized kernel keeps one 4-byte counter per bin in shared memory: 8192 bins = 32 KiB,
// under the 48 KiB a block may use without opting in, and small enough for several blocks per SM.
inline constexpr int kHistMaxBins = 8192;
inline constexpr int kHistBlock = 256;
static_assert(kHistBlock % 32 == 0 && kHistBlock <= 1024);

enum class HistogramVariant {
  kGlobalAtomics,  // one atomicAdd to global memory per element: hot bins serialize in L2
  kPrivatized      // per-block histogram in shared memory, merged once per block (exercise 5.10)
};

// hist[b] = number of i < n with values[i] == b, for b in [0, num_bins). Values outside
// [0, num_bins) are ignored (not counted, not clamped). `hist` is overwritten (zeroed first).
// Preconditions checked: 1 <= num_bins <= kHistMaxBins; n < 2^32 (counters are 32-bit).
void histogram(const std::int32_t* values, std::size_t n, std::uint32_t* hist, int num_bins,
               HistogramVariant variant, cudaStream_t stream = nullptr);

// Inputs for the benchmark (tests draw theirs on the host with cudalab::Rng):
enum class HistogramInput {
  kUniform,  // every bin equally likely
  kSkewed    // 7 values in 8 fall in the first min(4, num_bins) bins: the atomics contend
};
// values[i] in [0, num_bins), a hash of (seed, i): reproducible, generated on the device.
void fill_histogram_input(std::int32_t* values, std::size_t n, int num_bins, HistogramInput shape,
                          std::uint64_t seed, cudaStream_t stream = nullptr);

const char* to_string(HistogramVariant variant);
const char* to_string(HistogramInput shape);

}  // namespace cudalab::ch05
