// Starter track — write your code at the TODO marks; the tests of each exercise
// fail until you do. (Generated from chapters/01_serving_latency/reference/timing.cpp by scripts/variants.py.)
// Where the time of one forward goes (worked): the host's wall clock for the whole forward against
// the GPU time of its kernels with the host's waits taken out. The difference is what an eager
// framework adds: launch gaps, host round trips, allocations.
#include <algorithm>
#include <chrono>
#include <vector>

#include "ch01/ch01.hpp"
#include "cudalab/check.hpp"
#include "cudalab/timer.hpp"

namespace cudalab::ch01 {

ForwardTiming time_forward(Block& block, Mode mode, int batch, int reps, cudaStream_t stream) {
  require(reps >= 1, "reps", "must be >= 1");
  require(batch >= 1 && batch <= block.max_batch(), "batch", "must be in [1, block.max_batch()]");
  const auto x = to_device(make_input(block.shape(), batch, 42));
  DeviceBuffer<float> y(static_cast<std::size_t>(batch) * block.shape().d);
  for (int i = 0; i < 3; ++i) block.forward(mode, x.data(), y.data(), batch, stream);
  CUDALAB_CHECK(cudaStreamSynchronize(stream));

  std::vector<float> total_ms;
  for (int r = 0; r < reps; ++r) {
    const auto t0 = std::chrono::steady_clock::now();
    block.forward(mode, x.data(), y.data(), batch, stream);
    CUDALAB_CHECK(cudaStreamSynchronize(stream));
    total_ms.push_back(
        std::chrono::duration<float, std::milli>(std::chrono::steady_clock::now() - t0).count());
  }
  ForwardTiming t;
  t.mode = mode;
  t.batch = batch;
  t.kernels = block.steps(mode);
  t.host_syncs = block.host_syncs(mode);
  t.total_us = summarize(std::move(total_ms)).median_ms * 1e3;
  t.kernel_us = kernel_time_us(block, mode, x.data(), y.data(), batch, std::max(reps, 5), stream);
  t.other_us = t.total_us - t.kernel_us;
  return t;
}

double kernel_time_us(Block& block, Mode mode, const float* x, float* y, int batch, int reps,
                      cudaStream_t stream) {
  require(reps >= 1, "reps", "must be >= 1");
  const bool eager = mode == Mode::kEager || mode == Mode::kEagerAlloc;
  return time_gpu(
             [&](cudaStream_t s) {
               if (!eager) {
                 block.forward(mode, x, y, batch, s);  // asynchronous: no host wait inside
                 return;
               }
               for (int k = 0; k < block.steps(mode); ++k) block.run_step(mode, k, x, y, batch, s);
             },
             stream, {.warmup = 2, .repetitions = reps})
             .median_ms *
         1e3;
}

}  // namespace cudalab::ch01
