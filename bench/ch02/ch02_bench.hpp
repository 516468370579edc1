// Chapter 2 benchmarks, what every topic file uses: the device and its spec sheet, the grid of W
// warps per SM, and the counters each row adds beside its clock-adjusted peak.
#pragma once

#include <algorithm>

#include "ch02/ch02.hpp"
#include "ch02/spec.hpp"
#include "cudalab/bench.hpp"
#include "cudalab/device.hpp"

namespace cudalab::bench_ch02 {

// The warps-per-SM ladder of the FMA and bandwidth rows.
inline constexpr int kWarps[] = {1, 2, 4, 8, 16, 32, 64};

inline const DeviceInfo& dev() {
  static const DeviceInfo d = device_info();
  return d;
}
inline const ch02::GpuSpec* spec() {
  static const ch02::GpuSpec* g = ch02::find_gpu(dev().name);
  return g;
}

// Resident warps per SM -> (blocks, threads): one wave that fills every SM with W warps.
struct Grid {
  int blocks, threads;
};
inline Grid grid_for(int warps_per_sm, int unit = 32) {
  const int threads = std::min(warps_per_sm * 32, 1024);
  const int per_sm = std::max(1, warps_per_sm * 32 / threads);
  return {dev().sm_count * per_sm, std::max(threads, unit)};
}

// The occupancy a row really ran at: the W warps per SM it asked for, or fewer when registers
// or the block limit keep that many from being resident (the grid then runs in waves).
inline void record_occupancy(benchmark::State& state, int warps_asked, int resident_capacity) {
  state.counters["warps_per_sm"] = warps_asked;
  state.counters["resident_warps_per_sm"] = std::min(warps_asked, resident_capacity);
}

// Records the clock, power, temperature and reasons, and the ratio to the peak at the SM clock the
// row ran at: bench::run's median of the readings taken while its kernels ran (sm_mhz_during),
// else a reading after the timed loop, else cudaDeviceProp's maximum.
// `peak_of_clock(sm_mhz, mem_mhz)` returns the peak in the row's unit.
template <class F>
void record_peak(benchmark::State& state, const char* unit_counter, F peak_of_clock) {
  const bench::GpuSample g = bench::sample_gpu();
  const auto during = state.counters.find("sm_mhz_during");
  const double sm = during != state.counters.end() && during->second > 0 ? double(during->second)
                    : g.ok && g.sm_mhz > 0                               ? g.sm_mhz
                                           : dev().sm_clock_khz / 1000.0;
  const double mem = g.ok && g.mem_mhz > 0 ? g.mem_mhz : dev().mem_clock_khz / 1000.0;
  state.counters["sm_mhz"] = sm;
  state.counters["mem_mhz"] = mem;
  state.counters["nvml"] = g.ok ? 1 : 0;
  if (g.ok) {
    state.counters["power_w"] = g.power_w;
    state.counters["temp_c"] = g.temperature_c;
    state.counters["clock_event_reasons"] = static_cast<double>(g.clock_event_reasons);
  }
  const auto it = state.counters.find(unit_counter);
  const double peak = peak_of_clock(sm, mem);
  if (it == state.counters.end() || peak <= 0) return;
  const ch02::GuardVerdict v = ch02::guard(it->second, peak);
  state.counters["peak"] = peak;
  state.counters["pct_of_peak"] = 100 * v.ratio;
  state.counters["guard_ok"] = v.ok ? 1 : 0;
  if (!v.ok) state.SetLabel("ABOVE 102% OF PEAK: " + v.what);
}

inline double compute_peak(ch02::Metric m, double sm_mhz) {
  return spec() ? ch02::peak_at_clock(*spec(), m, sm_mhz) : 0.0;
}

}  // namespace cudalab::bench_ch02
