// Chapter 7 benchmarks, the serving pipeline:
//   BM_inference/batch/graph the serving pipeline: samples/s, p50 and p99 latency per batch
// Every row with an output checks it once before timing (bench::verify): a wrong result is an
// error row.
//   ./build/gpu/bench/bench_ch07 --benchmark_out=ch07.json --benchmark_out_format=json
#include <cstdint>
#include <string>
#include <vector>

#include "ch07/ch07.hpp"
#include "ch07_bench.hpp"
#include "cudalab/bench.hpp"

using namespace cudalab;
using namespace cudalab::bench_ch07;

namespace {

void BM_inference(benchmark::State& state) {
  const int batch = static_cast<int>(state.range(0));
  const bool graph = state.range(1) != 0;
  state.SetLabel(graph ? "graph per slot, 3 slots" : "stream launches, 3 slots");
  guarded(state, [&] {
    const auto w = ch07::mlp_weights();
    if (!bench::verify(
            state, "inference/" + std::to_string(batch) + "/" + std::to_string(graph), [&] {
              const auto r = ch07::serve(
                  w,
                  {.batch = batch, .batches = ch07::kDistinctBatches, .slots = 3, .graph = graph});
              const std::size_t per = static_cast<std::size_t>(batch) * w.shape.classes;
              for (int i = 0; i < ch07::kDistinctBatches; ++i) {
                const auto want = ch07::mlp_forward_cpu(
                    w, ch07::make_batch(w.shape, batch, static_cast<std::uint64_t>(i)), batch);
                const std::vector<float> got(
                    r.logits.begin() + static_cast<std::ptrdiff_t>(per * i),
                    r.logits.begin() + static_cast<std::ptrdiff_t>(per * (i + 1)));
                if (auto bad = bench::mismatch(got, want, {.abs = 1e-3, .rel = 1e-3},
                                               "serve: logits of batch " + std::to_string(i));
                    !bad.empty())
                  return bad;
              }
              return std::string();
            }))
      return;
    std::vector<double> latency;
    double samples = 0, seconds = 0;
    for (auto _ : state) {
      const auto r = ch07::serve(
          w, {.batch = batch, .batches = 400, .slots = 3, .graph = graph, .keep_logits = false});
      state.SetIterationTime(r.seconds);
      latency.insert(latency.end(), r.latency_us.begin(), r.latency_us.end());
      samples += static_cast<double>(r.latency_us.size()) * batch;
      seconds += r.seconds;
    }
    ch07::ServeResult all;
    all.latency_us = std::move(latency);
    state.counters["samples/s"] = seconds > 0 ? samples / seconds : 0;
    state.counters["p50_us"] = all.percentile_us(50);
    state.counters["p99_us"] = all.percentile_us(99);
  });
}

}  // namespace

[[maybe_unused]] const bool kRegistered = [] {
  using benchmark::kMillisecond;
  bench::add("BM_inference", BM_inference, kMillisecond)
      ->ArgNames({"batch", "graph"})
      ->ArgsProduct({{1, 4, 16, 64}, {0, 1}});
  return true;
}();
