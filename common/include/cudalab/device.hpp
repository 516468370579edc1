// Device facts read off the GPU, and peaks derived from them (the "spec sheet" of chapter 2).
#pragma once

#include <string>

namespace cudalab {

// True when a CUDA driver and at least one device are usable. Without a driver,
// cudaGetDeviceCount returns an error (insufficient driver): that is the no-GPU signal.
bool has_gpu() noexcept;

// Why there is no GPU ("no CUDA driver: ...", "0 devices"); empty when has_gpu().
std::string no_gpu_reason();

struct DeviceInfo {
  int id = 0;
  std::string name;
  int cc_major = 0, cc_minor = 0;  // compute capability, e.g. 9.0 for Hopper
  int sm_count = 0;
  int max_threads_per_block = 0, max_threads_per_sm = 0;
  int warp_size = 32;
  int regs_per_sm = 0, regs_per_block = 0;
  std::size_t shared_per_sm = 0, shared_per_block = 0, shared_per_block_optin = 0;
  std::size_t l2_bytes = 0, global_bytes = 0;
  int sm_clock_khz = 0, mem_clock_khz = 0, bus_width_bits = 0;
  int driver_version = 0, runtime_version = 0;

  int cc() const { return cc_major * 10 + cc_minor; }
  // 2 (double data rate) x memory clock x bus width / 8: the datasheet-style DRAM bandwidth.
  double peak_dram_gbps() const;
  // FP32 FMA lanes per SM for this architecture x 2 FLOP x SMs x clock.
  int fp32_lanes_per_sm() const;
  double peak_fp32_tflops() const;
};

// All of it, from cudaGetDeviceProperties: a slow call (it queries every attribute), for reports
// and tests, not for a launcher that runs per call.
DeviceInfo device_info(int device = 0);

// Compute capability of the CURRENT device, e.g. 90: two attribute queries (microseconds), cheap
// enough for a launcher's run-time dispatch ("is this an sm_90 device?").
int current_cc();

// Streaming multiprocessors of the CURRENT device: one attribute query, for launchers that size a
// grid to fill the GPU (a wave of resident blocks, split-K slices).
int current_sm_count();

}  // namespace cudalab
