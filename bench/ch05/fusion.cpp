// Chapter 5 benchmarks, fusion (exercise 5.9): bias + ReLU + scale on an 8192 x 8192 matrix.
//   ./build/gpu/bench/bench_ch05 --benchmark_filter='fusion'
//
// Rows (bench::run_vs times the two alternately in every iteration; vs_base = base time / row
// time; the goals that read them live in bench/ch05/ch05.toml):
//   BM_fusion/<three_kernels|fused>       fused beside three_kernels (GB/s count the bytes each
//                                         really moves: counter model_bytes; compare times)
// Checked once before timing (bench::verify) against a host oracle, exact.
#include "ch05/fusion.hpp"

#include <algorithm>
#include <string>
#include <vector>

#include "ch05_bench.hpp"
#include "cudalab/bench.hpp"
#include "cudalab/device_fill.hpp"
#include "cudalab/memory.hpp"

using namespace cudalab;
using namespace cudalab::bench_ch05;

namespace {

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

using bench::add;  // cudalab/bench.hpp

[[maybe_unused]] const bool kRegistered = [] {
  for (const auto v : {ch05::FusionVariant::kThreeKernels, ch05::FusionVariant::kFused})
    add(std::string("BM_fusion/") + ch05::to_string(v),
        [v](benchmark::State& s) { bm_fusion(s, v); });
  return true;
}();

}  // namespace
