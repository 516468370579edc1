// Chapter 5 benchmarks, scan (exercises 5.3 - 5.4): kogge_stone, brent_kung, decoupled_lookback
// timed beside cub::DeviceScan::InclusiveSum in the same row (bench::run_vs), on 2^28 elements
// (ch05_bench.hpp: the inputs and CUB, shared with reduce.cpp and small_sizes.cpp).
//   ./build/gpu/bench/bench_ch05 --benchmark_filter='scan' --benchmark_repetitions=5
//
// Rows (GB/s; vs_base = CUB time / this row's time, measured interleaved):
//   BM_scan_int/<variant>         beside cub::DeviceScan::InclusiveSum; BM_scan_int_cub alone
//   BM_scan_float/<variant>, BM_scan_float_cub: the same for float.
// Bytes are the minimum the operation must move (what CUB is credited with too).
// The speed goals and key ratios read from these rows live in bench/ch05/ch05.toml.
//
// Checked before timing (bench::verify): the inputs are small integers (as floats for the float
// rows), so every order of additions is exact: the scans must equal the host's prefix sums, bit
// for bit (a truncated or missing element shows).
#include "ch05/scan.hpp"

#include <string>
#include <type_traits>

#include "ch05_bench.hpp"
#include "cudalab/bench.hpp"
#include "cudalab/memory.hpp"

using namespace cudalab;
using namespace cudalab::bench_ch05;

namespace {

template <class T>
void bm_scan(benchmark::State& state, ch05::ScanVariant v) {
  const T* in = scan_input<T>();
  DeviceBuffer<T> out(kN);
  DeviceBuffer<unsigned char> ws(ch05::scan_workspace_bytes(kN));
  auto work = [&](cudaStream_t s) {
    ch05::scan(in, out.data(), kN, ch05::ScanKind::kInclusive, ws.data(), ws.bytes(), v, s);
  };
  const std::string type = std::is_same_v<T, float> ? "float" : "int";
  if (!bench::verify(state, "scan_" + type + "/" + ch05::to_string(v), [&] {
        work(nullptr);
        return check_scan(out);
      }))
    return;
  CubScan<T> cub;
  bench::run_vs(
      state, work, [&](cudaStream_t s) { cub(s); },
      {.bytes = 2.0 * sizeof(T) * kN, .flops = std::is_same_v<T, float> ? 1.0 * kN : 0.0});
}

template <class T>
void bm_scan_cub(benchmark::State& state) {
  CubScan<T> cub;
  if (!bench::verify(state, std::string("scan_cub_") + (std::is_same_v<T, float> ? "float" : "int"),
                     [&] {
                       cub(nullptr);
                       return check_scan(cub.out);
                     }))
    return;
  bench::run(state, [&](cudaStream_t s) { cub(s); },
             {.bytes = 2.0 * sizeof(T) * kN, .flops = std::is_same_v<T, float> ? 1.0 * kN : 0.0});
}

using bench::add;  // cudalab/bench.hpp

[[maybe_unused]] const bool kRegistered = [] {
  for (const auto v : ch05::kAllScanVariants)
    add(std::string("BM_scan_int/") + ch05::to_string(v),
        [v](benchmark::State& s) { bm_scan<int>(s, v); });
  add("BM_scan_int_cub", bm_scan_cub<int>);
  for (const auto v : ch05::kAllScanVariants)
    add(std::string("BM_scan_float/") + ch05::to_string(v),
        [v](benchmark::State& s) { bm_scan<float>(s, v); });
  add("BM_scan_float_cub", bm_scan_cub<float>);
  return true;
}();

}  // namespace
