// Chapter 7 benchmarks, graph update (exercise 7.4):
//   BM_graph_retarget/...    set_data() on the instantiated graph against capture + instantiate
// Every row with an output checks it once before timing (bench::verify): a wrong result is an
// error row.
//   ./build/gpu/bench/bench_ch07 --benchmark_out=ch07.json --benchmark_out_format=json
#include <chrono>
#include <memory>
#include <string>
#include <vector>

#include "ch07/ch07.hpp"
#include "ch07_bench.hpp"
#include "cudalab/bench.hpp"
#include "cudalab/stream.hpp"
#include "cudalab/timer.hpp"

using namespace cudalab;
using namespace cudalab::bench_ch07;

namespace {

void BM_graph_retarget(benchmark::State& state, bool update, int length) {
  guarded(state, [&] {
    constexpr std::size_t n = 1024;
    std::vector<float> x0(n), y0(n);
    for (std::size_t i = 0; i < n; ++i) {
      x0[i] = static_cast<float>(i % 13) / 8.0f - 0.75f;
      y0[i] = static_cast<float>(i % 7) / 4.0f - 0.5f;
    }
    auto x = to_device(x0), y = to_device(y0);
    Stream s;
    ch07::KernelChain chain(x.data(), n, length);
    chain.launch_graph(s);  // captured and instantiated once
    s.synchronize();
    if (!bench::verify(
            state,
            std::string(update ? "graph_update/" : "graph_rebuild/") + std::to_string(length), [&] {
              std::unique_ptr<ch07::KernelChain> fresh;
              if (update) {
                chain.set_data(y.data());
                chain.launch_graph(s);
              } else {
                fresh = std::make_unique<ch07::KernelChain>(y.data(), n, length);
                fresh->launch_graph(s);
              }
              s.synchronize();
              std::vector<float> want(n);
              for (std::size_t i = 0; i < n; ++i) want[i] = ch07::chain_oracle(y0[i], length);
              return bench::mismatch(y.to_host(), want, {}, "the chain after set_data(y)");
            }))
      return;
    // Each iteration points the chain at the other array and runs it once: set_data() on the
    // instantiated graph, or a new KernelChain (capture + instantiate) — host clock, to the end.
    bool flip = false;
    std::vector<float> ms;
    for (auto _ : state) {
      float* target = flip ? x.data() : y.data();
      flip = !flip;
      std::unique_ptr<ch07::KernelChain> fresh;
      const auto t0 = std::chrono::steady_clock::now();
      if (update) {
        chain.set_data(target);
        chain.launch_graph(s);
      } else {
        fresh = std::make_unique<ch07::KernelChain>(target, n, length);
        fresh->launch_graph(s);
      }
      s.synchronize();
      const double t = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
      state.SetIterationTime(t);
      ms.push_back(static_cast<float>(t * 1e3));
    }
    state.counters["median_us"] = summarize(std::move(ms)).median_ms * 1e3;
  });
}

}  // namespace

[[maybe_unused]] const bool kRegistered = [] {
  // BM_graph_retarget/update|rebuild/length:L: set_data() on the instantiated graph (7.4) against
  // a new capture and instantiation, then one replay.
  for (bool update : {true, false})
    for (int length : {10, 100, 1000})
      bench::add("BM_graph_retarget/" + std::string(update ? "update" : "rebuild") +
                     "/length:" + std::to_string(length),
                 [update, length](benchmark::State& st) { BM_graph_retarget(st, update, length); });
  return true;
}();
