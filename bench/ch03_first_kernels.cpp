// Chapter 3 benchmarks: every first kernel's GB/s beside cudaMemcpy device-to-device, measured in
// the same run. These kernels do almost no arithmetic: their ceiling is DRAM bandwidth, and
// pct_of_copy says how close each gets (vector add target on an H200: >= 90%).
//   ./build/gpu/bench/bench_ch03 --benchmark_out=ch03.json --benchmark_out_format=json
#include <cstdint>

#include "ch03/ch03.hpp"
#include "cudalab/bench.hpp"
#include "cudalab/device_fill.hpp"
#include "cudalab/memory.hpp"

using namespace cudalab;

namespace {

constexpr std::size_t kN = std::size_t{1} << 28;  // 2^28 floats = 1 GiB per array, >> 60 MB of L2

// Filled and finished before bench::run's stream (non-blocking) starts its warm-up.
struct Arrays {
  DeviceBuffer<float> a = uniform_device_buffer(kN, 1, -1.0f, 1.0f);
  DeviceBuffer<float> b = uniform_device_buffer(kN, 2, -1.0f, 1.0f);
  DeviceBuffer<float> c = uniform_device_buffer(kN, 3, -1.0f, 1.0f);
};

void BM_memcpy_d2d(benchmark::State& state) {
  Arrays x;
  bench::run(state, [&](cudaStream_t s) {
    CUDALAB_CHECK(cudaMemcpyAsync(x.c.data(), x.a.data(), kN * sizeof(float), cudaMemcpyDeviceToDevice, s));
  }, {.bytes = 2.0 * kN * sizeof(float)});
}

void BM_vector_add(benchmark::State& state) {
  Arrays x;
  bench::run(state, [&](cudaStream_t s) { ch03::vector_add(x.a.data(), x.b.data(), x.c.data(), kN, s); },
             {.bytes = 3.0 * kN * sizeof(float), .flops = 1.0 * kN});
}

void BM_saxpy(benchmark::State& state) {
  Arrays x;
  bench::run(state, [&](cudaStream_t s) { ch03::saxpy(1.0001f, x.a.data(), x.c.data(), kN, s); },
             {.bytes = 3.0 * kN * sizeof(float), .flops = 2.0 * kN});
}

void BM_vector_add_grid_stride(benchmark::State& state) {
  Arrays x;
  const auto v = static_cast<ch03::StrideVariant>(state.range(0));
  state.SetLabel(v == ch03::StrideVariant::kScalar ? "scalar" : "float4");
  bench::run(state, [&](cudaStream_t s) {
    ch03::vector_add_grid_stride(x.a.data(), x.b.data(), x.c.data(), kN, v, s);
  }, {.bytes = 3.0 * kN * sizeof(float), .flops = 1.0 * kN});
}

void BM_rgb_to_gray(benchmark::State& state) {
  const int w = 16384 + 7, h = 16384 + 3;  // odd shape, 1 GiB of RGB
  PitchedBuffer<std::uint8_t> rgb(h, 3 * static_cast<std::size_t>(w)), gray(h, w);
  rgb.fill_bytes(0x5A);
  bench::run(state, [&](cudaStream_t s) {
    ch03::rgb_to_gray(rgb.data(), rgb.pitch_bytes(), gray.data(), gray.pitch_bytes(), w, h, s);
  }, {.bytes = 4.0 * w * h});
}

}  // namespace

BENCHMARK(BM_memcpy_d2d)->UseManualTime()->Unit(benchmark::kMicrosecond);
BENCHMARK(BM_vector_add)->UseManualTime()->Unit(benchmark::kMicrosecond);
BENCHMARK(BM_saxpy)->UseManualTime()->Unit(benchmark::kMicrosecond);
BENCHMARK(BM_vector_add_grid_stride)->Arg(0)->Arg(1)->UseManualTime()->Unit(benchmark::kMicrosecond);
BENCHMARK(BM_rgb_to_gray)->UseManualTime()->Unit(benchmark::kMicrosecond);

CUDALAB_BENCH_MAIN();
