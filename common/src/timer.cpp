#include "cudalab/timer.hpp"

#include <algorithm>
#include <optional>

#include "cudalab/check.hpp"
#include "cudalab/device.hpp"
#include "cudalab/stream.hpp"

namespace cudalab {

TimingStats summarize(std::vector<float> ms) {
  TimingStats s;
  s.ms = std::move(ms);
  if (s.ms.empty()) return s;
  std::vector<float> sorted = s.ms;
  std::sort(sorted.begin(), sorted.end());
  const std::size_t k = sorted.size();
  s.median_ms = k % 2 ? sorted[k / 2] : 0.5f * (sorted[k / 2 - 1] + sorted[k / 2]);
  s.min_ms = sorted.front();
  s.max_ms = sorted.back();
  return s;
}

TimingStats time_gpu(const std::function<void(cudaStream_t)>& work, cudaStream_t stream,
                     TimingOptions options) {
  require(options.repetitions > 0, "options.repetitions", "must be at least 1");
  require(options.warmup >= 0, "options.warmup", "must not be negative");
  std::optional<L2Flusher> flusher;
  if (options.flush_l2) flusher.emplace();
  for (int i = 0; i < options.warmup; ++i) work(stream);
  Event start, stop;
  std::vector<float> ms;
  ms.reserve(static_cast<std::size_t>(options.repetitions));
  for (int i = 0; i < options.repetitions; ++i) {
    if (flusher) flusher->flush(stream);
    start.record(stream);
    work(stream);
    stop.record(stream);
    stop.synchronize();
    ms.push_back(stop.elapsed_ms_since(start));
  }
  return summarize(std::move(ms));
}

L2Flusher::L2Flusher() {
  int dev = 0;
  CUDALAB_CHECK(cudaGetDevice(&dev));
  bytes_ = std::max<std::size_t>(2 * device_info(dev).l2_bytes, 8u << 20);
  CUDALAB_CHECK(cudaMalloc(&buf_, bytes_));
}

L2Flusher::~L2Flusher() {
  if (buf_) cudaFree(buf_);
}

void L2Flusher::flush(cudaStream_t stream) {
  CUDALAB_CHECK(cudaMemsetAsync(buf_, 0, bytes_, stream));
}

}  // namespace cudalab
