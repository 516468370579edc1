// Chapter 7 benchmarks, graphs against plain launches (exercise 7.3):
//   BM_chain/plain|graph/length:L  a chain of L tiny kernels: plain launches against one CUDA graph
// Every row with an output checks it once before timing (bench::verify): a wrong result is an
// error row.
//   ./build/gpu/bench/bench_ch07 --benchmark_out=ch07.json --benchmark_out_format=json
#include <string>
#include <vector>

#include "ch07/ch07.hpp"
#include "ch07_bench.hpp"
#include "cudalab/bench.hpp"
#include "cudalab/stream.hpp"

using namespace cudalab;
using namespace cudalab::bench_ch07;

namespace {

void BM_chain(benchmark::State& state, bool graph, int length) {
  guarded(state, [&] {
    constexpr std::size_t n = 1024;  // tiny kernels: the launch is the cost
    std::vector<float> x0(n);
    for (std::size_t i = 0; i < n; ++i) x0[i] = static_cast<float>(i % 17) / 8.0f - 1.0f;
    auto x = to_device(x0);
    ch07::KernelChain chain(x.data(), n, length);
    if (!bench::verify(state, "chain/" + std::to_string(graph) + "/" + std::to_string(length), [&] {
          Stream s;
          graph ? chain.launch_graph(s) : chain.launch_plain(s);
          s.synchronize();
          std::vector<float> want(n);
          for (std::size_t i = 0; i < n; ++i) want[i] = ch07::chain_oracle(x0[i], length);
          return bench::mismatch(x.to_host(), want, {}, "KernelChain, one run");
        }))
      return;
    bench::run(state,
               [&](cudaStream_t s) { graph ? chain.launch_graph(s) : chain.launch_plain(s); }, {});
    const double us = state.counters["median_us"];
    state.counters["us_per_kernel"] = us / length;
    state.counters["Mkernels/s"] = us > 0 ? length / us : 0;
  });
}

}  // namespace

[[maybe_unused]] const bool kRegistered = [] {
  // BM_chain/plain/length:L and BM_chain/graph/length:L, L = 1, 10, 100, 1000.
  for (bool graph : {false, true})
    for (int length : {1, 10, 100, 1000})
      bench::add("BM_chain/" + std::string(graph ? "graph" : "plain") +
                     "/length:" + std::to_string(length),
                 [graph, length](benchmark::State& st) { BM_chain(st, graph, length); });
  return true;
}();
