// ch09_trace_pipeline OUT_DIR: chapter 7's overlap lab recorded with CUPTI (trace/), twice: the
// serial pipeline on one stream (copy in, kernel, copy out) and the chunked pipeline on three
// streams (exercise 7.1's reference). Writes OUT_DIR/trace_serial.json and
// OUT_DIR/trace_pipelined.json (Chrome trace: open them in ui.perfetto.dev);
// tools/trace_check.py reads them and finds where the copies overlap the kernels.
// Without a GPU: "skipped: <reason>", exit 0. Exit 2: usage; 3: a CUDA or CUPTI error.
#include <algorithm>
#include <cstdio>
#include <exception>
#include <fstream>
#include <stdexcept>
#include <string>
#include <vector>

#include "ch07/ch07.hpp"
#include "ch09/trace.hpp"
#include "cudalab/check.hpp"
#include "cudalab/device.hpp"
#include "cudalab/nvtx.hpp"
#include "cudalab/stream.hpp"

namespace {

constexpr std::size_t kN = std::size_t{1} << 24;  // 64 MiB each way: copies of milliseconds
constexpr int kChunks = 8;
constexpr int kProbeIters = 1024;

void write(const std::string& path, const std::vector<cudalab::ch09::TraceEvent>& events) {
  std::ofstream f(path);
  f << cudalab::ch09::chrome_trace_json(events);
  if (!f) throw std::runtime_error("cannot write " + path);
  std::printf("%s: %zu events\n", path.c_str(), events.size());
}

}  // namespace

int main(int argc, char** argv) {
  using namespace cudalab;
  // Before any NVTX call: the warm-up below runs chapter 7's pipelines, whose NVTX ranges would
  // otherwise initialise NVTX without CUPTI and leave every later range unrecorded.
  ch09::TraceRecorder::route_nvtx();
  if (argc != 2) {
    std::fprintf(stderr, "usage: %s OUT_DIR\n", argv[0]);
    return 2;
  }
  if (!has_gpu()) {
    std::printf("skipped: %s\n", no_gpu_reason().c_str());
    return 0;
  }
  const std::string out = argv[1];
  try {
    ch07::OverlapBuffers b(kN);
    for (std::size_t i = 0; i < kN; ++i) b.host_in.span()[i] = static_cast<float>(i % 1000) * 1e-3f;
    Stream s0, s1, s2;
    const cudaStream_t streams[] = {s0.get(), s1.get(), s2.get()};
    // The kernel's share: as long as one copy (as chapter 7's benchmark calibrates it), so that a
    // pipeline has something to hide: iters from the measured copy and per-iteration kernel times.
    auto time_ms = [&](auto&& work) {
      Event start, stop;
      start.record(s0);
      work();
      stop.record(s0);
      stop.synchronize();
      return static_cast<double>(stop.elapsed_ms_since(start));
    };
    // The calibration and the warm-up run under a recorder whose records are dropped: CUPTI, with
    // its NVTX kind enabled, is in place before the first NVTX call (the warm-up's ranges).
    int iters = 0;
    {
      ch09::TraceRecorder warm_up;
      // Warm-up: the module load off the clock.
      ch07::process(b.dev_in.data(), b.dev_out.data(), kN, 0, s0);
      const double copy_ms = time_ms([&] {
        CUDALAB_CHECK(cudaMemcpyAsync(b.dev_in.data(), b.host_in.data(), kN * sizeof(float),
                                      cudaMemcpyHostToDevice, s0));
      });
      const double k0 =
          time_ms([&] { ch07::process(b.dev_in.data(), b.dev_out.data(), kN, 0, s0); });
      const double k1 =
          time_ms([&] { ch07::process(b.dev_in.data(), b.dev_out.data(), kN, kProbeIters, s0); });
      const double per_iter = std::max(k1 - k0, 1e-6) / kProbeIters;
      iters = static_cast<int>(std::clamp((copy_ms - k0) / per_iter, 0.0, 1e6));
      std::printf(
          "calibration: H2D copy %.3f ms, kernel %.3f ms + %.2e ms per iteration: iters = %d\n",
          copy_ms, k0, per_iter, iters);
      ch07::run_serial(b, iters, s0);  // warm-up of the whole pipeline, off the trace
      CUDALAB_CHECK(cudaDeviceSynchronize());
      (void)warm_up.stop();
    }
    {
      ch09::TraceRecorder rec;
      {
        NvtxRange range("ch09 serial phase");
        ch07::run_serial(b, iters, s0);
        CUDALAB_CHECK(cudaDeviceSynchronize());
      }
      write(out + "/trace_serial.json", rec.stop());
    }
    {
      ch09::TraceRecorder rec;
      {
        NvtxRange range("ch09 pipelined phase");
        ch07::run_chunked(b, iters, kChunks, streams);
        CUDALAB_CHECK(cudaDeviceSynchronize());
      }
      write(out + "/trace_pipelined.json", rec.stop());
    }
    return 0;
  } catch (const std::exception& e) {
    std::printf("error: %s\n", e.what());
    return 3;
  }
}
