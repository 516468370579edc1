// Chapter 4 benchmarks, shared-memory bank conflicts: each effect beside its ceiling in the same
// run.
//   ./build/gpu/bench/bench_ch04 --benchmark_out=ch04.json --benchmark_out_format=json
//
// Rows: BM_smem_column/stride:S (a column read of shared memory at stride S), checked before
// timing. The key ratios and speed goals read from these rows are declared in bench/ch04/ch04.toml.
#include <string>
#include <vector>

#include "ch04/ch04.hpp"
#include "ch04_bench.hpp"
#include "cudalab/bench.hpp"
#include "cudalab/device.hpp"
#include "cudalab/memory.hpp"

using namespace cudalab;
using namespace cudalab::bench_ch04;

namespace {

void BM_smem_column(benchmark::State& state) {
  const int stride = static_cast<int>(state.range(0));
  const unsigned blocks = static_cast<unsigned>(device_info().sm_count) * 8;  // 2048 threads / SM
  const int iterations = 4096;
  DeviceBuffer<float> out(std::size_t{blocks} * ch04::kSmemThreads);
  auto work = [&](cudaStream_t s) {
    ch04::smem_column_read(out.data(), blocks, stride, iterations, s);
  };
  if (!bench::verify(state, key("smem_column", state, 1), [&] {
        work(nullptr);
        std::vector<float> want(out.size());
        for (std::size_t t = 0; t < want.size(); ++t)
          want[t] = ch04::smem_column_read_oracle(t, stride, iterations);
        return bench::mismatch(out.to_host(), want, {}, "smem_column_read");
      }))
    return;
  bench::run(state, work, {});
  const double loads = double(blocks) * ch04::kSmemThreads / 32 * iterations;  // warp-wide loads
  state.counters["warp_loads_per_us"] = loads / state.counters["median_us"];
  state.counters["model_conflict_ways"] = ch04::column_read_conflict_ways(stride);
}

}  // namespace

[[maybe_unused]] const bool kRegistered = [] {
  bench::add("BM_smem_column", BM_smem_column)
      ->ArgName("stride")
      ->ArgsProduct({{1, 2, 4, 8, 16, 32, 33}});
  return true;
}();
