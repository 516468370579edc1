// A load of known shape for the observability demos: `--blocks` blocks (default: 4 per SM, the
// whole GPU) of `--threads` threads spinning on FMAs for `--seconds`. `--blocks 1` is the
// utilization trap: NVML reports ~100 % "GPU utilization" while one SM of 132 works.
//
//   ch12_load [--blocks N] [--threads 256] [--seconds 10] [--json OUT]
// Prints (and writes) {"blocks", "threads", "sm_count", "sms_busy", "seconds"}. Exit status: 0,
// 2 for a bad argument, 77 without a GPU.
#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <exception>
#include <fstream>
#include <string>

#include "args.hpp"
#include "ch12/ch12.hpp"
#include "cudalab/check.hpp"
#include "cudalab/device.hpp"
#include "cudalab/memory.hpp"

using namespace cudalab;
using namespace cudalab::ch12;

int main(int argc, char** argv) {
  try {
    const Args a(argc, argv,
                 {{"blocks", "0"}, {"threads", "256"}, {"seconds", "10"}, {"json", ""}});
    const double seconds = a.real("seconds");
    if (!(seconds > 0 && seconds <= 3600))
      throw std::invalid_argument("--seconds: must be in (0, 3600]");
    const std::uint64_t want_blocks = a.u64("blocks"), threads64 = a.u64("threads");
    if (want_blocks > 0x7fffffffull) throw std::invalid_argument("--blocks: at most 2^31 - 1");
    if (threads64 == 0 || threads64 > 1024)
      throw std::invalid_argument("--threads: must be in [1, 1024]");
    if (!has_gpu()) {
      std::printf("ch12_load: %s — no load to run\n", no_gpu_reason().c_str());
      return 77;
    }
    const DeviceInfo d = device_info();
    const auto sms = static_cast<unsigned>(d.sm_count);
    const auto blocks = static_cast<unsigned>(want_blocks ? want_blocks : 4ull * sms);
    const auto threads = static_cast<unsigned>(threads64);
    DeviceBuffer<float> sink(blocks);
    // Kernels of at most 1 s each: a long single kernel would trip a display watchdog elsewhere and
    // cannot be interrupted; back to back they keep the GPU as busy.
    const auto t0 = std::chrono::steady_clock::now();
    for (double left = seconds; left > 0; left -= 1.0)
      busy(blocks, threads, std::min(left, 1.0) * 1e3, sink.data());
    CUDALAB_CHECK(cudaDeviceSynchronize());
    const double took =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    const std::string json = fmt::format(
        R"({{"blocks": {}, "threads": {}, "sm_count": {}, "sms_busy": {}, "seconds": {:.3f}}})",
        blocks, threads, sms, std::min(blocks, sms), took);
    std::printf("%s\n", json.c_str());
    if (!a.str("json").empty()) {
      std::ofstream f(a.str("json"));
      f << json << "\n";
      if (!f) throw std::invalid_argument("--json " + a.str("json") + ": cannot write");
    }
    return 0;
  } catch (const std::invalid_argument& e) {
    std::fprintf(stderr, "ch12_load: %s\n", e.what());
    return 2;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "ch12_load: %s\n", e.what());
    return 1;
  }
}
