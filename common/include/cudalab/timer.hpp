// Event-based GPU timing: warm-up, repetitions, median. Device work is asynchronous, so host
// clocks measure the launch, not the kernel; events are recorded in the stream around the work.
#pragma once

#include <cuda_runtime_api.h>

#include <cstddef>
#include <functional>
#include <vector>

namespace cudalab {

struct TimingOptions {
  int warmup = 3;        // untimed runs first: module load, caches, clocks ramping up
  int repetitions = 20;  // timed runs; the median is robust to the odd slow one
  bool flush_l2 =
      false;  // overwrite the L2 before each timed run (small inputs would hit in cache)
};

struct TimingStats {
  std::vector<float> ms;  // every timed repetition, in order
  float median_ms = 0, min_ms = 0, max_ms = 0;
  // Bytes or FLOP per second at the median time.
  double per_second(double amount) const { return median_ms > 0 ? amount / (median_ms * 1e-3) : 0; }
};

TimingStats summarize(std::vector<float> ms);

// Times `work(stream)` with events recorded in `stream`.
TimingStats time_gpu(const std::function<void(cudaStream_t)>& work, cudaStream_t stream = nullptr,
                     TimingOptions options = {});

// Writes a buffer twice the size of the L2 so that the next kernel starts with a cold cache.
class L2Flusher {
 public:
  L2Flusher();
  ~L2Flusher();
  L2Flusher(const L2Flusher&) = delete;
  L2Flusher& operator=(const L2Flusher&) = delete;
  void flush(cudaStream_t stream);

 private:
  void* buf_ = nullptr;
  std::size_t bytes_ = 0;
};

}  // namespace cudalab
