// Chapter 8 benchmarks, peer-to-peer latency between every pair of GPUs present (registered
// last, as before the split):
//   BM_p2p_latency/src:I/dst:J
#include <string>

#include "ch08/ch08.hpp"
#include "ch08_bench.hpp"
#include "cudalab/bench.hpp"

using namespace cudalab;
using namespace cudalab::bench_ch08;

namespace {

// One 4-byte copy, src -> dst: 1000 back to back per iteration; the row's time is one copy's.
void BM_p2p_latency(benchmark::State& state, int src, int dst) {
  double us = 0;
  for (auto _ : state) {
    us = ch08::p2p_latency_us(src, dst, 1000);
    state.SetIterationTime(us * 1e-6);
  }
  state.counters["us"] = us;
}

// Registered before main() runs: the rows depend on the number of GPUs found.
[[maybe_unused]] const bool kRegistered = [] {
  const int g = ch08::device_count();
  for (int i = 0; i < g; ++i)
    for (int j = 0; j < g; ++j) {
      const std::string name =
          "BM_p2p_latency/src:" + std::to_string(i) + "/dst:" + std::to_string(j);
      bench::add(name, [i, j](benchmark::State& st) { BM_p2p_latency(st, i, j); })->Iterations(3);
    }
  return true;
}();

}  // namespace
