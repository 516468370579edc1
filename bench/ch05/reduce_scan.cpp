// Chapter 5 benchmarks, reduction and scan (exercises 5.1 - 5.4): every ladder step timed beside
// CUB in the same row (bench::run_vs: the two alternate in every iteration), on 2^28 elements
// (1 GiB per array, far above the 60 MB L2). CUB runs with 32-bit item counts (its fast path).
//   ./build/gpu/bench/bench_ch05 --benchmark_filter='reduce|scan' --benchmark_repetitions=5
//
// Rows (GB/s; vs_base = CUB time / this row's time, measured interleaved):
//   BM_reduce_sum/<variant>       the ladder (interleaved ... one_pass) beside
//   cub::DeviceReduce::Sum BM_reduce_sum_cub             cub::DeviceReduce::Sum alone
//   BM_scan_int/<variant>         kogge_stone, brent_kung, decoupled_lookback beside
//                                 cub::DeviceScan::InclusiveSum; BM_scan_int_cub alone
//   BM_scan_float/<variant>, BM_scan_float_cub: the same for float.
//   BM_reduce_sum_small/<variant>/n:<n>, BM_scan_int_small/<variant>/n:<n>: every step at
//                                 n = 2^10, 2^14, 2^17, 2^20, beside CUB on the same n;
//                                 BM_reduce_sum_cub_small/n:<n>, BM_scan_int_cub_small/n:<n> alone.
// Bytes are the minimum the operation must move (what CUB is credited with too).
// The speed goals and key ratios read from these rows live in bench/ch05/ch05.toml.
//
// Checked before timing (bench::verify): the inputs are small integers (as floats for the float
// rows), so every order of additions is exact: the reduction must equal the host's int64 sum and
// the scans the host's prefix sums, bit for bit (a truncated or missing element shows).
#include <cstdint>
#include <string>
#include <type_traits>
#include <vector>

#include "ch05/reduce.hpp"
#include "ch05/scan.hpp"
#include "cub_wrappers.hpp"
#include "cudalab/bench.hpp"
#include "cudalab/device_fill.hpp"
#include "cudalab/memory.hpp"

using namespace cudalab;

namespace {

constexpr std::size_t kN = std::size_t{1} << 28;

// Reduction input: integers in [-8, 8] stored as floats. Every partial sum of any grouping is an
// integer far below 2^24 (a random walk of 2^28 steps of about 5 stays near 1e5), so every order of
// additions gives the exact sum, which the host knows.
// Scan input: integers in [-100, 100] (prefixes near 1e6 < 2^24: exact in float too).
struct Inputs {
  DeviceBuffer<float> reduce_in;
  double reduce_sum = 0;
  DeviceBuffer<int> scan_int;
  DeviceBuffer<float> scan_float;
  std::vector<int> scan_prefix;  // inclusive prefix sums of the scan input (host)

  Inputs() {
    std::vector<float> h(kN);
    std::int64_t s = 0;
    for (std::size_t i = 0; i < kN; ++i) {
      const int v = uniform_at(1, i, -8, 8);
      h[i] = static_cast<float>(v);
      s += v;
    }
    reduce_sum = static_cast<double>(s);
    reduce_in = to_device(h);
    scan_int = uniform_device_buffer(kN, 2, -100, 100);
    scan_prefix.resize(kN);
    std::int64_t p = 0;
    for (std::size_t i = 0; i < kN; ++i) {
      const int v = uniform_at(2, i, -100, 100);
      h[i] = static_cast<float>(v);
      p += v;
      scan_prefix[i] = static_cast<int>(p);
    }
    scan_float = to_device(h);
  }
};

// Made once per process (a few seconds on the host), shared by every row.
Inputs& inputs() {
  static Inputs in;
  return in;
}

template <class T>
const T* scan_input() {
  if constexpr (std::is_same_v<T, float>)
    return inputs().scan_float.data();
  else
    return inputs().scan_int.data();
}

std::string check_sum(const DeviceBuffer<float>& out) {
  const float got = bench::download(out.data(), 1)[0];
  const double want = inputs().reduce_sum;
  if (static_cast<double>(got) == want) return {};
  return "sum of 2^28 small integers: got " + std::to_string(got) + ", want " +
         std::to_string(want) + " (exact in any order of additions)";
}

template <class T>
std::string check_scan(const DeviceBuffer<T>& out) {
  const std::vector<T> got = bench::download(out.data(), kN);
  const std::vector<int>& p = inputs().scan_prefix;
  std::vector<T> want(p.begin(), p.end());
  return bench::mismatch(got, want, {},
                         "inclusive scan of 2^28 small integers (exact in any order)");
}

// The CUB row beside the hand-written ones: the base of every run_vs in this file, over the first
// n elements of the inputs.
struct CubReduce {
  std::size_t n;
  DeviceBuffer<float> out{1};
  DeviceBuffer<unsigned char> temp;
  explicit CubReduce(std::size_t count = kN)
      : n(count),
        temp(bench_ch05::cub_reduce_sum_temp_bytes(inputs().reduce_in.data(), out.data(), n)) {}
  void operator()(cudaStream_t s) {
    bench_ch05::cub_reduce_sum(inputs().reduce_in.data(), out.data(), n, temp.data(), temp.bytes(),
                               s);
  }
};

template <class T>
struct CubScan {
  std::size_t n;
  DeviceBuffer<T> out;
  DeviceBuffer<unsigned char> temp;
  explicit CubScan(std::size_t count = kN)
      : n(count),
        out(count),
        temp(bench_ch05::cub_inclusive_sum_temp_bytes(scan_input<T>(), out.data(), n)) {}
  void operator()(cudaStream_t s) {
    bench_ch05::cub_inclusive_sum(scan_input<T>(), out.data(), n, temp.data(), temp.bytes(), s);
  }
};

void bm_reduce_sum(benchmark::State& state, ch05::ReduceVariant v) {
  const float* in = inputs().reduce_in.data();
  DeviceBuffer<float> out(1);
  DeviceBuffer<unsigned char> ws(
      ch05::reduce_workspace_bytes(kN));                // allocated once, outside the timing
  CUDALAB_CHECK(cudaMemset(ws.data(), 0, ws.bytes()));  // zeroed once, as the API asks
  auto work = [&](cudaStream_t s) {
    ch05::reduce_sum(in, out.data(), kN, ws.data(), ws.bytes(), v, s);
  };
  if (!bench::verify(state, std::string("reduce_sum/") + ch05::to_string(v), [&] {
        work(nullptr);
        return check_sum(out);
      }))
    return;
  CubReduce cub;
  bench::run_vs(state, work, [&](cudaStream_t s) { cub(s); },
                {.bytes = 4.0 * kN, .flops = 1.0 * kN});
}

void bm_reduce_sum_cub(benchmark::State& state) {
  CubReduce cub;
  if (!bench::verify(state, "reduce_sum_cub", [&] {
        cub(nullptr);
        return check_sum(cub.out);
      }))
    return;
  bench::run(state, [&](cudaStream_t s) { cub(s); }, {.bytes = 4.0 * kN, .flops = 1.0 * kN});
}

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

// ---- small sizes: 2^10 .. 2^20 elements -----------------------------------------------------
// The same kernels and CUB on a prefix of the inputs, beside each other in the same iterations.
// At these sizes a launch, a second pass or a workspace step costs as much as the bytes, which
// the 2^28 rows cannot show; CUB picks its single-pass and single-block paths by size.
constexpr int kSmallLog2[] = {10, 14, 17, 20};

void bm_reduce_small(benchmark::State& state, ch05::ReduceVariant v, std::size_t n) {
  const float* in = inputs().reduce_in.data();
  DeviceBuffer<float> out(1);
  DeviceBuffer<unsigned char> ws(ch05::reduce_workspace_bytes(n));
  CUDALAB_CHECK(cudaMemset(ws.data(), 0, ws.bytes()));  // zeroed once, as the API asks
  auto work = [&](cudaStream_t s) {
    ch05::reduce_sum(in, out.data(), n, ws.data(), ws.bytes(), v, s);
  };
  if (!bench::verify(
          state, std::string("reduce_sum_small/") + ch05::to_string(v) + "/" + std::to_string(n),
          [&] {
            work(nullptr);
            std::int64_t want = 0;
            for (std::size_t i = 0; i < n; ++i) want += uniform_at(1, i, -8, 8);
            const float got = bench::download(out.data(), 1)[0];
            if (static_cast<double>(got) == static_cast<double>(want)) return std::string();
            return "sum of " + std::to_string(n) + " small integers: got " + std::to_string(got) +
                   ", want " + std::to_string(want);
          }))
    return;
  CubReduce cub(n);
  bench::run_vs(state, work, [&](cudaStream_t s) { cub(s); }, {.bytes = 4.0 * n, .flops = 1.0 * n});
}

void bm_scan_small(benchmark::State& state, ch05::ScanVariant v, std::size_t n) {
  const int* in = inputs().scan_int.data();
  DeviceBuffer<int> out(n);
  DeviceBuffer<unsigned char> ws(ch05::scan_workspace_bytes(n));
  auto work = [&](cudaStream_t s) {
    ch05::scan(in, out.data(), n, ch05::ScanKind::kInclusive, ws.data(), ws.bytes(), v, s);
  };
  if (!bench::verify(
          state, std::string("scan_small/") + ch05::to_string(v) + "/" + std::to_string(n), [&] {
            work(nullptr);
            const std::vector<int>& p = inputs().scan_prefix;
            const std::vector<int> want(p.begin(), p.begin() + static_cast<long>(n));
            return bench::mismatch(
                out.to_host(), want, {},
                "inclusive scan of " + std::to_string(n) + " small integers (exact in any order)");
          }))
    return;
  CubScan<int> cub(n);
  bench::run_vs(state, work, [&](cudaStream_t s) { cub(s); }, {.bytes = 2.0 * sizeof(int) * n});
}

// CUB alone at a small size: the vendor row the small rows' ratios name (their interleaved base
// is the same call).
void bm_reduce_small_cub(benchmark::State& state, std::size_t n) {
  CubReduce cub(n);
  bench::run(state, [&](cudaStream_t s) { cub(s); }, {.bytes = 4.0 * n, .flops = 1.0 * n});
}

void bm_scan_small_cub(benchmark::State& state, std::size_t n) {
  CubScan<int> cub(n);
  bench::run(state, [&](cudaStream_t s) { cub(s); }, {.bytes = 2.0 * sizeof(int) * n});
}

using bench::add;  // cudalab/bench.hpp

[[maybe_unused]] const bool kRegistered = [] {
  for (const auto v : ch05::kAllReduceVariants)
    add(std::string("BM_reduce_sum/") + ch05::to_string(v),
        [v](benchmark::State& s) { bm_reduce_sum(s, v); });
  add("BM_reduce_sum_cub", bm_reduce_sum_cub);
  for (const auto v : ch05::kAllScanVariants)
    add(std::string("BM_scan_int/") + ch05::to_string(v),
        [v](benchmark::State& s) { bm_scan<int>(s, v); });
  add("BM_scan_int_cub", bm_scan_cub<int>);
  for (const auto v : ch05::kAllScanVariants)
    add(std::string("BM_scan_float/") + ch05::to_string(v),
        [v](benchmark::State& s) { bm_scan<float>(s, v); });
  add("BM_scan_float_cub", bm_scan_cub<float>);
  for (const int lg : kSmallLog2) {
    const std::size_t n = std::size_t{1} << lg;
    for (const auto v : ch05::kAllReduceVariants)
      add(std::string("BM_reduce_sum_small/") + ch05::to_string(v) + "/n:" + std::to_string(n),
          [v, n](benchmark::State& s) { bm_reduce_small(s, v, n); });
    for (const auto v : ch05::kAllScanVariants)
      add(std::string("BM_scan_int_small/") + ch05::to_string(v) + "/n:" + std::to_string(n),
          [v, n](benchmark::State& s) { bm_scan_small(s, v, n); });
    add("BM_reduce_sum_cub_small/n:" + std::to_string(n),
        [n](benchmark::State& s) { bm_reduce_small_cub(s, n); });
    add("BM_scan_int_cub_small/n:" + std::to_string(n),
        [n](benchmark::State& s) { bm_scan_small_cub(s, n); });
  }
  return true;
}();

}  // namespace

CUDALAB_BENCH_MAIN();
