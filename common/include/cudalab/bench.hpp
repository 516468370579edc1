// Google Benchmark helpers for GPU kernels.
//
//  * Manual time from CUDA events: each iteration records two events around the work and hands
//    the elapsed time to SetIterationTime, so the reported time is the GPU's, not the host's.
//  * Counters: bytes and FLOPs per iteration give GB/s and TFLOP/s at the median iteration time
//    (also exported: median_us). A ceiling measured in the same run (device-to-device copy
//    bandwidth, or the vendor library's row) gives "% of ceiling" that holds on a noisy machine.
//  * Context: GPU, driver, clocks, temperature and throttle reasons (NVML when built with it) go
//    into the JSON, so a throttled run can be told apart.
//  * Checked rows: every row checks its output once before it is timed (verify): a wrong result
//    makes the row an error ("wrong result: ..."), never a number.
//  * Interleaved ratios: run_vs times a row's work and its base (the vendor library, or the row it
//    is compared with) alternately in every iteration, so clock changes and power caps hit both
//    alike; the row reports vs_base = the median of the per-iteration ratios base time / time.
//    With --benchmark_repetitions=5 the report takes the median and the spread of the five.
#pragma once

#include <benchmark/benchmark.h>
#include <cuda_runtime_api.h>

#include <cstddef>
#include <functional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "cudalab/check.hpp"
#include "cudalab/compare.hpp"
#include "cudalab/memory.hpp"

namespace cudalab::bench {

struct Work {
  double bytes = 0;  // bytes one iteration must move through device memory (reads + writes)
  double flops = 0;  // floating-point operations of one iteration
};

// Runs `work(stream)` once per benchmark iteration (after `warmup` untimed runs), timed by events.
// Sets counters: median_us, GB/s and/or TFLOP/s, and pct_of_copy when bytes > 0.
void run(benchmark::State& state, const std::function<void(cudaStream_t)>& work, Work per_iteration,
         int warmup = 2);

// Like run(), with `base` timed beside `work` in every iteration (ABBA order: work first in even
// iterations, base first in odd ones, so neither always runs on a warmer GPU). The iteration time
// and the counters of run() are the work's; added: base_us (the base's median), base_GB/s or
// base_TFLOP/s (the same bytes and FLOPs at the base's time) and vs_base = median over iterations
// of base_time / work_time (> 1: the work is faster). Why not separate rows with
// --benchmark_enable_random_interleaving: that shuffles whole repetitions (seconds apart, each
// with its own set-up), in Google Benchmark 1.7 and 1.8 alike; pairing inside one row puts the two
// measurements microseconds apart.
void run_vs(benchmark::State& state, const std::function<void(cudaStream_t)>& work,
            const std::function<void(cudaStream_t)>& base, Work per_iteration, int warmup = 2);

// A cudaMemcpy device-to-device that moves `moved_bytes` through DRAM (half read, half written):
// the base of a memory-bound row, so that vs_base is the row's GB/s over a copy's GB/s for the
// same bytes. Callable as run_vs's base.
class CopyBase {
 public:
  explicit CopyBase(double moved_bytes);
  void operator()(cudaStream_t stream) const;

 private:
  DeviceBuffer<unsigned char> src_;
  mutable DeviceBuffer<unsigned char> dst_;  // written by the const call operator
};

// A kernel that reads `read_bytes` once from device memory and writes nothing but one word per
// block: the base of a read-only row (a GEMV reads its weights and writes a vector), so that
// vs_base is the row's GB/s over a plain read's of the same bytes. A copy is the wrong yardstick
// for such a row when the bytes are near the L2's size: the copy's writes land in the write-back
// L2 inside its timed window, so its bytes "move" faster than any read-only sweep of them can.
// 16-byte loads over a grid-stride loop, four in flight per thread, one wave of resident blocks;
// the bytes are i % 251 (byte i), so a sum that is right means every byte was read once. Callable
// as run_vs's base.
class ReadBase {
 public:
  explicit ReadBase(double read_bytes);
  void operator()(cudaStream_t stream) const;
  // Runs the read once (synchronously) and returns "" when the blocks' sum is the sum of every
  // byte (mod 2^32), else what is wrong: the check of a row that times it (bench::verify).
  std::string check() const;
  std::size_t bytes() const noexcept { return src_.bytes(); }

 private:
  DeviceBuffer<unsigned char> src_;
  mutable DeviceBuffer<unsigned> partial_;  // one sum per block, written by the call operator
  unsigned blocks_ = 0;
};

// Checks a row's output once before it is timed. `check` runs the work once itself and returns ""
// when the output is right, else what is wrong; then the row becomes an error row
// (state.SkipWithError("wrong result: " + what)) and verify returns false: return at once. The
// verdict is kept per `key` (the row's name) for the life of the process, so the repetitions of
// a row check once. An exception from `check` is a wrong result too.
bool verify(benchmark::State& state, const std::string& key,
            const std::function<std::string()>& check);

// "" when `got` matches `want` within `tol`, else compare()'s message (first mismatch, counts).
template <class T>
std::string mismatch(const std::vector<T>& got, const std::vector<T>& want, Tolerance tol = {},
                     std::string_view what = "output") {
  const CompareResult r = compare(got, want, tol, what);
  return r.ok() ? std::string() : r.message;
}

// Synchronous copy of n device elements to the host.
template <class T>
std::vector<T> download(const T* device, std::size_t n) {
  std::vector<T> h(n);
  if (n > 0) CUDALAB_CHECK(cudaMemcpy(h.data(), device, n * sizeof(T), cudaMemcpyDeviceToHost));
  return h;
}

// Device-to-device cudaMemcpy bandwidth (read + write counted), measured once per process on
// 1 GiB (median of 20): the ceiling memory-bound kernels are compared with in the same run.
double copy_ceiling_gbps();

// Adds a counter "pct_of_<name>" = 100 * value / reference when reference > 0.
void add_percent(benchmark::State& state, const char* name, double value, double reference);

// Adds GPU context (name, cc, SMs, clocks, driver, NVML readings when available, MIG state) to
// the JSON.
void add_context();

// One NVML reading of the device in use (ok = false without NVML or when it cannot be read):
// what a row that states a clock-adjusted ratio records right after its timed loop.
struct GpuSample {
  bool ok = false;
  double sm_mhz = 0, mem_mhz = 0, temperature_c = 0, power_w = 0;
  unsigned long long clock_event_reasons = 0;  // NVML clocks event reason bits
};
GpuSample sample_gpu();

// NVML's clock-event reasons (nvmlClocksEventReason*, the bits of
// nvmlDeviceGetCurrentClocksEventReasons), by NVML's names. With NVML, every row records
// clock_reasons_before / clock_reasons_after (the masks, read just before its first timed
// iteration and after its last) and sm_mhz_before / sm_mhz_after; scripts/report.py flags a row
// whose clock dropped or whose reasons held a slowdown. run and run_vs also record sm_mhz_during,
// the median of SM clock readings taken while the row's kernels ran (what a clock-adjusted
// ratio divides by).
struct ClockReason {
  unsigned long long bit;
  const char* name;
};
inline constexpr ClockReason kClockReasons[] = {{0x1, "GpuIdle"},
                                                {0x2, "ApplicationsClocksSetting"},
                                                {0x4, "SwPowerCap"},
                                                {0x8, "HwSlowdown"},
                                                {0x10, "SyncBoost"},
                                                {0x20, "SwThermalSlowdown"},
                                                {0x40, "HwThermalSlowdown"},
                                                {0x80, "HwPowerBrakeSlowdown"},
                                                {0x100, "DisplayClockSetting"}};
// The reasons that hold the clock below what the load asks (idle, sync boost and the display
// clock setting do not).
inline constexpr unsigned long long kClockSlowdownReasons = 0x2 | 0x4 | 0x8 | 0x20 | 0x40 | 0x80;
// "none", or the names joined by commas; an unknown bit as hex ("GpuIdle,0x1000").
std::string clock_reasons_text(unsigned long long mask);

// The context note of a run on a MIG instance: "" when MIG is off; otherwise what the figures
// are (the instance's SMs and memory, not the GPU's).
std::string mig_note(bool mig_enabled, int instance_sms, std::size_t instance_bytes);

// main() of every bench executable: without a GPU it prints why and exits 0 (nothing to measure).
int main(int argc, char** argv);

// Registers a row timed by hand (bench::run sets the manual time), reported in `unit`
// (microseconds unless a row's times are milliseconds long): the one way every chapter's
// benchmark file adds a row. Returns the row, for settings such as ->Iterations(n) or
// ->ArgNames({...})->ArgsProduct({...}) (Google Benchmark then appends "/name:value" to the row's
// name, as it does for BENCHMARK).
template <class F>
benchmark::internal::Benchmark* add(const std::string& name, F&& f,
                                    benchmark::TimeUnit unit = benchmark::kMicrosecond) {
  return benchmark::RegisterBenchmark(name.c_str(), std::forward<F>(f))
      ->UseManualTime()
      ->Unit(unit);
}

}  // namespace cudalab::bench

#define CUDALAB_BENCH_MAIN()                   \
  int main(int argc, char** argv) {            \
    return ::cudalab::bench::main(argc, argv); \
  }
