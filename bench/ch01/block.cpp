// Chapter 1 benchmark: one transformer FFN block (d 512, hidden 2048, FP32) per forward, four ways,
// batch 1 to 64. Each row's time is the host's wall clock of one forward plus a final stream sync
// (what a client waits for); its counters split it:
//   kernel_us   the GPU time of its kernels without the host's waits (ch01::kernel_time_us)
//   other_us    total - kernel: launch gaps, host syncs, allocations
//   kernels, host_syncs per forward; forwards/s = 1e6 / median_us
// Rows: BM_block/<mode>/batch:B with mode = eager_alloc, eager, fused, graph.
// chapters/01_serving_latency/tools/ch01_torch.py prints the same table for PyTorch (eager, CUDA
// graphs, torch.compile) beside these rows when torch is installed.
//   ./build/gpu/bench/bench_ch01 --benchmark_out=ch01.json --benchmark_out_format=json
#include <chrono>
#include <string>
#include <vector>

#include "ch01/ch01.hpp"
#include "cudalab/bench.hpp"
#include "cudalab/check.hpp"
#include "cudalab/stream.hpp"
#include "cudalab/timer.hpp"

using namespace cudalab;

namespace {

const ch01::BlockWeights& weights() {
  static const ch01::BlockWeights w = ch01::block_weights();
  return w;
}

void BM_block(benchmark::State& state, ch01::Mode mode, int batch) {
  try {
    const auto& w = weights();
    ch01::Block block(w, 64);
    Stream s;
    const auto x = ch01::make_input(w.shape, batch, 7);
    auto dx = to_device(x);
    DeviceBuffer<float> y(x.size());
    const std::string key =
        std::string("block/") + ch01::mode_name(mode) + "/" + std::to_string(batch);
    if (!bench::verify(state, key, [&] {
          block.forward(mode, dx.data(), y.data(), batch, s);
          s.synchronize();
          return bench::mismatch(y.to_host(), ch01::block_forward_cpu(w, x, batch),
                                 {.abs = 2e-3, .rel = 2e-3},
                                 std::string("FFN block, ") + ch01::mode_name(mode));
        }))
      return;
    for (int i = 0; i < 5; ++i) block.forward(mode, dx.data(), y.data(), batch, s);
    s.synchronize();
    std::vector<float> ms;
    for (auto _ : state) {
      const auto t0 = std::chrono::steady_clock::now();
      block.forward(mode, dx.data(), y.data(), batch, s);
      s.synchronize();
      const double t = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
      state.SetIterationTime(t);
      ms.push_back(static_cast<float>(t * 1e3));
    }
    const double total_us = summarize(std::move(ms)).median_ms * 1e3;
    const double kernel_us = ch01::kernel_time_us(block, mode, dx.data(), y.data(), batch, 20, s);
    state.counters["median_us"] = total_us;
    state.counters["kernel_us"] = kernel_us;
    state.counters["other_us"] = total_us - kernel_us;
    state.counters["kernels"] = block.steps(mode);
    state.counters["host_syncs"] = block.host_syncs(mode);
    state.counters["forwards/s"] = total_us > 0 ? 1e6 / total_us : 0;
    state.counters["samples/s"] = total_us > 0 ? 1e6 * batch / total_us : 0;
  } catch (const std::exception& e) {
    state.SkipWithError(e.what());
  }
}

}  // namespace

// BM_block/<mode>/batch:B, mode = eager_alloc, eager, fused, graph (the row names of
// bench/ch01/ch01.toml).
const bool block_rows = [] {
  const std::pair<ch01::Mode, const char*> modes[] = {{ch01::Mode::kEagerAlloc, "eager_alloc"},
                                                      {ch01::Mode::kEager, "eager"},
                                                      {ch01::Mode::kFused, "fused"},
                                                      {ch01::Mode::kGraph, "graph"}};
  for (const auto& [mode, name] : modes)
    for (int batch : {1, 4, 16, 64})
      bench::add("BM_block/" + std::string(name) + "/batch:" + std::to_string(batch),
                 [mode, batch](benchmark::State& st) { BM_block(st, mode, batch); });
  return true;
}();

CUDALAB_BENCH_MAIN();
