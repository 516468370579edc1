// Where the time of one forward goes (worked): the host's wall clock for the whole forward against
// the GPU time of its kernels measured one by one. The difference is what an eager framework adds:
// launch gaps, host round trips, allocations.
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
  for (int k = 0; k < block.steps(mode); ++k) {
    const TimingStats st =
        time_gpu([&](cudaStream_t s) { block.run_step(mode, k, x.data(), y.data(), batch, s); },
                 stream, {.warmup = 2, .repetitions = std::max(reps, 5)});
    t.kernel_us += st.median_ms * 1e3;
  }
  t.other_us = t.total_us - t.kernel_us;
  return t;
}

}  // namespace cudalab::ch01
