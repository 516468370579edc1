// Chapter 5 benchmarks, stencil tiling (exercise 5.5): conv2d on an 8192 x 8192 image.
//   ./build/gpu/bench/bench_ch05 --benchmark_filter='stencil'
//
// Rows (bench::run_vs times the two alternately in every iteration; vs_base = base time / row
// time; the goals that read them live in bench/ch05/ch05.toml):
//   BM_stencil/<naive|tiled>/r<r>         8n bytes, 2 (2r+1)^2 n FLOPs; tiled beside naive (same r)
// Checked once before timing (bench::verify): sampled rows against a host oracle, within a
// rounding tolerance (the order of operations may differ).
#include "ch05/stencil.hpp"

#include <cmath>
#include <string>
#include <vector>

#include "ch05_bench.hpp"
#include "cudalab/bench.hpp"
#include "cudalab/device_fill.hpp"
#include "cudalab/memory.hpp"

using namespace cudalab;
using namespace cudalab::bench_ch05;

namespace {

const char* conv_name(ch05::ConvVariant v) {
  return v == ch05::ConvVariant::kNaive ? "naive" : "tiled";
}

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

using bench::add;  // cudalab/bench.hpp

[[maybe_unused]] const bool kRegistered = [] {
  for (const int r : {1, 3})
    for (const auto v : {ch05::ConvVariant::kNaive, ch05::ConvVariant::kTiled})
      add(std::string("BM_stencil/") + conv_name(v) + "/r" + std::to_string(r),
          [v, r](benchmark::State& s) { bm_stencil(s, v, r); });
  return true;
}();

}  // namespace
