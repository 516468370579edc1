// Chapter 7 benchmarks, what every topic file uses: a row body that throws becomes an error row,
// work run on a set of streams between a fork and a join on the row's stream, and such a set.
#pragma once

#include <exception>
#include <vector>

#include "cudalab/bench.hpp"
#include "cudalab/check.hpp"
#include "cudalab/stream.hpp"
#include "cudalab/timer.hpp"

namespace cudalab::bench_ch07 {

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

}  // namespace cudalab::bench_ch07
