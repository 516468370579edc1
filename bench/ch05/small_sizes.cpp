// Chapter 5 benchmarks, reduction and scan at small sizes: 2^10 .. 2^20 elements.
// The same kernels and CUB on a prefix of the inputs (ch05_bench.hpp, shared with reduce.cpp and
// scan.cpp), beside each other in the same iterations. At these sizes a launch, a second pass or a
// workspace step costs as much as the bytes, which the 2^28 rows cannot show; CUB picks its
// single-pass and single-block paths by size.
//   ./build/gpu/bench/bench_ch05 --benchmark_filter='_small'
//
// Rows (GB/s; vs_base = CUB time / this row's time, measured interleaved):
//   BM_reduce_sum_small/<variant>/n:<n>, BM_scan_int_small/<variant>/n:<n>: every step at
//                                 n = 2^10, 2^14, 2^17, 2^20, beside CUB on the same n;
//                                 BM_reduce_sum_cub_small/n:<n>, BM_scan_int_cub_small/n:<n> alone.
#include <cstdint>
#include <string>
#include <vector>

#include "ch05/reduce.hpp"
#include "ch05/scan.hpp"
#include "ch05_bench.hpp"
#include "cudalab/bench.hpp"
#include "cudalab/device_fill.hpp"
#include "cudalab/memory.hpp"

using namespace cudalab;
using namespace cudalab::bench_ch05;

namespace {

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
