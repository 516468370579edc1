// Chapter 5 benchmarks, reduction (exercises 5.1 - 5.2): every ladder step timed beside CUB in
// the same row (bench::run_vs: the two alternate in every iteration), on 2^28 elements
// (ch05_bench.hpp: the inputs and CUB, shared with scan.cpp and small_sizes.cpp).
//   ./build/gpu/bench/bench_ch05 --benchmark_filter='reduce|scan' --benchmark_repetitions=5
//
// Rows (GB/s; vs_base = CUB time / this row's time, measured interleaved):
//   BM_reduce_sum/<variant>       the ladder (interleaved ... one_pass) beside
//                                 cub::DeviceReduce::Sum; BM_reduce_sum_cub alone
// Bytes are the minimum the operation must move (what CUB is credited with too).
// The speed goals and key ratios read from these rows live in bench/ch05/ch05.toml.
//
// Checked before timing (bench::verify): the inputs are small integers stored as floats, so every
// order of additions is exact: the reduction must equal the host's int64 sum.
#include "ch05/reduce.hpp"

#include <string>

#include "ch05_bench.hpp"
#include "cudalab/bench.hpp"
#include "cudalab/memory.hpp"

using namespace cudalab;
using namespace cudalab::bench_ch05;

namespace {

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

using bench::add;  // cudalab/bench.hpp

[[maybe_unused]] const bool kRegistered = [] {
  for (const auto v : ch05::kAllReduceVariants)
    add(std::string("BM_reduce_sum/") + ch05::to_string(v),
        [v](benchmark::State& s) { bm_reduce_sum(s, v); });
  add("BM_reduce_sum_cub", bm_reduce_sum_cub);
  return true;
}();

}  // namespace

CUDALAB_BENCH_MAIN();
