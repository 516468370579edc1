// Chapter 7 benchmarks, the overlap lab (exercise 7.1):
//   BM_overlap/...           chunked pipeline speedup over the serial one, timed beside the serial
//                            pipeline (bench::run_vs: vs_base is the measured speedup)
//   BM_overlap_model/...     the model's speedup for the same stages measured alone (the "vendor"
//                            row)
//   BM_overlap_pageable/...  the same chunked pipeline from pageable host memory
// Every row with an output checks it once before timing (bench::verify): a wrong result is an
// error row.
//   ./build/gpu/bench/bench_ch07 --benchmark_out=ch07.json --benchmark_out_format=json
#include <algorithm>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "ch07/ch07.hpp"
#include "ch07_bench.hpp"
#include "cudalab/bench.hpp"
#include "cudalab/check.hpp"
#include "cudalab/stream.hpp"
#include "cudalab/timer.hpp"

using namespace cudalab;
using namespace cudalab::bench_ch07;

namespace {

constexpr std::size_t kOverlapN = std::size_t{64} << 20;  // 64 Mi floats: 256 MiB each way
constexpr int kOverlapStreams = 4;

struct Stages {
  int iters = 0;
  double h2d_ms = 0, kernel_ms = 0, d2h_ms = 0;
  std::vector<double> v() const { return {h2d_ms, kernel_ms, d2h_ms}; }
};

double median_ms(const std::function<void(cudaStream_t)>& work, cudaStream_t s) {
  return time_gpu(work, s, {.warmup = 1, .repetitions = 5}).median_ms;
}

// Stage times of the whole batch, each stage alone, with the kernel sized so that
// kernel / H2D ~= ratio_pct / 100 on this GPU (calibrated once per ratio).
Stages stages_for(ch07::OverlapBuffers& b, int ratio_pct) {
  static std::map<int, Stages> cache;
  if (auto it = cache.find(ratio_pct); it != cache.end()) return it->second;
  Stream s;
  const std::size_t bytes = b.n * sizeof(float);
  Stages st;
  st.h2d_ms = median_ms(
      [&](cudaStream_t t) {
        CUDALAB_CHECK(
            cudaMemcpyAsync(b.dev_in.data(), b.host_in.data(), bytes, cudaMemcpyHostToDevice, t));
      },
      s);
  st.d2h_ms = median_ms(
      [&](cudaStream_t t) {
        CUDALAB_CHECK(
            cudaMemcpyAsync(b.host_out.data(), b.dev_out.data(), bytes, cudaMemcpyDeviceToHost, t));
      },
      s);
  auto kernel_ms = [&](int iters) {
    return median_ms(
        [&](cudaStream_t t) { ch07::process(b.dev_in.data(), b.dev_out.data(), b.n, iters, t); },
        s);
  };
  const double k0 = kernel_ms(0), k1 = kernel_ms(512);
  const double per_iter = std::max((k1 - k0) / 512, 1e-9);
  const double target = st.h2d_ms * ratio_pct / 100.0;
  st.iters = static_cast<int>(std::clamp((target - k0) / per_iter, 0.0, 1e6));
  st.kernel_ms = kernel_ms(st.iters);
  cache[ratio_pct] = st;
  return st;
}

// Compares a sample of host_out with the oracle; empty when right.
std::string check_overlap(const ch07::OverlapBuffers& b, int iters) {
  auto wrong = [&](std::size_t i) {
    return b.host_out.data()[i] != ch07::process_oracle(b.host_in.data()[i], iters);
  };
  for (std::size_t i = 0; i < b.n; i += 4099)
    if (wrong(i)) return "wrong result at " + std::to_string(i);
  if (b.n > 0 && wrong(b.n - 1))
    return "wrong result at " + std::to_string(b.n - 1) + " (the tail)";
  return {};
}

void fill_host(ch07::OverlapBuffers& b) {
  for (std::size_t i = 0; i < b.n; ++i)
    b.host_in.data()[i] = static_cast<float>(i % 1000) / 250.0f - 2.0f;
}

// One pinned set for every row (allocating 1 GiB of pinned memory per row would dominate the run).
ch07::OverlapBuffers& shared_pinned() {
  static ch07::OverlapBuffers b = [] {
    ch07::OverlapBuffers x(kOverlapN);
    fill_host(x);
    return x;
  }();
  return b;
}

void overlap_row(benchmark::State& state, ch07::HostMemory memory) {
  const int ratio_pct = static_cast<int>(state.range(0)), chunks = static_cast<int>(state.range(1));
  guarded(state, [&] {
    std::unique_ptr<ch07::OverlapBuffers> pageable;
    if (memory == ch07::HostMemory::kPageable) {
      pageable = std::make_unique<ch07::OverlapBuffers>(kOverlapN, memory);
      fill_host(*pageable);
    }
    ch07::OverlapBuffers& b = pageable ? *pageable : shared_pinned();
    const Stages st =
        stages_for(shared_pinned(), ratio_pct);  // stages are measured from pinned memory
    StreamSet set(kOverlapStreams, cudaStreamNonBlocking);
    Stream s;
    auto chunked = [&](cudaStream_t t) {
      on_streams(t, set.raw, [&] { ch07::run_chunked(b, st.iters, chunks, set.raw); });
    };
    const std::string key =
        std::string(memory == ch07::HostMemory::kPageable ? "overlap_pageable/" : "overlap/") +
        std::to_string(ratio_pct) + "/" + std::to_string(chunks);
    if (!bench::verify(state, key, [&] {
          std::fill(b.host_out.data(), b.host_out.data() + b.n, -1.0f);
          chunked(s);
          s.synchronize();
          return check_overlap(b, st.iters);
        }))
      return;
    // The chunked pipeline timed beside the serial one (same buffers, interleaved): vs_base is the
    // measured speedup.
    bench::run_vs(
        state, chunked, [&](cudaStream_t t) { ch07::run_serial(b, st.iters, t); }, {}, 1);
    const double chunked_ms = state.counters["median_us"] / 1e3,
                 serial_ms = state.counters["base_us"] / 1e3;
    // Bytes over the bus (in + out) per second: the copy engines' share of the work.
    state.counters["bus_GB/s"] =
        chunked_ms > 0 ? 2.0 * kOverlapN * sizeof(float) / (chunked_ms * 1e-3) / 1e9 : 0;
    state.counters["kernel_iters"] = st.iters;
    state.counters["h2d_ms"] = st.h2d_ms;
    state.counters["kernel_ms"] = st.kernel_ms;
    state.counters["d2h_ms"] = st.d2h_ms;
    state.counters["serial_ms"] = serial_ms;
    state.counters["speedup"] = chunked_ms > 0 ? serial_ms / chunked_ms : 0;
    const double model = ch07::overlap_speedup_model(st.v(), chunks);
    state.counters["model_speedup"] = model;
    state.counters["pct_of_model"] = chunked_ms > 0 ? 100.0 * (serial_ms / chunked_ms) / model : 0;
  });
}

void BM_overlap(benchmark::State& state) {
  overlap_row(state, ch07::HostMemory::kPinned);
}
void BM_overlap_pageable(benchmark::State& state) {
  overlap_row(state, ch07::HostMemory::kPageable);
}

// The model's row: the stages measured alone, the model's pipelined time as the row's time and its
// speedup over their sum as "speedup" (the ratio's denominator in bench/ch07/ch07.toml).
void BM_overlap_model(benchmark::State& state) {
  const int ratio_pct = static_cast<int>(state.range(0)), chunks = static_cast<int>(state.range(1));
  guarded(state, [&] {
    const Stages st = stages_for(shared_pinned(), ratio_pct);
    const double t = ch07::pipelined_time_model(st.v(), chunks);
    for (auto _ : state) state.SetIterationTime(t * 1e-3);
    state.counters["median_us"] = t * 1e3;
    state.counters["h2d_ms"] = st.h2d_ms;
    state.counters["kernel_ms"] = st.kernel_ms;
    state.counters["d2h_ms"] = st.d2h_ms;
    state.counters["speedup"] = ch07::overlap_speedup_model(st.v(), chunks);
  });
}

}  // namespace

[[maybe_unused]] const bool kRegistered = [] {
  using benchmark::kMillisecond;
  bench::add("BM_overlap_model", BM_overlap_model, kMillisecond)
      ->ArgNames({"ratio_pct", "chunks"})
      ->ArgsProduct({{25, 100, 400}, {2, 4, 8, 16, 32}});
  bench::add("BM_overlap", BM_overlap, kMillisecond)
      ->ArgNames({"ratio_pct", "chunks"})
      ->ArgsProduct({{25, 100, 400}, {2, 4, 8, 16, 32}});
  bench::add("BM_overlap_pageable", BM_overlap_pageable, kMillisecond)
      ->ArgNames({"ratio_pct", "chunks"})
      ->ArgsProduct({{100}, {8}});
  return true;
}();
