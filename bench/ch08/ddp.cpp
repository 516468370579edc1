// Chapter 8 benchmarks, the DDP-like training step (gradient sync at the end or bucketed):
//   BM_ddp/<size>/ranks:R/sync:<end|bucketed>
#include "ch08/ddp.hpp"

#include <algorithm>
#include <exception>
#include <map>
#include <string>
#include <vector>

#include "ch08/ch08.hpp"
#include "ch08_bench.hpp"
#include "cudalab/bench.hpp"

using namespace cudalab;
using namespace cudalab::bench_ch08;

namespace {

// The DDP-like training step (ch08::ddp_train) on `ranks` ranks: the time of one step as
// ddp_train measures it (its steps after the first, all ranks synchronized at both ends, the
// set-up outside), the best of 3 calls. Not the difference of two whole calls (10 steps minus
// none): at 0.1 ms a step, the set-up's jitter (cuBLAS handles, buffers, the data) swamps the
// steps, and the small model's one-rank row read 0.74x of itself that way.
// Counters: step_ms, samples/s, speedup (the one-rank step, measured once per
// process and size, over this one: strong scaling, the global batch split over the ranks),
// and, when the ranks are distinct GPUs, the cost model's prediction for them (model_speedup:
// compute = the one-rank step, the gradients all-reduced at the end or in 2 buckets, NVLink as
// ch08::nvlink_h200 assumes). Ranks that share a GPU (one GPU: 2 simulated) have no model row.
struct DdpSize {
  const char* name;
  ch08::DdpConfig config;
};
const DdpSize kDdpSizes[] = {
    {"small", ch08::DdpConfig{}},  // the tests' MLP: 32 -> 64 -> 1, 256 rows: launch-bound
    {"large", ch08::DdpConfig{.inputs = 1024, .hidden = 4096, .batch = 16384}},  // GEMM-bound
};

double ddp_step_seconds(const ch08::DdpConfig& base, const std::vector<int>& devices,
                        ch08::GradSync sync) {
  ch08::DdpConfig c = base;
  c.steps = 21;  // 20 timed steps after the warm-up step
  double best = 1e30;
  for (int i = 0; i < 3; ++i) {
    double step = 0;
    (void)ch08::ddp_train(c, devices, sync, &step);
    best = std::min(best, step);
  }
  return best;
}

double one_rank_step_seconds(const DdpSize& size) {
  static std::map<std::string, double> cache;  // size name -> seconds
  auto it = cache.find(size.name);
  if (it == cache.end())
    it = cache.emplace(size.name, ddp_step_seconds(size.config, {0}, ch08::GradSync::kAtEnd)).first;
  return it->second;
}

void BM_ddp(benchmark::State& state, const DdpSize& size, int ranks, ch08::GradSync sync) {
  try {
    const int g = ch08::device_count();
    std::vector<int> devices(ranks, 0);
    const bool distinct = ranks <= g;
    if (distinct)
      for (int r = 0; r < ranks; ++r) devices[r] = r;
    if (distinct && ranks > 1) ch08::enable_peer_access(devices);
    double step = 0, one = 0;
    for (auto _ : state) {
      step = ddp_step_seconds(size.config, devices, sync);
      state.SetIterationTime(step);
    }
    one = one_rank_step_seconds(size);
    const ch08::DdpConfig& c = size.config;
    const double params = double(c.inputs) * c.hidden + 2.0 * c.hidden + 1;
    state.counters["step_ms"] = step * 1e3;
    state.counters["samples/s"] = c.batch / step;
    state.counters["speedup"] = one / step;
    state.counters["ranks"] = ranks;
    state.counters["simulated"] = distinct ? 0 : 1;
    if (distinct && ranks > 1) {
      const ch08::TrainingStep model{.compute_s = one,
                                     .grad_bytes = 4.0 * params,
                                     .buckets = sync == ch08::GradSync::kBucketed ? 2 : 0,
                                     .strong_scaling = true};
      state.counters["model_step_ms"] = ch08::step_seconds(model, ranks, ch08::nvlink_h200()) * 1e3;
      state.counters["model_speedup"] = ch08::speedup(model, ranks, ch08::nvlink_h200());
    }
  } catch (const std::exception& e) {
    state.SkipWithError(e.what());
  }
}

// Registered before main() runs: the rows depend on the number of GPUs found.
[[maybe_unused]] const bool kRegistered = [] {
  const int g = ch08::device_count();
  // DDP: one rank, and 2, 4, 8 ... GPUs up to all of them (2 ranks simulated on one GPU).
  for (const DdpSize& size : kDdpSizes)
    for (int ranks : gpu_counts(1, std::max(g, 2)))
      for (auto sync : {ch08::GradSync::kAtEnd, ch08::GradSync::kBucketed}) {
        if (ranks == 1 && sync == ch08::GradSync::kBucketed) continue;  // nothing to overlap
        const std::string name = std::string("BM_ddp/") + size.name +
                                 "/ranks:" + std::to_string(ranks) +
                                 (sync == ch08::GradSync::kAtEnd ? "/sync:end" : "/sync:bucketed");
        bench::add(
            name, [&size, ranks, sync](benchmark::State& st) { BM_ddp(st, size, ranks, sync); },
            benchmark::kMillisecond)
            ->Iterations(1);
      }
  return true;
}();

}  // namespace
