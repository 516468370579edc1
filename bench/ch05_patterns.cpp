// Chapter 5 benchmarks, part 1: the reduction ladder and the scans, each beside CUB in the same run
// (ch05_cub.cu), on 2^28 elements (1 GiB per array, far above the 60 MB L2).
//   ./build/gpu/bench/bench_ch05 --benchmark_filter='reduce|scan' --benchmark_out=ch05.json --benchmark_out_format=json
//
// Rows and the ratios to read (GB/s):
//   BM_reduce_sum/<k> [variant]  k = 0..6 the ladder (ch05::ReduceVariant), 4n bytes read
//   BM_reduce_sum_cub            cub::DeviceReduce::Sum        -> target: best ladder row >= 95%
//   BM_scan_int/<k> [variant]    k = 0..2 (ch05::ScanVariant), inclusive, 8n bytes (read + write)
//   BM_scan_int_cub              cub::DeviceScan::InclusiveSum -> target: decoupled_lookback >= 90%
//   BM_scan_float/<k>, BM_scan_float_cub: the same for float.
// Bytes are the minimum the operation must move (what CUB is credited with too), so the
// scan-then-propagate rows show how much of the copy ceiling their extra passes cost.
#include <cstdint>
#include <string>
#include <type_traits>

#include "ch05/reduce.hpp"
#include "ch05/scan.hpp"
#include "ch05_cub.hpp"
#include "cudalab/bench.hpp"
#include "cudalab/device_fill.hpp"
#include "cudalab/memory.hpp"

using namespace cudalab;

namespace {

constexpr std::size_t kN = std::size_t{1} << 28;

// kN random elements, filled before any benchmark stream reads them.
template <class T>
DeviceBuffer<T> random_input(std::uint64_t seed) {
  if constexpr (std::is_same_v<T, float>)
    return uniform_device_buffer(kN, seed, -1.0f, 1.0f);
  else
    return uniform_device_buffer(kN, seed, -100, 100);  // prefixes: a random walk of ~1e6, far from 2^31
}

void BM_reduce_sum(benchmark::State& state) {
  const auto v = static_cast<ch05::ReduceVariant>(state.range(0));
  state.SetLabel(ch05::to_string(v));
  auto in = random_input<float>(1);
  DeviceBuffer<float> out(1);
  DeviceBuffer<unsigned char> ws(ch05::reduce_workspace_bytes(kN));  // allocated once, outside the timing
  CUDALAB_CHECK(cudaMemset(ws.data(), 0, ws.bytes()));               // zeroed once, as the API asks
  bench::run(state, [&](cudaStream_t s) { ch05::reduce_sum(in.data(), out.data(), kN, ws.data(), ws.bytes(), v, s); },
             {.bytes = 4.0 * kN, .flops = 1.0 * kN});
}

void BM_reduce_sum_cub(benchmark::State& state) {
  auto in = random_input<float>(1);
  DeviceBuffer<float> out(1);
  DeviceBuffer<unsigned char> temp(bench_ch05::cub_reduce_sum_temp_bytes(in.data(), out.data(), kN));
  bench::run(state, [&](cudaStream_t s) {
    bench_ch05::cub_reduce_sum(in.data(), out.data(), kN, temp.data(), temp.bytes(), s);
  }, {.bytes = 4.0 * kN, .flops = 1.0 * kN});
}

template <class T>
void BM_scan(benchmark::State& state) {
  const auto v = static_cast<ch05::ScanVariant>(state.range(0));
  state.SetLabel(ch05::to_string(v));
  auto in = random_input<T>(2);
  DeviceBuffer<T> out(kN);
  DeviceBuffer<unsigned char> ws(ch05::scan_workspace_bytes(kN));
  bench::run(state, [&](cudaStream_t s) {
    ch05::scan(in.data(), out.data(), kN, ch05::ScanKind::kInclusive, ws.data(), ws.bytes(), v, s);
  }, {.bytes = 2.0 * sizeof(T) * kN, .flops = std::is_same_v<T, float> ? 1.0 * kN : 0.0});
}

template <class T>
void BM_scan_cub(benchmark::State& state) {
  auto in = random_input<T>(2);
  DeviceBuffer<T> out(kN);
  DeviceBuffer<unsigned char> temp(bench_ch05::cub_inclusive_sum_temp_bytes(in.data(), out.data(), kN));
  bench::run(state, [&](cudaStream_t s) {
    bench_ch05::cub_inclusive_sum(in.data(), out.data(), kN, temp.data(), temp.bytes(), s);
  }, {.bytes = 2.0 * sizeof(T) * kN, .flops = std::is_same_v<T, float> ? 1.0 * kN : 0.0});
}

void BM_scan_int(benchmark::State& state) { BM_scan<int>(state); }
void BM_scan_int_cub(benchmark::State& state) { BM_scan_cub<int>(state); }
void BM_scan_float(benchmark::State& state) { BM_scan<float>(state); }
void BM_scan_float_cub(benchmark::State& state) { BM_scan_cub<float>(state); }

}  // namespace

BENCHMARK(BM_reduce_sum)->DenseRange(0, 6)->UseManualTime()->Unit(benchmark::kMicrosecond);
BENCHMARK(BM_reduce_sum_cub)->UseManualTime()->Unit(benchmark::kMicrosecond);
BENCHMARK(BM_scan_int)->DenseRange(0, 2)->UseManualTime()->Unit(benchmark::kMicrosecond);
BENCHMARK(BM_scan_int_cub)->UseManualTime()->Unit(benchmark::kMicrosecond);
BENCHMARK(BM_scan_float)->DenseRange(0, 2)->UseManualTime()->Unit(benchmark::kMicrosecond);
BENCHMARK(BM_scan_float_cub)->UseManualTime()->Unit(benchmark::kMicrosecond);

CUDALAB_BENCH_MAIN();
