// ch02_sheet: the spec-sheet calculator on the command line (no GPU needed).
//
//   ch02_sheet                       every GPU of the table, as JSON
//   ch02_sheet --gpu H100-SXM        one GPU (key or cudaDeviceProp name), as JSON
//   ch02_sheet --littles BW_GBps LATENCY_ns SMS BYTES_PER_THREAD MAX_THREADS_PER_SM
//                                    Little's law (exercise 2.4) as JSON
//   ch02_sheet --list                the known keys, one per line
// Usage errors and unknown GPUs: a message on stderr and exit status 2.
#include <fmt/format.h>

#include <cstdio>
#include <cstdlib>
#include <exception>
#include <stdexcept>
#include <string>
#include <string_view>

#include "ch02/ch02.hpp"
#include "ch02/spec.hpp"

namespace {

int usage(const std::string& why) {
  std::fprintf(stderr,
               "ch02_sheet: %s\nusage: ch02_sheet [--gpu KEY | --list | --littles BW_GBps "
               "LATENCY_ns SMS BYTES_PER_THREAD MAX_THREADS_PER_SM]\n",
               why.c_str());
  return 2;
}

bool number(const char* s, double& out) {
  char* end = nullptr;
  out = std::strtod(s, &end);
  return end != s && *end == '\0';
}

}  // namespace

int main(int argc, char** argv) {
  using namespace cudalab::ch02;
  try {
    if (argc == 1) {
      std::fputs(table_json().c_str(), stdout);
      return 0;
    }
    const std::string_view cmd = argv[1];
    if (cmd == "--list" && argc == 2) {
      for (const GpuSpec& g : gpu_table()) std::printf("%.*s\n", int(g.key.size()), g.key.data());
      return 0;
    }
    if (cmd == "--gpu") {
      if (argc != 3) return usage("--gpu takes one GPU name");
      const GpuSpec* g = find_gpu(argv[2]);
      if (g == nullptr)
        return usage(fmt::format("unknown GPU '{}' (known: {})", argv[2], known_gpus()));
      std::printf("%s\n", sheet_json(*g).c_str());
      return 0;
    }
    if (cmd == "--littles") {
      if (argc != 7) return usage("--littles takes five numbers");
      double v[5];
      const char* names[5] = {"BW_GBps", "LATENCY_ns", "SMS", "BYTES_PER_THREAD",
                              "MAX_THREADS_PER_SM"};
      for (int i = 0; i < 5; ++i)
        if (!number(argv[2 + i], v[i]))
          return usage(fmt::format("{} '{}' is not a number", names[i], argv[2 + i]));
      const LittlesLaw r =
          littles_law(v[0], v[1], static_cast<int>(v[2]), v[3], static_cast<int>(v[4]));
      std::printf(
          "{\"bytes_in_flight\": %.6g, \"bytes_per_sm\": %.6g, \"threads_per_sm\": "
          "%.6g, \"occupancy\": %.6g}\n",
          r.bytes_in_flight, r.bytes_per_sm, r.threads_per_sm, r.occupancy);
      return 0;
    }
    return usage(fmt::format("unknown argument '{}'", argv[1]));
  } catch (const std::invalid_argument& e) {
    return usage(e.what());
  } catch (const std::exception& e) {
    std::fprintf(stderr, "ch02_sheet: %s\n", e.what());
    return 1;
  }
}
