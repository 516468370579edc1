// Chapter 2 benchmarks, latency (rows: fma.cpp's header):
//   BM_chase/bytes:B, BM_chase_shared/bytes:16384
#include <cstdint>
#include <exception>
#include <string>
#include <vector>

#include "ch02/ch02.hpp"
#include "ch02_bench.hpp"
#include "cudalab/bench.hpp"
#include "cudalab/memory.hpp"

using namespace cudalab;
using namespace cudalab::bench_ch02;

namespace {

constexpr std::size_t kChaseStride = 128;  // one L1/L2 line per hop
constexpr long long kChaseSteps = 1 << 14;

void bm_chase(benchmark::State& state, std::size_t bytes, bool shared) {
  std::vector<std::uint32_t> ring;
  try {
    ring = ch02::make_chase_ring(bytes, shared ? 4 : kChaseStride, 2024);
  } catch (const std::exception& e) {
    state.SkipWithError(e.what());  // the starter's make_chase_ring (exercise 2.2)
    return;
  }
  const DeviceBuffer<std::uint32_t> d = to_device(ring);
  DeviceBuffer<long long> result(2);
  const long long lines = static_cast<long long>(bytes / (shared ? 4 : kChaseStride));
  // One lap warms the level under test; rings over twice the L2 get none (it would take seconds
  // and warm nothing). Those rings instead resume where the previous run ended: every run from
  // word 0 would re-time the same first lines, L2-resident after the first run, and the "DRAM"
  // plateau would read the L2 latency.
  const bool beyond_l2 = bytes > 2 * dev().l2_bytes;
  const long long warm = beyond_l2 ? 4096 : lines;
  if (!bench::verify(state, "chase/" + std::to_string(bytes) + (shared ? "s" : "g"), [&] {
        ch02::pointer_chase(d.data(), ring.size(), warm, kChaseSteps, shared, result.data());
        const std::vector<long long> r = result.to_host();
        const std::uint32_t want = ch02::chase_end(ring, warm, kChaseSteps);
        return r[1] == want ? std::string()
                            : "the chase ended at word " + std::to_string(r[1]) + ", expected " +
                                  std::to_string(want);
      }))
    return;
  bench::run(
      state,
      [&](cudaStream_t s) {
        ch02::pointer_chase(d.data(), ring.size(), warm, kChaseSteps, shared, result.data(), s,
                            beyond_l2);
      },
      {}, 0);
  const std::vector<long long> r = result.to_host();
  const double cycles = double(r[0]) / kChaseSteps;
  state.counters["bytes_ring"] = double(bytes);
  state.counters["cycles_per_load"] = cycles;
  record_peak(state, "none", [](double, double) { return 0.0; });
  state.counters["ns_per_load"] = cycles / state.counters["sm_mhz"] * 1e3;
}

[[maybe_unused]] const bool kRegistered = [] {
  // Ring sizes: powers of two and 1.5 x powers of two, 8 KiB .. 256 MiB.
  for (std::size_t b = std::size_t{8} << 10; b <= (std::size_t{256} << 20); b *= 2) {
    bench::add("BM_chase/bytes:" + std::to_string(b), [=](benchmark::State& s) {
      bm_chase(s, b, false);
    })->Iterations(2);
    if (b < (std::size_t{256} << 20))
      bench::add("BM_chase/bytes:" + std::to_string(b / 2 * 3), [=](benchmark::State& s) {
        bm_chase(s, b / 2 * 3, false);
      })->Iterations(2);
  }
  bench::add("BM_chase_shared/bytes:16384", [](benchmark::State& s) {
    bm_chase(s, 16384, true);
  })->Iterations(2);
  return true;
}();

}  // namespace
