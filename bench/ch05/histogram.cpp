// Chapter 5 benchmarks, histogram (exercise 5.10): 2^26 values, uniform and skewed, 256 and 8192
// bins.
//   ./build/gpu/bench/bench_ch05 --benchmark_filter='histogram'
//
// Rows (bench::run_vs times the two alternately in every iteration; vs_base = base time / row
// time; the goals that read them live in bench/ch05/ch05.toml):
//   BM_histogram/<variant>/<input>/<bins> beside cub::DeviceHistogram::HistogramEven (same input)
//   BM_histogram_cub/<input>/<bins>       CUB alone
// Checked once before timing (bench::verify) against a host count, exact.
#include "ch05/histogram.hpp"

#include <cstdint>
#include <string>
#include <vector>

#include "ch05_bench.hpp"
#include "cub_wrappers.hpp"
#include "cudalab/bench.hpp"
#include "cudalab/memory.hpp"

using namespace cudalab;
using namespace cudalab::bench_ch05;

namespace {

struct HistInput {
  DeviceBuffer<std::int32_t> values{kMoreN};
  DeviceBuffer<std::uint32_t> hist, cub_hist;
  DeviceBuffer<unsigned char> cub_temp;
  int bins;
  HistInput(ch05::HistogramInput shape, int num_bins)
      : hist(static_cast<std::size_t>(num_bins)),
        cub_hist(static_cast<std::size_t>(num_bins)),
        bins(num_bins) {
    ch05::fill_histogram_input(values.data(), kMoreN, bins, shape, 61);
    CUDALAB_CHECK(cudaDeviceSynchronize());
    cub_temp = DeviceBuffer<unsigned char>(
        bench_ch05::cub_histogram_even_temp_bytes(values.data(), kMoreN, cub_hist.data(), bins));
  }
  void cub(cudaStream_t s) {
    bench_ch05::cub_histogram_even(values.data(), kMoreN, cub_hist.data(), bins, cub_temp.data(),
                                   cub_temp.bytes(), s);
  }
  // `out` against a host count of the values in [0, bins) (both histogram paths overwrite it).
  std::string check(const DeviceBuffer<std::uint32_t>& out) const {
    std::vector<std::uint32_t> want(static_cast<std::size_t>(bins), 0);
    for (const std::int32_t v : values.to_host())
      if (v >= 0 && v < bins) ++want[static_cast<std::size_t>(v)];
    return bench::mismatch(out.to_host(), want, {}, "histogram of 2^26 values");
  }
};

const char* hist_input_name(ch05::HistogramInput shape) {
  return ch05::to_string(shape);
}

void bm_histogram(benchmark::State& state, ch05::HistogramVariant v, ch05::HistogramInput shape,
                  int bins) {
  HistInput in(shape, bins);
  auto work = [&](cudaStream_t s) {
    ch05::histogram(in.values.data(), kMoreN, in.hist.data(), bins, v, s);
  };
  if (!bench::verify(state,
                     std::string("histogram/") + ch05::to_string(v) + "/" + hist_input_name(shape) +
                         "/" + std::to_string(bins),
                     [&] {
                       work(nullptr);
                       return in.check(in.hist);
                     }))
    return;
  bench::run_vs(state, work, [&](cudaStream_t s) { in.cub(s); }, {.bytes = 4.0 * kMoreN});
}

void bm_histogram_cub(benchmark::State& state, ch05::HistogramInput shape, int bins) {
  HistInput in(shape, bins);
  if (!bench::verify(
          state,
          std::string("histogram_cub/") + hist_input_name(shape) + "/" + std::to_string(bins), [&] {
            in.cub(nullptr);
            return in.check(in.cub_hist);
          }))
    return;
  bench::run(state, [&](cudaStream_t s) { in.cub(s); }, {.bytes = 4.0 * kMoreN});
}

using bench::add;  // cudalab/bench.hpp

[[maybe_unused]] const bool kRegistered = [] {
  for (const int bins : {256, 8192})
    for (const auto shape : {ch05::HistogramInput::kUniform, ch05::HistogramInput::kSkewed}) {
      const std::string tail =
          std::string("/") + hist_input_name(shape) + "/" + std::to_string(bins);
      add("BM_histogram_cub" + tail,
          [shape, bins](benchmark::State& s) { bm_histogram_cub(s, shape, bins); });
      for (const auto v :
           {ch05::HistogramVariant::kGlobalAtomics, ch05::HistogramVariant::kPrivatized})
        add(std::string("BM_histogram/") + ch05::to_string(v) + tail,
            [v, shape, bins](benchmark::State& s) { bm_histogram(s, v, shape, bins); });
    }
  return true;
}();

}  // namespace
