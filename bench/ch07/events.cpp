// Chapter 7 benchmarks, events (exercise 7.2):
//   BM_fork_join/...         fork / join over 3 streams timed beside the same kernels in one stream
//                            (and that baseline alone: one_stream)
// Every row with an output checks it once before timing (bench::verify): a wrong result is an
// error row.
//   ./build/gpu/bench/bench_ch07 --benchmark_out=ch07.json --benchmark_out_format=json
#include <cmath>
#include <string>
#include <vector>

#include "ch07/ch07.hpp"
#include "ch07_bench.hpp"
#include "cudalab/bench.hpp"
#include "cudalab/memory.hpp"
#include "cudalab/stream.hpp"

using namespace cudalab;
using namespace cudalab::bench_ch07;

namespace {

void BM_fork_join(benchmark::State& state, bool forked_rows, std::size_t n) {
  guarded(state, [&] {
    std::vector<float> xh(n);
    for (std::size_t i = 0; i < n; ++i) xh[i] = static_cast<float>(i % 251) / 64.0f - 2.0f;
    auto x = to_device(xh);
    DeviceBuffer<float> a(n), b(n), out(n);
    StreamSet sides(2, cudaStreamNonBlocking);
    auto forked = [&](cudaStream_t t) {
      ch07::fork_join(x.data(), a.data(), b.data(), out.data(), n, t, sides.raw[0], sides.raw[1]);
    };
    auto serial = [&](cudaStream_t t) {
      ch07::fork_join_serial(x.data(), a.data(), b.data(), out.data(), n, t);
    };
    if (!bench::verify(
            state,
            std::string(forked_rows ? "fork_join/" : "fork_join_serial/") + std::to_string(n), [&] {
              Stream s;
              forked_rows ? forked(s) : serial(s);
              s.synchronize();
              std::vector<float> want(n);
              for (std::size_t i = 0; i < n; ++i)
                want[i] = xh[i] * xh[i] + std::fma(2.0f, xh[i], 1.0f);
              return bench::mismatch(out.to_host(), want, {}, "fork_join out");
            }))
      return;
    // The forked rows are timed beside the same three kernels in one stream: vs_base > 1 when the
    // side kernels overlap. FLOPs per element: x * x (1), fma(2, x, 1) (2), a + b (1).
    if (forked_rows) {
      bench::run_vs(state, forked, serial, {.bytes = 6.0 * n * sizeof(float), .flops = 4.0 * n});
    } else {
      bench::run(state, serial, {.bytes = 6.0 * n * sizeof(float), .flops = 4.0 * n});
    }
  });
}

}  // namespace

[[maybe_unused]] const bool kRegistered = [] {
  // BM_fork_join/streams|one_stream/n:N: fork / join over three streams (7.2), and its baseline.
  for (bool forked : {true, false})
    for (std::size_t n : {std::size_t{4096}, std::size_t{1} << 20})
      bench::add("BM_fork_join/" + std::string(forked ? "streams" : "one_stream") +
                     "/n:" + std::to_string(n),
                 [forked, n](benchmark::State& st) { BM_fork_join(st, forked, n); });
  return true;
}();
