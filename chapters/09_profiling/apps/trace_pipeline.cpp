// ch09_trace_pipeline OUT_DIR: chapter 7's overlap lab recorded with CUPTI (trace/), twice: the
// serial pipeline on one stream (copy in, kernel, copy out) and the chunked pipeline on three
// streams (exercise 7.1's reference). Writes OUT_DIR/trace_serial.json and
// OUT_DIR/trace_pipelined.json (Chrome trace: open them in ui.perfetto.dev);
// tools/trace_check.py reads them and finds where the copies overlap the kernels.
// Without a GPU: "skipped: <reason>", exit 0. Exit 2: usage; 3: a CUDA or CUPTI error.
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

constexpr std::size_t kN = std::size_t{1} << 24;  // 64 MiB each way: copies of ~3 ms over PCIe
constexpr int kIters = 16;                        // the kernel's share, of the order of a copy
constexpr int kChunks = 8;

void write(const std::string& path, const std::vector<cudalab::ch09::TraceEvent>& events) {
  std::ofstream f(path);
  f << cudalab::ch09::chrome_trace_json(events);
  if (!f) throw std::runtime_error("cannot write " + path);
  std::printf("%s: %zu events\n", path.c_str(), events.size());
}

}  // namespace

int main(int argc, char** argv) {
  using namespace cudalab;
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
    ch07::run_serial(b, kIters, s0);  // warm-up: module loading and first-touch costs off the trace
    CUDALAB_CHECK(cudaDeviceSynchronize());
    {
      ch09::TraceRecorder rec;
      {
        NvtxRange range("ch09 serial phase");
        ch07::run_serial(b, kIters, s0);
        CUDALAB_CHECK(cudaDeviceSynchronize());
      }
      write(out + "/trace_serial.json", rec.stop());
    }
    {
      ch09::TraceRecorder rec;
      {
        NvtxRange range("ch09 pipelined phase");
        ch07::run_chunked(b, kIters, kChunks, streams);
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
