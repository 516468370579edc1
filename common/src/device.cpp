#include "cudalab/device.hpp"

#include <fmt/format.h>

#include "cudalab/check.hpp"

namespace cudalab {

bool has_gpu() noexcept {
  int count = 0;
  const cudaError_t e = cudaGetDeviceCount(&count);
  if (e != cudaSuccess) {
    (void)cudaGetLastError();
    return false;
  }
  return count > 0;
}

std::string no_gpu_reason() {
  int count = 0;
  const cudaError_t e = cudaGetDeviceCount(&count);
  if (e != cudaSuccess) {
    (void)cudaGetLastError();
    return fmt::format("no GPU: cudaGetDeviceCount says {} ({})", cudaGetErrorName(e),
                       cudaGetErrorString(e));
  }
  return count > 0 ? std::string{} : std::string{"no GPU: 0 CUDA devices"};
}

namespace {
int attribute(cudaDeviceAttr a, int device) {
  int v = 0;
  CUDALAB_CHECK(cudaDeviceGetAttribute(&v, a, device));
  return v;
}
}  // namespace

int current_cc() {
  int device = 0, major = 0, minor = 0;
  CUDALAB_CHECK(cudaGetDevice(&device));
  CUDALAB_CHECK(cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, device));
  CUDALAB_CHECK(cudaDeviceGetAttribute(&minor, cudaDevAttrComputeCapabilityMinor, device));
  return major * 10 + minor;
}

int current_sm_count() {
  int device = 0, sms = 0;
  CUDALAB_CHECK(cudaGetDevice(&device));
  CUDALAB_CHECK(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, device));
  return sms;
}

DeviceInfo device_info(int device) {
  cudaDeviceProp p{};
  CUDALAB_CHECK(cudaGetDeviceProperties(&p, device));
  DeviceInfo d;
  d.id = device;
  d.name = p.name;
  d.cc_major = p.major;
  d.cc_minor = p.minor;
  d.sm_count = p.multiProcessorCount;
  d.max_threads_per_block = p.maxThreadsPerBlock;
  d.max_threads_per_sm = p.maxThreadsPerMultiProcessor;
  d.warp_size = p.warpSize;
  d.regs_per_sm = p.regsPerMultiprocessor;
  d.regs_per_block = p.regsPerBlock;
  d.shared_per_sm = p.sharedMemPerMultiprocessor;
  d.shared_per_block = p.sharedMemPerBlock;
  d.shared_per_block_optin = p.sharedMemPerBlockOptin;
  d.l2_bytes = static_cast<std::size_t>(p.l2CacheSize);
  d.global_bytes = p.totalGlobalMem;
  // Clock fields left cudaDeviceProp in CUDA 13: read them as attributes.
  d.sm_clock_khz = attribute(cudaDevAttrClockRate, device);
  d.mem_clock_khz = attribute(cudaDevAttrMemoryClockRate, device);
  d.bus_width_bits = p.memoryBusWidth;
  CUDALAB_CHECK(cudaDriverGetVersion(&d.driver_version));
  CUDALAB_CHECK(cudaRuntimeGetVersion(&d.runtime_version));
  return d;
}

double DeviceInfo::peak_dram_gbps() const {
  return 2.0 * mem_clock_khz * 1e3 * bus_width_bits / 8.0 / 1e9;
}

int DeviceInfo::fp32_lanes_per_sm() const {
  switch (cc_major) {
    case 6:
      return cc_minor == 0 ? 64 : 128;  // P100 : Pascal consumer
    case 7:
      return 64;  // Volta, Turing
    case 8:
      return cc_minor == 0 ? 64 : 128;  // A100 : Ampere consumer, Ada
    case 9:
      return 128;  // Hopper
    case 10:
    case 12:
      return 128;  // Blackwell
    default:
      return 64;
  }
}

double DeviceInfo::peak_fp32_tflops() const {
  return 2.0 * fp32_lanes_per_sm() * sm_count * sm_clock_khz * 1e3 / 1e12;
}

}  // namespace cudalab
