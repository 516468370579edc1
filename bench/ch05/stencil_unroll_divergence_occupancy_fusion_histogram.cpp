// Chapter 5 benchmarks of exercises 5.5 - 5.10: stencil tiling, unrolling, divergence, occupancy,
// fusion and histogram. Every input is >= 256 MiB (far above the 60 MB L2).
//   ./build/gpu/bench/bench_ch05
//   --benchmark_filter='stencil|unroll|divergence|occupancy|fusion|histogram'
//
// Rows and their base (bench::run_vs times the two alternately in every iteration; vs_base =
// base time / row time; the goals that read them live in bench/ch05/ch05.toml):
//   BM_stencil/<naive|tiled>/r<r>         8n bytes, 2 (2r+1)^2 n FLOPs; tiled beside naive (same r)
//   BM_unroll/<variant>                   12n bytes, beside cudaMemcpy D2D of the same 12n bytes;
//                                         counters regs, local_bytes; BM_unroll_memcpy: that copy
//                                         alone
//   BM_divergence/<divergent|warp_uniform> compute-bound; warp_uniform beside divergent (~2x)
//   BM_occupancy/<probe>_t<threads>_dyn<KiB>K  counters blocks_per_sm, occupancy, regs
//   BM_fusion/<three_kernels|fused>       fused beside three_kernels (GB/s count the bytes each
//                                         really moves: counter model_bytes; compare times)
//   BM_histogram/<variant>/<input>/<bins> beside cub::DeviceHistogram::HistogramEven (same input)
//   BM_histogram_cub/<input>/<bins>       CUB alone
// Every row checks its output once before timing (bench::verify): against a host oracle (unroll,
// divergence, occupancy, fusion, histogram, sampled rows of the stencil), exact where the
// arithmetic is the same, within a rounding tolerance where the order of operations may differ.
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <string>
#include <vector>

#include "ch05/divergence.hpp"
#include "ch05/fusion.hpp"
#include "ch05/histogram.hpp"
#include "ch05/occupancy.hpp"
#include "ch05/stencil.hpp"
#include "ch05/unroll.hpp"
#include "cub_wrappers.hpp"
#include "cudalab/bench.hpp"
#include "cudalab/device.hpp"
#include "cudalab/device_fill.hpp"
#include "cudalab/memory.hpp"

using namespace cudalab;

namespace {

constexpr std::size_t kMoreN = std::size_t{1} << 26;  // 2^26 floats = 256 MiB per array
constexpr int kImage = 8192;                          // 8192 x 8192 floats = 256 MiB

const char* conv_name(ch05::ConvVariant v) {
  return v == ch05::ConvVariant::kNaive ? "naive" : "tiled";
}

// ---- stencil (5.5) ----------------------------------------------------------------------------

// Host oracle on every 13th row (13 is odd: the rows checked fall on every offset inside a tile
// of any power-of-two height, tile edges and halos included) and the last row, all columns.
std::string check_stencil(const std::vector<float>& in, const std::vector<float>& filter, int r,
                          const DeviceBuffer<float>& out) {
  const std::vector<float> got = out.to_host();
  const int k = 2 * r + 1;
  std::vector<float> g, w;
  for (int y = 0; y < kImage; ++y) {
    if (y % 13 != 0 && y != kImage - 1) continue;
    for (int x = 0; x < kImage; ++x) {
      float acc = 0.0f;
      for (int dy = 0; dy < k; ++dy)
        for (int dx = 0; dx < k; ++dx) {
          const int gy = y + dy - r, gx = x + dx - r;
          const float v = (gx >= 0 && gx < kImage && gy >= 0 && gy < kImage)
                              ? in[static_cast<std::size_t>(gy) * kImage + gx]
                              : 0.0f;
          acc = std::fma(filter[dy * k + dx], v, acc);
        }
      g.push_back(got[static_cast<std::size_t>(y) * kImage + x]);
      w.push_back(acc);
    }
  }
  return bench::mismatch(g, w, {.abs = 1e-5, .rel = 1e-5}, "conv2d 8192 x 8192, every 13th row");
}

void bm_stencil(benchmark::State& state, ch05::ConvVariant v, int r) {
  const std::size_t n = std::size_t{kImage} * kImage;
  const int k = 2 * r + 1;
  auto in = uniform_device_buffer(n, 11, -1.0f, 1.0f);
  DeviceBuffer<float> out(n), base_out(n);
  auto filter = uniform_device_buffer(static_cast<std::size_t>(k) * k, 12, 0.0f, 1.0f / (k * k));
  auto run = [&](ch05::ConvVariant variant, float* o, cudaStream_t s) {
    ch05::conv2d(in.data(), o, kImage, kImage, filter.data(), r, variant, s);
  };
  if (!bench::verify(state, std::string("stencil/") + conv_name(v) + "/r" + std::to_string(r), [&] {
        run(v, out.data(), nullptr);
        return check_stencil(in.to_host(), filter.to_host(), r, out);
      }))
    return;
  const bench::Work w{.bytes = 8.0 * n, .flops = 2.0 * k * k * n};
  auto work = [&](cudaStream_t s) { run(v, out.data(), s); };
  if (v == ch05::ConvVariant::kNaive)
    bench::run(state, work, w);
  else
    bench::run_vs(
        state, work, [&](cudaStream_t s) { run(ch05::ConvVariant::kNaive, base_out.data(), s); },
        w);
}

// ---- unrolling (5.6) --------------------------------------------------------------------------

void bm_unroll(benchmark::State& state, ch05::UnrollVariant v) {
  auto x = uniform_device_buffer(kMoreN, 21, -1.0f, 1.0f),
       y = uniform_device_buffer(kMoreN, 22, -1.0f, 1.0f);
  const float a = 1.0001f;
  auto work = [&](cudaStream_t s) { ch05::saxpy_unrolled(a, x.data(), y.data(), kMoreN, v, s); };
  if (!bench::verify(state, std::string("unroll/") + ch05::to_string(v), [&] {
        const std::vector<float> hx = x.to_host(), y0 = y.to_host();
        work(nullptr);
        std::vector<float> want(kMoreN);
        for (std::size_t i = 0; i < kMoreN; ++i) want[i] = std::fma(a, hx[i], y0[i]);
        return bench::mismatch(y.to_host(), want, {.abs = 1e-6, .rel = 1e-6}, "saxpy 2^26");
      }))
    return;
  const ch05::KernelResources r = ch05::saxpy_unrolled_resources(v);
  state.counters["regs"] = r.num_regs;
  state.counters["local_bytes"] = static_cast<double>(r.local_bytes);
  // Base: cudaMemcpy D2D moving the same 12n bytes (6n read, 6n written).
  const std::size_t copy_bytes = 6 * kMoreN;
  DeviceBuffer<unsigned char> src(copy_bytes), dst(copy_bytes);
  CUDALAB_CHECK(cudaMemset(src.data(), 1, copy_bytes));
  bench::run_vs(state, work,
                [&](cudaStream_t s) {
                  CUDALAB_CHECK(cudaMemcpyAsync(dst.data(), src.data(), copy_bytes,
                                                cudaMemcpyDeviceToDevice, s));
                },
                {.bytes = 12.0 * kMoreN, .flops = 2.0 * kMoreN});
}

// The same-bytes copy alone: the denominator of the 5.6 goal when a run has no vs_base counter.
void bm_unroll_memcpy(benchmark::State& state) {
  const std::size_t copy_bytes = 6 * kMoreN;  // 12n bytes moved, as BM_unroll
  DeviceBuffer<unsigned char> src(copy_bytes), dst(copy_bytes);
  CUDALAB_CHECK(cudaMemset(src.data(), 1, copy_bytes));
  auto work = [&](cudaStream_t s) {
    CUDALAB_CHECK(cudaMemcpyAsync(dst.data(), src.data(), copy_bytes, cudaMemcpyDeviceToDevice, s));
  };
  if (!bench::verify(state, "unroll_memcpy", [&] {
        work(nullptr);
        return bench::mismatch(dst.to_host(), src.to_host(), {}, "cudaMemcpy D2D 768 MiB");
      }))
    return;
  bench::run(state, work, {.bytes = 12.0 * kMoreN});
}

// ---- divergence (5.7) -------------------------------------------------------------------------

float host_path(float y, bool a) {
  for (int s = 0; s < ch05::kDivergenceSteps; ++s)
    y = a ? std::fma(ch05::kPathAScale, y, ch05::kPathAShift)
          : std::fma(ch05::kPathBScale, y, ch05::kPathBShift);
  return y;
}

void bm_divergence(benchmark::State& state, ch05::DivergenceVariant v) {
  auto in = uniform_device_buffer(kMoreN, 31, -10.0f, 10.0f);
  DeviceBuffer<float> out(kMoreN), base_out(kMoreN);
  auto run = [&](ch05::DivergenceVariant variant, float* o, cudaStream_t s) {
    ch05::branchy_transform(in.data(), o, kMoreN, variant, s);
  };
  if (!bench::verify(state, std::string("divergence/") + ch05::to_string(v), [&] {
        run(v, out.data(), nullptr);
        const std::vector<float> x = in.to_host();
        std::vector<float> want(kMoreN);
        for (std::size_t i = 0; i < kMoreN; ++i) want[i] = host_path(x[i], i % 2 == 0);
        return bench::mismatch(out.to_host(), want, {.abs = 1e-5, .rel = 1e-5},
                               "branchy_transform 2^26");
      }))
    return;
  // Useful FLOPs: one FMA (2 FLOPs) per step on one path per element; the divergent version
  // spends issue slots on the masked path too, which is what its lower TFLOP/s shows.
  const bench::Work w{.bytes = 8.0 * kMoreN, .flops = 2.0 * ch05::kDivergenceSteps * kMoreN};
  auto work = [&](cudaStream_t s) { run(v, out.data(), s); };
  if (v == ch05::DivergenceVariant::kDivergent)
    bench::run(state, work, w);
  else
    bench::run_vs(
        state, work,
        [&](cudaStream_t s) { run(ch05::DivergenceVariant::kDivergent, base_out.data(), s); }, w);
}

// ---- occupancy (5.8: the calculator is a CPU exercise; these rows show what it predicts) -------

void bm_occupancy(benchmark::State& state, ch05::OccupancyProbe p, int threads, long kib) {
  const std::size_t dyn = static_cast<std::size_t>(kib) * 1024;
  auto x = uniform_device_buffer(kMoreN, 41, -1.0f, 1.0f);
  DeviceBuffer<float> y(kMoreN);
  auto work = [&](cudaStream_t s) {
    ch05::run_occupancy_probe(p, x.data(), y.data(), kMoreN, threads, dyn, s);
  };
  if (!bench::verify(state,
                     std::string("occupancy/") + ch05::to_string(p) + "/" +
                         std::to_string(threads) + "/" + std::to_string(kib),
                     [&] {
                       work(nullptr);
                       // y[i] = x[i] + (sum of the kKeep elements of lane l's slice of its 32 kKeep
                       // chunk).
                       const std::vector<float> hx = x.to_host();
                       const std::size_t keep = static_cast<std::size_t>(ch05::probe_keep(p)),
                                         chunk = 32 * keep;
                       std::vector<float> want(kMoreN);
                       for (std::size_t base = 0; base < kMoreN; base += chunk)
                         for (std::size_t l = 0; l < 32; ++l) {
                           float s = 0.0f;
                           for (std::size_t k = 0; k < keep && base + l + 32 * k < kMoreN; ++k)
                             s += hx[base + l + 32 * k];
                           for (std::size_t k = 0; k < keep && base + l + 32 * k < kMoreN; ++k)
                             want[base + l + 32 * k] = hx[base + l + 32 * k] + s;
                         }
                       return bench::mismatch(y.to_host(), want, {.abs = 1e-5, .rel = 1e-5},
                                              "occupancy probe 2^26");
                     }))
    return;
  const ch05::ProbeResources r = ch05::probe_resources(p);
  const int blocks = ch05::probe_blocks_per_sm(p, threads, dyn);
  const DeviceInfo d = device_info();
  state.counters["regs"] = r.num_regs;
  state.counters["local_bytes"] = static_cast<double>(r.local_bytes);
  state.counters["smem_per_block"] = static_cast<double>(r.static_smem + dyn);
  state.counters["blocks_per_sm"] = blocks;
  state.counters["occupancy"] =
      static_cast<double>(blocks) * ((threads + 31) / 32) / (d.max_threads_per_sm / 32);
  bench::run(state, work, {.bytes = 8.0 * kMoreN});
}

// ---- fusion (5.9) -----------------------------------------------------------------------------

void bm_fusion(benchmark::State& state, ch05::FusionVariant v) {
  const std::size_t rows = kImage, cols = kImage, n = rows * cols;
  const float scale = 0.5f;
  auto x = uniform_device_buffer(n, 51, -1.0f, 1.0f),
       bias = uniform_device_buffer(cols, 52, -1.0f, 1.0f);
  DeviceBuffer<float> y(n), base_y(n);
  auto run = [&](ch05::FusionVariant variant, float* o, cudaStream_t s) {
    ch05::bias_relu_scale(x.data(), bias.data(), o, rows, cols, scale, variant, s);
  };
  if (!bench::verify(state, std::string("fusion/") + ch05::to_string(v), [&] {
        run(v, y.data(), nullptr);
        const std::vector<float> hx = x.to_host(), hb = bias.to_host();
        std::vector<float> want(n);
        for (std::size_t i = 0; i < n; ++i) want[i] = scale * std::max(hx[i] + hb[i % cols], 0.0f);
        return bench::mismatch(y.to_host(), want, {}, "bias_relu_scale 8192 x 8192");
      }))
    return;
  // The bytes each variant really moves: three kernels 3 x 8n, fused 8n (+ the bias row).
  const double bytes = (v == ch05::FusionVariant::kFused ? 8.0 : 24.0) * n + 4.0 * cols;
  state.counters["model_bytes"] = bytes;
  const bench::Work w{.bytes = bytes, .flops = 3.0 * n};
  auto work = [&](cudaStream_t s) { run(v, y.data(), s); };
  if (v == ch05::FusionVariant::kThreeKernels)
    bench::run(state, work, w);
  else
    bench::run_vs(
        state, work,
        [&](cudaStream_t s) { run(ch05::FusionVariant::kThreeKernels, base_y.data(), s); }, w);
}

// ---- histogram (5.10) -------------------------------------------------------------------------

struct HistInput {
  DeviceBuffer<std::int32_t> values{kMoreN};
  DeviceBuffer<std::uint32_t> hist, cub_hist;
  DeviceBuffer<unsigned char> cub_temp;
  int bins;
  HistInput(ch05::HistogramInput shape, int num_bins)
      : hist(static_cast<std::size_t>(num_bins)),
        cub_hist(static_cast<std::size_t>(num_bins)),
        bins(num_bins) {
    ch05::fill_histogram_input(values.data(), kMoreN, bins, shape, 61);
    CUDALAB_CHECK(cudaDeviceSynchronize());
    cub_temp = DeviceBuffer<unsigned char>(
        bench_ch05::cub_histogram_even_temp_bytes(values.data(), kMoreN, cub_hist.data(), bins));
  }
  void cub(cudaStream_t s) {
    bench_ch05::cub_histogram_even(values.data(), kMoreN, cub_hist.data(), bins, cub_temp.data(),
                                   cub_temp.bytes(), s);
  }
  // `out` against a host count of the values in [0, bins) (both histogram paths overwrite it).
  std::string check(const DeviceBuffer<std::uint32_t>& out) const {
    std::vector<std::uint32_t> want(static_cast<std::size_t>(bins), 0);
    for (const std::int32_t v : values.to_host())
      if (v >= 0 && v < bins) ++want[static_cast<std::size_t>(v)];
    return bench::mismatch(out.to_host(), want, {}, "histogram of 2^26 values");
  }
};

const char* hist_input_name(ch05::HistogramInput shape) {
  return ch05::to_string(shape);
}

void bm_histogram(benchmark::State& state, ch05::HistogramVariant v, ch05::HistogramInput shape,
                  int bins) {
  HistInput in(shape, bins);
  auto work = [&](cudaStream_t s) {
    ch05::histogram(in.values.data(), kMoreN, in.hist.data(), bins, v, s);
  };
  if (!bench::verify(state,
                     std::string("histogram/") + ch05::to_string(v) + "/" + hist_input_name(shape) +
                         "/" + std::to_string(bins),
                     [&] {
                       work(nullptr);
                       return in.check(in.hist);
                     }))
    return;
  bench::run_vs(state, work, [&](cudaStream_t s) { in.cub(s); }, {.bytes = 4.0 * kMoreN});
}

void bm_histogram_cub(benchmark::State& state, ch05::HistogramInput shape, int bins) {
  HistInput in(shape, bins);
  if (!bench::verify(
          state,
          std::string("histogram_cub/") + hist_input_name(shape) + "/" + std::to_string(bins), [&] {
            in.cub(nullptr);
            return in.check(in.cub_hist);
          }))
    return;
  bench::run(state, [&](cudaStream_t s) { in.cub(s); }, {.bytes = 4.0 * kMoreN});
}

using bench::add;  // cudalab/bench.hpp

[[maybe_unused]] const bool kRegistered = [] {
  for (const int r : {1, 3})
    for (const auto v : {ch05::ConvVariant::kNaive, ch05::ConvVariant::kTiled})
      add(std::string("BM_stencil/") + conv_name(v) + "/r" + std::to_string(r),
          [v, r](benchmark::State& s) { bm_stencil(s, v, r); });
  for (const auto v : {ch05::UnrollVariant::kRolled, ch05::UnrollVariant::kUnrolled,
                       ch05::UnrollVariant::kUnrolledRestrict, ch05::UnrollVariant::kVectorized})
    add(std::string("BM_unroll/") + ch05::to_string(v),
        [v](benchmark::State& s) { bm_unroll(s, v); });
  add("BM_unroll_memcpy", bm_unroll_memcpy);
  for (const auto v : {ch05::DivergenceVariant::kDivergent, ch05::DivergenceVariant::kWarpUniform})
    add(std::string("BM_divergence/") + ch05::to_string(v),
        [v](benchmark::State& s) { bm_divergence(s, v); });

  // Occupancy. Registers: the probes at 256 threads, no dynamic shared memory. Shared memory:
  // kKeep4 at 256 threads with 0 .. 200 KiB of dynamic shared memory per block (the calculator
  // predicts 8 7 6 5 4 3 2 1 blocks per SM on sm_90: 228 KiB per SM, +1 KiB per block; the
  // blocks_per_sm counter shows what the runtime says). Block size at full resources: 32-thread
  // blocks hit the 32-blocks-per-SM limit (occupancy 50%).
  using P = ch05::OccupancyProbe;
  struct OccArgs {
    P probe;
    int threads;
    long kib;
  };
  std::vector<OccArgs> occ;
  for (P p : {P::kKeep4, P::kKeep32, P::kKeep64, P::kKeep64Bounded, P::kKeep128})
    occ.push_back({p, 256, 0});
  for (long kib : {28L, 32L, 40L, 48L, 64L, 100L, 200L}) occ.push_back({P::kKeep4, 256, kib});
  occ.push_back({P::kKeep4Smem40K, 256, 0});
  for (int t : {32, 64, 128}) occ.push_back({P::kKeep4, t, 0});
  for (const auto& o : occ)
    add(std::string("BM_occupancy/") + ch05::to_string(o.probe) + "_t" + std::to_string(o.threads) +
            "_dyn" + std::to_string(o.kib) + "K",
        [o](benchmark::State& s) { bm_occupancy(s, o.probe, o.threads, o.kib); });

  for (const auto v : {ch05::FusionVariant::kThreeKernels, ch05::FusionVariant::kFused})
    add(std::string("BM_fusion/") + ch05::to_string(v),
        [v](benchmark::State& s) { bm_fusion(s, v); });

  for (const int bins : {256, 8192})
    for (const auto shape : {ch05::HistogramInput::kUniform, ch05::HistogramInput::kSkewed}) {
      const std::string tail =
          std::string("/") + hist_input_name(shape) + "/" + std::to_string(bins);
      add("BM_histogram_cub" + tail,
          [shape, bins](benchmark::State& s) { bm_histogram_cub(s, shape, bins); });
      for (const auto v :
           {ch05::HistogramVariant::kGlobalAtomics, ch05::HistogramVariant::kPrivatized})
        add(std::string("BM_histogram/") + ch05::to_string(v) + tail,
            [v, shape, bins](benchmark::State& s) { bm_histogram(s, v, shape, bins); });
    }
  return true;
}();

}  // namespace
