// Chapter 2 benchmarks: this GPU's measured card, row by row, each beside its clock-adjusted peak
// (the spec-sheet calculator, ch02/spec.hpp, at the SM clock NVML reads while the row's kernels
// run) and, where one exists, the vendor library in the same run.
//   ./build/gpu/bench/bench_ch02 --benchmark_out=ch02.json --benchmark_out_format=json
// A file per topic, registered in this order: fma.cpp, cublas.cpp, latency.cpp, bandwidth.cpp,
// tensor_cores.cpp (last: see there); the rows of all of them are listed here.
//
//   BM_fma_f32/ilp:I/warps:W      FMA throughput, I independent chains, W resident warps per SM
//   BM_fma_f64/ilp:I/warps:W      (the "warps hide latency" heatmap; exercise 2.1)
//   BM_sgemm_cublas/8192          cublasSgemm, FP32 CUDA cores (the vendor row of 2.1)
//   BM_gemm_cublas/<type>/8192    cublasGemmEx TN, tf32 / fp16 / bf16 (fp32 out) / int8 (int32 out)
//   BM_mma/<kind>                 mma.sync issue rate per type, and 2:4 sparse bf16 (mma.sp)
//   BM_wgmma/<bf16|fp8>           wgmma m64n256 from shared memory (sm_90a)
//   BM_chase/bytes:B              pointer-chase latency over a B-byte ring (counters: cycles, ns)
//   BM_chase_shared/bytes:16384   the same in shared memory
//   BM_dram_read/warps:W          exercise 2.3 beside cudaMemcpy of the same bytes (interleaved)
//   BM_dram_write/warps:W, BM_dram_copy/warps:W, BM_dram_copy/tiles, BM_memcpy_d2d
//   BM_l2_read/bytes:B/warps:W    L2-resident reads (ld.global.cg)
//   BM_l1_read/warps:W            L1-resident reads, BM_smem/stride:S/warps:W the bank ladder
//
// Counters every row adds (besides GB/s or TFLOP/s): sm_mhz (sm_mhz_during, the median of NVML
// readings taken while the row's kernels ran) and mem_mhz (NVML after the loop; nvml = 0 when
// they are the maximum clocks of cudaDeviceProp instead), power_w, temp_c,
// clock_event_reasons (NVML bits), peak (the clock-adjusted peak in the row's unit), pct_of_peak,
// guard_ok (0: above 102% of the peak, a wrong count: the label says so); warps_per_sm (asked)
// and resident_warps_per_sm (what the occupancy API says one SM holds of it). Rows without a
// published or derivable peak (L2) have no peak counters.
#include <string>
#include <vector>

#include "ch02/ch02.hpp"
#include "ch02_bench.hpp"
#include "cudalab/bench.hpp"
#include "cudalab/memory.hpp"

using namespace cudalab;
using namespace cudalab::bench_ch02;

namespace {

template <class T>
void bm_fma(benchmark::State& state, int ilp, int warps) {
  const Grid g = grid_for(warps);
  const double threads = double(g.blocks) * g.threads;
  // ~4e10 FLOP per launch (about a millisecond at the peak), within the exact-result range.
  const int iterations =
      static_cast<int>(std::clamp(4e10 / (2.0 * ilp * threads), 64.0, double(1 << 20)));
  DeviceBuffer<T> out(static_cast<std::size_t>(threads));
  auto work = [&](cudaStream_t s) {
    if constexpr (sizeof(T) == 4)
      ch02::fma_throughput_f32(out.data(), g.blocks, g.threads, ilp, iterations, 1.0f, 1.0f, s);
    else
      ch02::fma_throughput_f64(out.data(), g.blocks, g.threads, ilp, iterations, 1.0, 1.0, s);
  };
  const std::string key = std::string(sizeof(T) == 4 ? "fma_f32/" : "fma_f64/") +
                          std::to_string(ilp) + "/" + std::to_string(warps);
  if (!bench::verify(state, key, [&] {
        work(nullptr);
        const std::vector<T> h = out.to_host();
        for (std::size_t t = 0; t < h.size(); ++t)
          if (static_cast<double>(h[t]) != ch02::fma_expected(t, ilp, iterations))
            return "out[" + std::to_string(t) + "] = " + std::to_string(double(h[t])) +
                   ", expected " + std::to_string(ch02::fma_expected(t, ilp, iterations));
        return std::string();
      }))
    return;
  bench::run(state, work, {.flops = ch02::fma_flops(g.blocks, g.threads, ilp, iterations)});
  record_occupancy(state, warps, ch02::fma_resident_warps(sizeof(T) == 8, ilp, g.threads));
  record_peak(state, "TFLOP/s", [](double sm, double) {
    return compute_peak(sizeof(T) == 4 ? ch02::Metric::fp32 : ch02::Metric::fp64, sm);
  });
}

[[maybe_unused]] const bool kRegistered = [] {
  for (const int ilp : {1, 2, 4, 8})
    for (const int w : kWarps)
      bench::add("BM_fma_f32/ilp:" + std::to_string(ilp) + "/warps:" + std::to_string(w),
                 [=](benchmark::State& s) { bm_fma<float>(s, ilp, w); });
  for (const int ilp : {1, 2, 4, 8})
    for (const int w : {4, 16, 32})
      bench::add("BM_fma_f64/ilp:" + std::to_string(ilp) + "/warps:" + std::to_string(w),
                 [=](benchmark::State& s) { bm_fma<double>(s, ilp, w); });
  return true;
}();

}  // namespace

CUDALAB_BENCH_MAIN();
