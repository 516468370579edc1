// ch03_what_compiled — prints what nvcc built and what this GPU runs (exercise 3.7).
//   ./build/<preset>/chapters/03_first_kernels/ch03_what_compiled
#include <fmt/format.h>

#include <cstdio>
#include <exception>

#include "ch03/ch03.hpp"
#include "cudalab/device.hpp"

int main(int argc, char** argv) {
  using namespace cudalab;
  if (argc > 1) {
    fmt::print(stderr, "{}: takes no arguments (got '{}')\n", argv[0], argv[1]);
    return 2;
  }
  try {
    if (!has_gpu()) {
      fmt::print(
          "{}\nNothing runs here; the fatbin still holds the code for the architectures in "
          "CMAKE_CUDA_ARCHITECTURES (cuobjdump --list-elf <binary> lists them).\n",
          no_gpu_reason());
      return 0;
    }
    const DeviceInfo d = device_info();
    fmt::print("GPU 0: {} (compute capability {}.{}, {} SMs), driver {}, runtime {}\n", d.name,
               d.cc_major, d.cc_minor, d.sm_count, d.driver_version, d.runtime_version);
    const auto show = [&](const char* name, ch03::Probe p) {
      const ch03::KernelInfo k = ch03::probe_kernel_info(p);
      fmt::print("  {:<18} {}\n", name, ch03::describe(k));
      if (k.binary_version != d.cc())
        fmt::print(
            "  {:<18} note: SASS for sm_{} runs on this sm_{} GPU (same major version is "
            "binary-compatible{})\n",
            "", k.binary_version, d.cc(),
            k.binary_version == k.ptx_version ? ", or JIT from PTX" : "");
    };
    show("probe_simple", ch03::Probe::kSimple);
    show("probe_local_array", ch03::Probe::kLocalArray);
    fmt::print(
        "A binary without sm_{} SASS or compatible PTX would fail every launch with "
        "cudaErrorNoKernelImageForDevice.\n",
        d.cc());
  } catch (const std::exception& e) {
    std::fprintf(stderr, "error: %s\n", e.what());
    return 1;
  }
  return 0;
}
