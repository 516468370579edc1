// Chapter 7 benchmarks: what streams, events and graphs buy, each beside its baseline in the same
// run; a file per topic, registered in this order: streams.cpp, overlap.cpp, events.cpp,
// graph_update.cpp, graph_capture.cpp, inference.cpp. This one: how streams behave.
//   BM_default_stream/mode   4 streams x one 100 µs kernel each: non-blocking streams run them at
//                            once; a legacy-default-stream launch between them serializes all
//   BM_priority/high         latency of a 5 µs kernel submitted while a 4-wave kernel runs, from a
//                            high-priority stream (1) or an equal-priority one (0)
//   BM_host_func/with        a kernel, cudaLaunchHostFunc, a kernel: the host round trip inside a
//                            stream
//   BM_alloc/mode/bytes      100 x (allocate, kernel, free): cudaMalloc/cudaFree against
//                            cudaMallocAsync
// Every row with an output checks it once before timing (bench::verify): a wrong result is an
// error row.
//   ./build/gpu/bench/bench_ch07 --benchmark_out=ch07.json --benchmark_out_format=json
#include <chrono>
#include <cstdint>
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

constexpr std::uint64_t kSpinNs = 100000;  // long beside the ~3 µs it takes the host to launch each

void BM_default_stream(benchmark::State& state) {
  const int mode =
      static_cast<int>(state.range(0));  // 0 non-blocking, 1 legacy default, 2 per-thread default
  state.SetLabel(mode == 0   ? "non-blocking streams"
                 : mode == 1 ? "legacy default stream between"
                             : "per-thread default stream between");
  guarded(state, [&] {
    constexpr int kStreams = 4;
    // Blocking streams (cudaStreamDefault): the kind the legacy default stream synchronizes with.
    StreamSet set(kStreams, mode == 0 ? cudaStreamNonBlocking : cudaStreamDefault);
    bench::run(state,
               [&](cudaStream_t s) {
                 on_streams(s, set.raw, [&] {
                   for (cudaStream_t t : set.raw) {
                     ch07::spin(kSpinNs, 1, t);
                     if (mode == 1) ch07::spin(0, 1, cudaStreamLegacy);
                     if (mode == 2) ch07::spin(0, 1, cudaStreamPerThread);
                   }
                 });
               },
               {});
    const double median_us = state.counters["median_us"];
    if (median_us > 0) state.counters["concurrency"] = kStreams * (kSpinNs / 1000.0) / median_us;
  });
}

// ---- priorities

void BM_priority(benchmark::State& state) {
  const bool high = state.range(0) != 0;
  state.SetLabel(high ? "small kernel on a high-priority stream" : "small kernel, same priority");
  guarded(state, [&] {
    int dev = 0, sms = 0;
    CUDALAB_CHECK(cudaGetDevice(&dev));
    CUDALAB_CHECK(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, dev));
    const auto range = ch07::priority_range();
    Stream low(cudaStreamNonBlocking, range.least),
        small(cudaStreamNonBlocking, high ? range.greatest : range.least);
    Event start, stop;
    const unsigned big_blocks =
        static_cast<unsigned>(sms) * 32 * 4;  // 4 waves of 32 one-warp blocks per SM
    std::vector<float> ms;
    for (auto _ : state) {
      ch07::spin(50000, big_blocks, low);  // ~4 x 50 µs
      const auto t0 = std::chrono::steady_clock::now();
      while (std::chrono::steady_clock::now() - t0 < std::chrono::microseconds(20)) {
      }  // let the big kernel start
      start.record(small);
      ch07::spin(5000, 1, small);
      stop.record(small);
      stop.synchronize();
      low.synchronize();
      const float t = stop.elapsed_ms_since(start);
      state.SetIterationTime(t * 1e-3);
      ms.push_back(t);
    }
    state.counters["median_us"] = summarize(ms).median_ms * 1e3;
  });
}

// ---- host functions

void CUDART_CB noop_host_func(void*) {}

void BM_host_func(benchmark::State& state) {
  const bool with = state.range(0) != 0;
  state.SetLabel(with ? "kernel, cudaLaunchHostFunc, kernel" : "kernel, kernel");
  guarded(state, [&] {
    bench::run(state,
               [&](cudaStream_t s) {
                 ch07::spin(0, 1, s);
                 if (with) CUDALAB_CHECK(cudaLaunchHostFunc(s, noop_host_func, nullptr));
                 ch07::spin(0, 1, s);
               },
               {});
  });
}

// ---- allocation in a loop

void BM_alloc(benchmark::State& state) {
  const auto mode = static_cast<ch07::AllocMode>(state.range(0));
  const auto bytes = static_cast<std::size_t>(state.range(1));
  constexpr int kLoop = 100;
  state.SetLabel(mode == ch07::AllocMode::kMalloc ? "cudaMalloc/cudaFree"
                                                  : "cudaMallocAsync/cudaFreeAsync (pool)");
  guarded(state, [&] {
    bench::run(state, [&](cudaStream_t s) { ch07::alloc_loop(mode, bytes, kLoop, s); }, {});
    state.counters["us_per_alloc"] = state.counters["median_us"] / kLoop;
  });
}

}  // namespace

// Every row through bench::add (manual time; microseconds, milliseconds for the pipeline rows).
[[maybe_unused]] const bool kRegistered = [] {
  bench::add("BM_default_stream", BM_default_stream)->ArgName("mode")->DenseRange(0, 2);
  bench::add("BM_priority", BM_priority)->ArgName("high")->Arg(0)->Arg(1);
  bench::add("BM_host_func", BM_host_func)->ArgName("with")->Arg(0)->Arg(1);
  bench::add("BM_alloc", BM_alloc)
      ->ArgNames({"mode", "bytes"})
      ->ArgsProduct({{0, 1}, {1 << 16, 1 << 24}});
  return true;
}();

CUDALAB_BENCH_MAIN();
