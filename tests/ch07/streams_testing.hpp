// Helpers shared by the chapter 7 tests: streams as a vector of raw handles, the debug-build skip
// (a gate test cannot run where every launch is followed by a device-wide synchronize), and a
// bounded poll of a stream.
#pragma once

#include <gtest/gtest.h>

#include <chrono>
#include <cstdlib>
#include <thread>
#include <vector>

#include "cudalab/check.hpp"
#include "cudalab/memory.hpp"
#include "cudalab/stream.hpp"

#if defined(CUDALAB_SYNC_LAUNCHES)
#define CH07_SKIP_IN_SYNC_BUILD()                                                                 \
  GTEST_SKIP() << "skipped: this build synchronizes after every launch (CUDALAB_SYNC_LAUNCHES), " \
                  "so a stream held by a Gate would block the test itself"
#else
#define CH07_SKIP_IN_SYNC_BUILD() (void)0
#endif

namespace ch07_test {

// Streams reach the GPU through a few hardware queues (Hyper-Q "connections",
// CUDA_DEVICE_MAX_CONNECTIONS, 8 by default); streams that share one are ordered with each other (a
// false dependency), so a stream held by a Gate could hold a queue-mate too. Before CUDA starts in
// this test program, ask for the maximum (32) unless the environment already chose: the few streams
// a test creates then have queues of their own.
inline const bool kMaxConnections = [] {
  setenv("CUDA_DEVICE_MAX_CONNECTIONS", "32", 0);
  return true;
}();

struct Streams {
  std::vector<cudalab::Stream> owned;
  std::vector<cudaStream_t> raw;
  explicit Streams(int count) {
    for (int i = 0; i < count; ++i) {
      owned.emplace_back(cudaStreamNonBlocking);
      raw.push_back(owned.back().get());
    }
  }
  void synchronize() {
    for (auto& s : owned) s.synchronize();
  }
};

// A device copy of `host` whose data has landed. to_device() is a cudaMemcpy from pageable memory
// on the legacy default stream: it may return once the data sits in the driver's staging buffer,
// before the DMA to the device has finished, and the non-blocking streams these tests launch on
// are not ordered after the legacy stream. A kernel launched right away can read the buffer before
// the copy lands (seen on an H200 under a loaded parallel ctest: every element of a chain or of
// the MLP's logits wrong). Wait for the legacy stream before using the copy.
template <class T>
cudalab::DeviceBuffer<T> uploaded(const std::vector<T>& host) {
  auto d = cudalab::to_device(host);
  CUDALAB_CHECK(cudaStreamSynchronize(cudaStreamLegacy));
  return d;
}

// Before a Gate holds a stream, run once what the test will run while it is held, with nothing
// held, then wait. With lazy module loading (CUDA_MODULE_LOADING=LAZY, the default since CUDA
// 12.2) the first launch of a kernel from a module not loaded yet loads it inside the launch call,
// and that load can wait for the GPU's queued work to drain: behind a held gate, the host then
// blocks until the gate times out, through no fault of the function under test (on an H200:
// run_chunked and fork_join "waited on the host" until the 8 s timeout). A warm-up run loads the
// modules (and any other first-use driver state) while nothing is held.
template <class F>
void warm_up(F&& run) {
  run();
  CUDALAB_CHECK(cudaDeviceSynchronize());
}

// True when `stream` has finished everything enqueued in it within `budget` (polled). Used only
// to fail fast when something ran that should still be waiting; a correct program is never
// judged by how long it takes.
inline bool becomes_idle(cudaStream_t stream, std::chrono::milliseconds budget) {
  const auto end = std::chrono::steady_clock::now() + budget;
  while (std::chrono::steady_clock::now() < end) {
    const cudaError_t e = cudaStreamQuery(stream);
    if (e == cudaErrorNotReady) (void)cudaGetLastError();  // "not ready" is an answer, not an error
    if (e == cudaSuccess) return true;
    if (e != cudaErrorNotReady) cudalab::check(e, "cudaStreamQuery(stream)", __FILE__, __LINE__);
    std::this_thread::sleep_for(std::chrono::microseconds(200));
  }
  return false;
}

}  // namespace ch07_test
