// Chapter 8 benchmarks, peer-to-peer copies between every pair of GPUs present, one way and both
// ways at once:
//   BM_p2p_copy/src:I/dst:J/<one_way|both_ways>
#include <string>

#include "ch08/ch08.hpp"
#include "ch08_bench.hpp"
#include "cudalab/bench.hpp"

using namespace cudalab;
using namespace cudalab::bench_ch08;

namespace {

void BM_p2p_copy(benchmark::State& state, int src, int dst, bool both_ways) {
  double gbs = 0;
  for (auto _ : state) {
    gbs = ch08::p2p_bandwidth_gbs(src, dst, std::size_t{256} << 20, 5, both_ways);
    state.SetIterationTime((256.0 * (1 << 20) * 5 * (both_ways ? 2 : 1)) / (gbs * 1e9));
  }
  state.counters["GB/s"] = gbs;
}

// Registered before main() runs: the rows depend on the number of GPUs found.
[[maybe_unused]] const bool kRegistered = [] {
  const int g = ch08::device_count();
  for (int i = 0; i < g; ++i)
    for (int j = 0; j < g; ++j)
      for (bool both : {false, true}) {
        if (i == j && both) continue;
        const std::string name = "BM_p2p_copy/src:" + std::to_string(i) +
                                 "/dst:" + std::to_string(j) + (both ? "/both_ways" : "/one_way");
        bench::add(name, [i, j, both](benchmark::State& st) {
          BM_p2p_copy(st, i, j, both);
        })->Iterations(3);
      }
  return true;
}();

}  // namespace
