// Chapter 2 benchmarks, tensor cores (rows: fma.cpp's header):
//   BM_mma/<kind>, BM_wgmma/<bf16|fp8>
// Linked last, so registered last: see the registration below.
#include <string>
#include <vector>

#include "ch02/ch02.hpp"
#include "ch02_bench.hpp"
#include "cudalab/bench.hpp"
#include "cudalab/memory.hpp"

using namespace cudalab;
using namespace cudalab::bench_ch02;

namespace {

ch02::Metric metric_of(ch02::MmaKind k) {
  switch (k) {
    case ch02::MmaKind::fp16:
      return ch02::Metric::fp16;
    case ch02::MmaKind::tf32:
      return ch02::Metric::tf32;
    case ch02::MmaKind::int8:
      return ch02::Metric::int8;
    case ch02::MmaKind::fp8:
      return ch02::Metric::fp8;
    default:
      return ch02::Metric::bf16;
  }
}

void bm_mma(benchmark::State& state, ch02::MmaKind kind) {
  if (!ch02::mma_supported(kind)) {
    state.SkipWithError("this GPU has no such mma.sync (fp8 needs sm_89)");
    return;
  }
  const Grid g = grid_for(16);
  const int iterations = 16384;
  DeviceBuffer<float> out(std::size_t(g.blocks) * g.threads);
  // Checked with a few iterations (exact whatever the accumulator's internal precision), timed
  // with many: the same kernel.
  if (!bench::verify(state, "mma/" + std::to_string(int(kind)), [&] {
        ch02::mma_throughput(kind, out.data(), g.blocks, g.threads, 3);
        const std::vector<float> h = out.to_host();
        for (std::size_t t = 0; t < h.size(); ++t)
          if (h[t] != ch02::mma_expected(kind, 3))
            return "out[" + std::to_string(t) + "] = " + std::to_string(h[t]);
        return std::string();
      }))
    return;
  bench::run(state,
             [&](cudaStream_t s) {
               ch02::mma_throughput(kind, out.data(), g.blocks, g.threads, iterations, s);
             },
             {.flops = ch02::mma_flops(kind, g.blocks, g.threads, iterations)});
  const bool sparse = kind == ch02::MmaKind::bf16_sparse;
  record_peak(state, "TFLOP/s", [&](double sm, double) {
    const double dense = compute_peak(metric_of(kind), sm);
    return sparse && spec() && spec()->sparse_tensor ? 2 * dense : dense;
  });
}

void bm_wgmma(benchmark::State& state, ch02::WgmmaKind kind) {
  if (!ch02::wgmma_supported()) {
    state.SkipWithError("wgmma needs a compute capability 9.0 GPU (sm_90a)");
    return;
  }
  const int blocks = dev().sm_count, threads = 256, iterations = 2048;
  DeviceBuffer<float> out(std::size_t(blocks) * threads);
  if (!bench::verify(state, "wgmma/" + std::to_string(int(kind)), [&] {
        ch02::wgmma_throughput(kind, out.data(), blocks, threads, 3);
        const std::vector<float> h = out.to_host();
        for (std::size_t t = 0; t < h.size(); ++t)
          if (h[t] != ch02::wgmma_expected(kind, 3))
            return "out[" + std::to_string(t) + "] = " + std::to_string(h[t]);
        return std::string();
      }))
    return;
  bench::run(state,
             [&](cudaStream_t s) {
               ch02::wgmma_throughput(kind, out.data(), blocks, threads, iterations, s);
             },
             {.flops = ch02::wgmma_flops(kind, blocks, threads, iterations)});
  const ch02::Metric m = kind == ch02::WgmmaKind::bf16 ? ch02::Metric::bf16 : ch02::Metric::fp8;
  record_peak(state, "TFLOP/s", [m](double sm, double) { return compute_peak(m, sm); });
}

std::string mma_name(ch02::MmaKind k) {
  switch (k) {
    case ch02::MmaKind::fp16:
      return "fp16";
    case ch02::MmaKind::bf16:
      return "bf16";
    case ch02::MmaKind::tf32:
      return "tf32";
    case ch02::MmaKind::int8:
      return "int8";
    case ch02::MmaKind::fp8:
      return "fp8";
    case ch02::MmaKind::bf16_sparse:
      return "bf16_sparse";
  }
  return "?";
}

[[maybe_unused]] const bool kRegistered = [] {
  // The hand-written tensor-core rows last: inline PTX is where a fault that poisons the CUDA
  // context would come from, and then every later row of the process would fail too.
  for (const ch02::MmaKind k :
       {ch02::MmaKind::fp16, ch02::MmaKind::bf16, ch02::MmaKind::tf32, ch02::MmaKind::int8,
        ch02::MmaKind::fp8, ch02::MmaKind::bf16_sparse})
    bench::add("BM_mma/" + mma_name(k), [=](benchmark::State& s) { bm_mma(s, k); });
  bench::add("BM_wgmma/bf16", [](benchmark::State& s) { bm_wgmma(s, ch02::WgmmaKind::bf16); });
  bench::add("BM_wgmma/fp8", [](benchmark::State& s) { bm_wgmma(s, ch02::WgmmaKind::fp8); });
  return true;
}();

}  // namespace
