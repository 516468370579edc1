// Google Benchmark helpers for GPU kernels.
//
//  * Manual time from CUDA events: each iteration records two events around the work and hands
//    the elapsed time to SetIterationTime, so the reported time is the GPU's, not the host's.
//  * Counters: bytes and FLOPs per iteration give GB/s and TFLOP/s at the median iteration time
//    (also exported: median_us). A ceiling measured in the same run (device-to-device copy
//    bandwidth, or the vendor library's row) gives "% of ceiling" that holds on a noisy machine.
//  * Context: GPU, driver, clocks, temperature and throttle reasons (NVML when built with it) go
//    into the JSON, so a throttled run can be told apart.
#pragma once

#include <benchmark/benchmark.h>
#include <cuda_runtime_api.h>

#include <functional>

namespace cudalab::bench {

struct Work {
  double bytes = 0;  // bytes one iteration must move through device memory (reads + writes)
  double flops = 0;  // floating-point operations of one iteration
};

// Runs `work(stream)` once per benchmark iteration (after `warmup` untimed runs), timed by events.
// Sets counters: median_us, GB/s and/or TFLOP/s, and pct_of_copy when bytes > 0.
void run(benchmark::State& state, const std::function<void(cudaStream_t)>& work, Work per_iteration,
         int warmup = 2);

// Device-to-device cudaMemcpy bandwidth (read + write counted), measured once per process on
// 1 GiB (median of 20): the ceiling memory-bound kernels are compared with in the same run.
double copy_ceiling_gbps();

// Adds a counter "pct_of_<name>" = 100 * value / reference when reference > 0.
void add_percent(benchmark::State& state, const char* name, double value, double reference);

// Adds GPU context (name, cc, SMs, clocks, driver, NVML readings when available) to the JSON.
void add_context();

// main() of every bench executable: without a GPU it prints why and exits 0 (nothing to measure).
int main(int argc, char** argv);

}  // namespace cudalab::bench

#define CUDALAB_BENCH_MAIN() \
  int main(int argc, char** argv) { return ::cudalab::bench::main(argc, argv); }
