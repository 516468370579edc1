// Chapter 8 benchmarks, what several topic files share: n ranks' buffers, streams and events on
// their devices (Ranks), the warm-up that turns an exception into a skipped row, and the GPU counts
// of a scaling sweep (collectives.cpp, ddp.cpp, tensor_parallel.cpp).
#pragma once

#include <exception>
#include <utility>
#include <vector>

#include "cudalab/bench.hpp"
#include "cudalab/check.hpp"
#include "cudalab/device_fill.hpp"
#include "cudalab/memory.hpp"

namespace cudalab::bench_ch08 {

// Buffers, streams and events of n ranks on `devices`; time(work) runs work() once per iteration
// between an event on rank 0's stream that every rank waits for and the join of every rank's end.
struct Ranks {
  explicit Ranks(std::vector<int> devs, std::size_t count) : devices(std::move(devs)), n(count) {
    for (std::size_t r = 0; r < devices.size(); ++r) {
      CUDALAB_CHECK(cudaSetDevice(devices[r]));
      bufs.push_back(uniform_device_buffer(n, r + 1, -1.0f, 1.0f));
      cudaStream_t s = nullptr;
      cudaEvent_t e = nullptr;
      CUDALAB_CHECK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
      CUDALAB_CHECK(cudaEventCreateWithFlags(&e, cudaEventDisableTiming));
      streams.push_back(s);
      ends.push_back(e);
      ptrs.push_back(bufs.back().data());
      cptrs.push_back(bufs.back().data());
    }
    CUDALAB_CHECK(cudaSetDevice(devices[0]));
    CUDALAB_CHECK(cudaEventCreate(&start));
    CUDALAB_CHECK(cudaEventCreate(&stop));
    CUDALAB_CHECK(cudaDeviceSynchronize());
  }
  ~Ranks() {
    for (std::size_t r = 0; r < devices.size(); ++r) {
      (void)cudaSetDevice(devices[r]);
      (void)cudaStreamSynchronize(streams[r]);
      (void)cudaStreamDestroy(streams[r]);
      (void)cudaEventDestroy(ends[r]);
    }
    (void)cudaSetDevice(devices[0]);
    (void)cudaEventDestroy(start);
    (void)cudaEventDestroy(stop);
  }
  Ranks(const Ranks&) = delete;
  Ranks& operator=(const Ranks&) = delete;

  template <class F>
  double time_ms(F&& work) {
    CUDALAB_CHECK(cudaSetDevice(devices[0]));
    CUDALAB_CHECK(cudaEventRecord(start, streams[0]));
    for (std::size_t r = 1; r < devices.size(); ++r)
      CUDALAB_CHECK(cudaStreamWaitEvent(streams[r], start, 0));
    work();
    for (std::size_t r = 1; r < devices.size(); ++r) {
      CUDALAB_CHECK(cudaSetDevice(devices[r]));
      CUDALAB_CHECK(cudaEventRecord(ends[r], streams[r]));
      CUDALAB_CHECK(cudaSetDevice(devices[0]));
      CUDALAB_CHECK(cudaStreamWaitEvent(streams[0], ends[r], 0));
    }
    CUDALAB_CHECK(cudaSetDevice(devices[0]));
    CUDALAB_CHECK(cudaEventRecord(stop, streams[0]));
    CUDALAB_CHECK(cudaEventSynchronize(stop));
    float ms = 0;
    CUDALAB_CHECK(cudaEventElapsedTime(&ms, start, stop));
    return ms;
  }

  std::vector<int> devices;
  std::size_t n;
  std::vector<DeviceBuffer<float>> bufs;
  std::vector<float*> ptrs;
  std::vector<const float*> cptrs;
  std::vector<cudaStream_t> streams;
  std::vector<cudaEvent_t> ends;
  cudaEvent_t start = nullptr, stop = nullptr;
};

// Runs the work twice to warm up; false (the row skipped with the reason) on an exception (the
// starter's NotImplemented).
template <class F>
bool warm(benchmark::State& state, Ranks& ranks, F&& work) {
  try {
    for (int i = 0; i < 2; ++i) ranks.time_ms(work);
    return true;
  } catch (const std::exception& e) {
    state.SkipWithError(e.what());
    return false;
  }
}

// `from`, 2 `from`, 4 `from`, ... up to `to`, and `to` itself: the GPU counts of a scaling sweep.
inline std::vector<int> gpu_counts(int from, int to) {
  std::vector<int> counts;
  for (int c = from; c <= to; c *= 2) counts.push_back(c);
  if (counts.empty() || counts.back() != to) counts.push_back(to);
  return counts;
}

}  // namespace cudalab::bench_ch08
