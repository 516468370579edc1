// Chapter 5 benchmarks, part 2: stencil tiling, unrolling, divergence, occupancy, fusion and
// histogram (exercises 5.5 - 5.10). Every input is >= 256 MiB (far above the 60 MB L2); the
// copy ceiling (pct_of_copy) is measured in the same run by cudalab::bench.
//   ./build/gpu/bench/bench_ch05 --benchmark_filter='stencil|unroll|divergence|occupancy|fusion|histogram'
//
// Rows and what to compare (README, "Tiling / unrolling / ..."):
//   BM_stencil/<v>/<r>          v = 0 naive, 1 tiled; r = radius. 8n bytes, 2 (2r+1)^2 n FLOPs.
//                               tiled vs naive at r = 3 (the reuse grows with r).
//   BM_unroll/<v>               v = ch05::UnrollVariant 0..3. 12n bytes. Counters regs, local_bytes.
//                               rolled -> unrolled -> unrolled_restrict -> vectorized_float4.
//   BM_divergence/<v>           v = 0 divergent, 1 warp_uniform. Compute-bound: expect ~2x.
//   BM_occupancy/<p>/<t>/<KiB>  probe p (ch05::OccupancyProbe), t threads, KiB of dynamic shared
//                               memory per block. Counters blocks_per_sm, occupancy, regs.
//   BM_fusion/<v>               v = 0 three_kernels (24n bytes), 1 fused (8n): expect ~3x in time.
//   BM_histogram/<v>/<in>/<bins> v = 0 global_atomics, 1 privatized; in = 0 uniform, 1 skewed.
//   BM_histogram_cub/<in>/<bins> cub::DeviceHistogram::HistogramEven on the same input.
#include <cstdint>
#include <string>
#include <vector>

#include "ch05/divergence.hpp"
#include "ch05/fusion.hpp"
#include "ch05/histogram.hpp"
#include "ch05/occupancy.hpp"
#include "ch05/stencil.hpp"
#include "ch05/unroll.hpp"
#include "ch05_patterns_more_cub.hpp"
#include "cudalab/bench.hpp"
#include "cudalab/device.hpp"
#include "cudalab/device_fill.hpp"
#include "cudalab/memory.hpp"

using namespace cudalab;

namespace {

constexpr std::size_t kMoreN = std::size_t{1} << 26;  // 2^26 floats = 256 MiB per array
constexpr int kImage = 8192;                          // 8192 x 8192 floats = 256 MiB

void BM_stencil(benchmark::State& state) {
  const auto v = static_cast<ch05::ConvVariant>(state.range(0));
  const int r = static_cast<int>(state.range(1));
  state.SetLabel(std::string(v == ch05::ConvVariant::kNaive ? "naive" : "tiled") + "_r" + std::to_string(r));
  const std::size_t n = std::size_t{kImage} * kImage;
  const int k = 2 * r + 1;
  auto in = uniform_device_buffer(n, 11, -1.0f, 1.0f), out = DeviceBuffer<float>(n);
  auto filter = uniform_device_buffer(static_cast<std::size_t>(k) * k, 12, 0.0f, 1.0f / (k * k));
  bench::run(state, [&](cudaStream_t s) {
    ch05::conv2d(in.data(), out.data(), kImage, kImage, filter.data(), r, v, s);
  }, {.bytes = 8.0 * n, .flops = 2.0 * k * k * n});
}

void BM_unroll(benchmark::State& state) {
  const auto v = static_cast<ch05::UnrollVariant>(state.range(0));
  state.SetLabel(ch05::to_string(v));
  auto x = uniform_device_buffer(kMoreN, 21, -1.0f, 1.0f), y = uniform_device_buffer(kMoreN, 22, -1.0f, 1.0f);
  const ch05::KernelResources r = ch05::saxpy_unrolled_resources(v);
  state.counters["regs"] = r.num_regs;
  state.counters["local_bytes"] = static_cast<double>(r.local_bytes);
  bench::run(state, [&](cudaStream_t s) { ch05::saxpy_unrolled(1.0001f, x.data(), y.data(), kMoreN, v, s); },
             {.bytes = 12.0 * kMoreN, .flops = 2.0 * kMoreN});
}

void BM_divergence(benchmark::State& state) {
  const auto v = static_cast<ch05::DivergenceVariant>(state.range(0));
  state.SetLabel(ch05::to_string(v));
  auto in = uniform_device_buffer(kMoreN, 31, -10.0f, 10.0f);
  DeviceBuffer<float> out(kMoreN);
  // Useful FLOPs: one FMA (2 FLOPs) per step on one path per element; the divergent version
  // spends issue slots on the masked path too, which is what its lower TFLOP/s shows.
  bench::run(state, [&](cudaStream_t s) { ch05::branchy_transform(in.data(), out.data(), kMoreN, v, s); },
             {.bytes = 8.0 * kMoreN, .flops = 2.0 * ch05::kDivergenceSteps * kMoreN});
}

void BM_occupancy(benchmark::State& state) {
  const auto p = static_cast<ch05::OccupancyProbe>(state.range(0));
  const int threads = static_cast<int>(state.range(1));
  const std::size_t dyn = static_cast<std::size_t>(state.range(2)) * 1024;
  state.SetLabel(std::string(ch05::to_string(p)) + "_t" + std::to_string(threads) + "_dyn" +
                 std::to_string(state.range(2)) + "K");
  auto x = uniform_device_buffer(kMoreN, 41, -1.0f, 1.0f);
  DeviceBuffer<float> y(kMoreN);
  const ch05::ProbeResources r = ch05::probe_resources(p);
  const int blocks = ch05::probe_blocks_per_sm(p, threads, dyn);
  const DeviceInfo d = device_info();
  state.counters["regs"] = r.num_regs;
  state.counters["local_bytes"] = static_cast<double>(r.local_bytes);
  state.counters["smem_per_block"] = static_cast<double>(r.static_smem + dyn);
  state.counters["blocks_per_sm"] = blocks;
  state.counters["occupancy"] = static_cast<double>(blocks) * ((threads + 31) / 32) /
                                (d.max_threads_per_sm / 32);
  bench::run(state, [&](cudaStream_t s) {
    ch05::run_occupancy_probe(p, x.data(), y.data(), kMoreN, threads, dyn, s);
  }, {.bytes = 8.0 * kMoreN});
}

void BM_fusion(benchmark::State& state) {
  const auto v = static_cast<ch05::FusionVariant>(state.range(0));
  state.SetLabel(ch05::to_string(v));
  const std::size_t rows = kImage, cols = kImage, n = rows * cols;
  auto x = uniform_device_buffer(n, 51, -1.0f, 1.0f), bias = uniform_device_buffer(cols, 52, -1.0f, 1.0f);
  DeviceBuffer<float> y(n);
  // The bytes each variant really moves: three kernels 3 x 8n, fused 8n (+ the bias row).
  const double bytes = (v == ch05::FusionVariant::kFused ? 8.0 : 24.0) * n + 4.0 * cols;
  state.counters["model_bytes"] = bytes;
  bench::run(state, [&](cudaStream_t s) {
    ch05::bias_relu_scale(x.data(), bias.data(), y.data(), rows, cols, 0.5f, v, s);
  }, {.bytes = bytes, .flops = 3.0 * n});
}

struct HistInput {
  DeviceBuffer<std::int32_t> values{kMoreN};
  DeviceBuffer<std::uint32_t> hist;
  HistInput(ch05::HistogramInput shape, int bins) : hist(static_cast<std::size_t>(bins)) {
    ch05::fill_histogram_input(values.data(), kMoreN, bins, shape, 61);
    CUDALAB_CHECK(cudaDeviceSynchronize());
  }
};

void BM_histogram(benchmark::State& state) {
  const auto v = static_cast<ch05::HistogramVariant>(state.range(0));
  const auto shape = static_cast<ch05::HistogramInput>(state.range(1));
  const int bins = static_cast<int>(state.range(2));
  state.SetLabel(std::string(ch05::to_string(v)) + "_" + ch05::to_string(shape) + "_" + std::to_string(bins));
  HistInput in(shape, bins);
  bench::run(state, [&](cudaStream_t s) {
    ch05::histogram(in.values.data(), kMoreN, in.hist.data(), bins, v, s);
  }, {.bytes = 4.0 * kMoreN});
}

void BM_histogram_cub(benchmark::State& state) {
  const auto shape = static_cast<ch05::HistogramInput>(state.range(0));
  const int bins = static_cast<int>(state.range(1));
  state.SetLabel(std::string("cub_") + ch05::to_string(shape) + "_" + std::to_string(bins));
  HistInput in(shape, bins);
  DeviceBuffer<unsigned char> temp(
      bench_ch05::cub_histogram_even_temp_bytes(in.values.data(), kMoreN, in.hist.data(), bins));
  bench::run(state, [&](cudaStream_t s) {
    bench_ch05::cub_histogram_even(in.values.data(), kMoreN, in.hist.data(), bins, temp.data(),
                                   temp.bytes(), s);
  }, {.bytes = 4.0 * kMoreN});
}

void occupancy_args(benchmark::internal::Benchmark* b) {
  using P = ch05::OccupancyProbe;
  // Registers: the probes at 256 threads, no dynamic shared memory.
  for (P p : {P::kKeep4, P::kKeep32, P::kKeep64, P::kKeep64Bounded, P::kKeep128})
    b->Args({static_cast<long>(p), 256, 0});
  // Shared memory: kKeep4 at 256 threads with 0 .. 200 KiB of dynamic shared memory per block.
  // The calculator predicts 8 7 6 5 4 3 2 1 blocks per SM on sm_90 (228 KiB per SM, +1 KiB per
  // block); the blocks_per_sm counter shows what the runtime says.
  for (long kib : {0L, 28L, 32L, 40L, 48L, 64L, 100L, 200L})
    b->Args({static_cast<long>(P::kKeep4), 256, kib});
  b->Args({static_cast<long>(P::kKeep4Smem40K), 256, 0});
  // Block size at full resources: 32-thread blocks hit the 32-blocks-per-SM limit (occupancy 50%).
  for (long t : {32L, 64L, 128L})
    b->Args({static_cast<long>(P::kKeep4), t, 0});
}

}  // namespace

BENCHMARK(BM_stencil)->Args({0, 1})->Args({1, 1})->Args({0, 3})->Args({1, 3})
    ->UseManualTime()->Unit(benchmark::kMicrosecond);
BENCHMARK(BM_unroll)->DenseRange(0, 3)->UseManualTime()->Unit(benchmark::kMicrosecond);
BENCHMARK(BM_divergence)->DenseRange(0, 1)->UseManualTime()->Unit(benchmark::kMicrosecond);
BENCHMARK(BM_occupancy)->Apply(occupancy_args)->UseManualTime()->Unit(benchmark::kMicrosecond);
BENCHMARK(BM_fusion)->DenseRange(0, 1)->UseManualTime()->Unit(benchmark::kMicrosecond);
BENCHMARK(BM_histogram)
    ->ArgsProduct({{0, 1}, {0, 1}, {256, 8192}})
    ->UseManualTime()->Unit(benchmark::kMicrosecond);
BENCHMARK(BM_histogram_cub)->ArgsProduct({{0, 1}, {256, 8192}})->UseManualTime()->Unit(benchmark::kMicrosecond);
