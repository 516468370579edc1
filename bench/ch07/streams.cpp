// Chapter 7 benchmarks: what streams, events and graphs buy, each beside its baseline in the same
// run.
//   BM_default_stream/mode   4 streams x one 100 µs kernel each: non-blocking streams run them at
//                            once; a legacy-default-stream launch between them serializes all
//   BM_priority/high         latency of a 5 µs kernel submitted while a 4-wave kernel runs, from a
//                            high-priority stream (1) or an equal-priority one (0)
//   BM_host_func/with        a kernel, cudaLaunchHostFunc, a kernel: the host round trip inside a
//   stream BM_alloc/mode/bytes      100 x (allocate, kernel, free): cudaMalloc/cudaFree against
//   cudaMallocAsync BM_overlap/...           the overlap lab: chunked pipeline speedup over the
//   serial one (exercise 7.1) BM_overlap_model/...     the model's speedup for the same stages
//   measured alone (the "vendor" row) BM_overlap_pageable/...  the same chunked pipeline from
//   pageable host memory BM_chain/plain|graph/length:L  a chain of L tiny kernels: plain launches
//   against one CUDA graph (7.3) BM_fork_join/...         fork / join over 3 streams (7.2) timed
//   beside the same kernels in one
//                            stream (and that baseline alone: one_stream)
//   BM_graph_retarget/...    set_data() on the instantiated graph (7.4) against capture +
//   instantiate BM_inference/batch/graph the serving pipeline: samples/s, p50 and p99 latency per
//   batch
// Every row with an output checks it once before timing (bench::verify): a wrong result is an
// error row. The overlap rows are timed beside the serial pipeline (bench::run_vs: vs_base is the
// measured speedup).
//   ./build/gpu/bench/bench_ch07 --benchmark_out=ch07.json --benchmark_out_format=json
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "ch07/ch07.hpp"
#include "cudalab/bench.hpp"
#include "cudalab/check.hpp"
#include "cudalab/memory.hpp"
#include "cudalab/stream.hpp"
#include "cudalab/timer.hpp"

using namespace cudalab;

namespace {

// A benchmark body that throws (a starter function not written yet, a CUDA error) becomes an error
// row instead of ending the program.
template <class F>
void guarded(benchmark::State& state, F&& body) {
  try {
    body();
  } catch (const std::exception& e) {
    state.SkipWithError(e.what());
  }
}

// work(streams) runs on `streams`, ordered after what `s` holds and before what `s` gets next.
template <class F>
void on_streams(cudaStream_t s, const std::vector<cudaStream_t>& streams, F&& work) {
  Event fork(cudaEventDisableTiming);
  fork.record(s);
  for (cudaStream_t t : streams) CUDALAB_CHECK(cudaStreamWaitEvent(t, fork, 0));
  work();
  for (cudaStream_t t : streams) {
    Event join(cudaEventDisableTiming);
    join.record(t);
    CUDALAB_CHECK(cudaStreamWaitEvent(s, join, 0));
  }
}

struct StreamSet {
  std::vector<Stream> owned;
  std::vector<cudaStream_t> raw;
  StreamSet(int count, unsigned flags) {
    for (int i = 0; i < count; ++i) {
      owned.emplace_back(flags);
      raw.push_back(owned.back().get());
    }
  }
};

// ---- default stream vs non-blocking streams

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

// ---- the overlap lab

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

// ---- graphs against plain launches

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

// ---- events: fork / join against one stream

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

// ---- graph update against a rebuild

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

// ---- the serving pipeline

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

// Every row through bench::add (manual time; microseconds, milliseconds for the pipeline rows).
[[maybe_unused]] const bool kRegistered = [] {
  using benchmark::kMillisecond;
  bench::add("BM_default_stream", BM_default_stream)->ArgName("mode")->DenseRange(0, 2);
  bench::add("BM_priority", BM_priority)->ArgName("high")->Arg(0)->Arg(1);
  bench::add("BM_host_func", BM_host_func)->ArgName("with")->Arg(0)->Arg(1);
  bench::add("BM_alloc", BM_alloc)
      ->ArgNames({"mode", "bytes"})
      ->ArgsProduct({{0, 1}, {1 << 16, 1 << 24}});
  bench::add("BM_overlap_model", BM_overlap_model, kMillisecond)
      ->ArgNames({"ratio_pct", "chunks"})
      ->ArgsProduct({{25, 100, 400}, {2, 4, 8, 16, 32}});
  bench::add("BM_overlap", BM_overlap, kMillisecond)
      ->ArgNames({"ratio_pct", "chunks"})
      ->ArgsProduct({{25, 100, 400}, {2, 4, 8, 16, 32}});
  bench::add("BM_overlap_pageable", BM_overlap_pageable, kMillisecond)
      ->ArgNames({"ratio_pct", "chunks"})
      ->ArgsProduct({{100}, {8}});
  // BM_fork_join/streams|one_stream/n:N: fork / join over three streams (7.2), and its baseline.
  for (bool forked : {true, false})
    for (std::size_t n : {std::size_t{4096}, std::size_t{1} << 20})
      bench::add("BM_fork_join/" + std::string(forked ? "streams" : "one_stream") +
                     "/n:" + std::to_string(n),
                 [forked, n](benchmark::State& st) { BM_fork_join(st, forked, n); });
  // BM_graph_retarget/update|rebuild/length:L: set_data() on the instantiated graph (7.4) against
  // a new capture and instantiation, then one replay.
  for (bool update : {true, false})
    for (int length : {10, 100, 1000})
      bench::add("BM_graph_retarget/" + std::string(update ? "update" : "rebuild") +
                     "/length:" + std::to_string(length),
                 [update, length](benchmark::State& st) { BM_graph_retarget(st, update, length); });
  // BM_chain/plain/length:L and BM_chain/graph/length:L, L = 1, 10, 100, 1000.
  for (bool graph : {false, true})
    for (int length : {1, 10, 100, 1000})
      bench::add("BM_chain/" + std::string(graph ? "graph" : "plain") +
                     "/length:" + std::to_string(length),
                 [graph, length](benchmark::State& st) { BM_chain(st, graph, length); });
  bench::add("BM_inference", BM_inference, kMillisecond)
      ->ArgNames({"batch", "graph"})
      ->ArgsProduct({{1, 4, 16, 64}, {0, 1}});
  return true;
}();

CUDALAB_BENCH_MAIN();
