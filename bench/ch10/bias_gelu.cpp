// Chapter 10 benchmarks: the fused bias + GELU beside the eager pair (x + bias, then gelu) and
// the copy ceiling, forward and backward, fp32 and bf16, at 8192 x 4096 (64 / 128 MiB a matrix,
// past the H200's 60 MiB L2); and the mini autograd's per-op overhead (the host time of one
// recorded op, the CPU and GPU backends) and one MLP training step. The PyTorch side of the same
// comparison (eager, torch.compile, the custom operator, PyTorch's per-op overhead) is
// chapters/10_frameworks/torch/bench_op.py.
// A file per topic, registered in this order: bias_gelu.cpp, autograd.cpp.
//   ./build/gpu/bench/bench_ch10 --benchmark_out=ch10.json --benchmark_out_format=json
#include "ch10/bias_gelu.hpp"

#include <cuda_bf16.h>

#include <cstdint>
#include <string>
#include <vector>

#include "cudalab/bench.hpp"
#include "cudalab/memory.hpp"
#include "cudalab/random.hpp"

using namespace cudalab;

namespace {

constexpr std::size_t kRows = 8192, kCols = 4096, kN = kRows * kCols;

template <class T>
DeviceBuffer<T> random_device(std::size_t n, std::uint64_t seed, float lo, float hi) {
  Rng rng(seed);
  const std::vector<float> f = rng.uniform<float>(n, lo, hi);
  std::vector<T> h(n);
  for (std::size_t i = 0; i < n; ++i) h[i] = static_cast<T>(f[i]);
  return to_device(h);
}

template <class T>
double as_double(T v) {
  return static_cast<double>(static_cast<float>(v));
}

template <class T>
struct Operands {
  DeviceBuffer<T> x = random_device<T>(kN, 1, -3.0f, 3.0f);
  DeviceBuffer<T> dy = random_device<T>(kN, 2, -1.0f, 1.0f);
  DeviceBuffer<T> bias = random_device<T>(kCols, 3, -1.0f, 1.0f);
  DeviceBuffer<T> y{kN}, y2{kN}, dx{kN}, dbias{kCols};
  DeviceBuffer<unsigned char> work{ch10::bias_gelu_backward_workspace_bytes(kCols)};
};

// The fused kernel's output against the eager pair's. fp32: the same bits (both round z to fp32).
// bf16: the pair rounds z to bf16 (half an ulp: 2^-8 |z|), which moves y by |gelu'(z)| 2^-8 |z|,
// at most ~0.2 x 2^-8 for z < 0 (|z gelu'(z)| peaks near 0.19) and ~2^-8 |y| for z > 0, plus one
// rounding of each output: abs 2e-3 + 2^-6 |y| holds with margin.
template <class T>
std::string check_fused(Operands<T>& o, Tolerance tol) {
  ch10::bias_gelu_forward<T>(o.x.data(), kCols, o.bias.data(), o.y.data(), kCols, kRows, kCols);
  ch10::bias_gelu_two_kernels<T>(o.x.data(), kCols, o.bias.data(), o.y2.data(), kCols, kRows,
                                 kCols);
  const std::vector<T> a = bench::download(o.y.data(), kN), b = bench::download(o.y2.data(), kN);
  std::vector<double> ad(kN), bd(kN);
  for (std::size_t i = 0; i < kN; ++i) ad[i] = as_double(a[i]), bd[i] = as_double(b[i]);
  return bench::mismatch(ad, bd, tol, "fused vs eager pair");
}

template <class T>
void BM_bias_gelu_fused(benchmark::State& state, const std::string& key, Tolerance tol) {
  Operands<T> o;
  if (!bench::verify(state, key, [&] { return check_fused(o, tol); })) return;
  // vs_base: the eager pair's time over the fused kernel's, paired in every iteration.
  bench::run_vs(
      state,
      [&](cudaStream_t s) {
        ch10::bias_gelu_forward<T>(o.x.data(), kCols, o.bias.data(), o.y.data(), kCols, kRows,
                                   kCols, ch10::Gelu::kErf, s);
      },
      [&](cudaStream_t s) {
        ch10::bias_gelu_two_kernels<T>(o.x.data(), kCols, o.bias.data(), o.y2.data(), kCols, kRows,
                                       kCols, ch10::Gelu::kErf, s);
      },
      {.bytes = 2.0 * kN * sizeof(T), .flops = 20.0 * kN});
}

template <class T>
void BM_bias_gelu_eager_pair(benchmark::State& state) {
  Operands<T> o;
  bench::run(state,
             [&](cudaStream_t s) {
               ch10::bias_gelu_two_kernels<T>(o.x.data(), kCols, o.bias.data(), o.y2.data(), kCols,
                                              kRows, kCols, ch10::Gelu::kErf, s);
             },
             {.bytes = 4.0 * kN * sizeof(T), .flops = 20.0 * kN});
}

template <class T>
void BM_bias_gelu_backward(benchmark::State& state) {
  Operands<T> o;
  const std::size_t wb = o.work.size();
  bench::run(state,
             [&](cudaStream_t s) {
               ch10::bias_gelu_backward<T>(o.dy.data(), kCols, o.x.data(), kCols, o.bias.data(),
                                           o.dx.data(), kCols, o.dbias.data(), kRows, kCols,
                                           o.work.data(), wb, ch10::Gelu::kErf, s);
             },
             {.bytes = 3.0 * kN * sizeof(T), .flops = 30.0 * kN});
}

template <class T>
void BM_memcpy(benchmark::State& state) {
  DeviceBuffer<T> a(kN), b(kN);
  bench::run(state,
             [&](cudaStream_t s) {
               CUDALAB_CHECK(cudaMemcpyAsync(b.data(), a.data(), kN * sizeof(T),
                                             cudaMemcpyDeviceToDevice, s));
             },
             {.bytes = 2.0 * kN * sizeof(T)});
}

// Registered by name (bench::add: manual time, microseconds): row names built here, templates
// that BENCHMARK_CAPTURE's macro cannot take.
[[maybe_unused]] const bool kRegistered = [] {
  bench::add("BM_memcpy/f32", BM_memcpy<float>);
  bench::add("BM_memcpy/bf16", BM_memcpy<__nv_bfloat16>);
  bench::add("BM_bias_gelu/fused/f32", [](benchmark::State& s) {
    BM_bias_gelu_fused<float>(s, "BM_bias_gelu/fused/f32", {.abs = 1e-6, .rel = 1e-5});
  });
  bench::add("BM_bias_gelu/fused/bf16", [](benchmark::State& s) {
    BM_bias_gelu_fused<__nv_bfloat16>(s, "BM_bias_gelu/fused/bf16", {.abs = 2e-3, .rel = 0x1p-6});
  });
  bench::add("BM_bias_gelu/eager_pair/f32", BM_bias_gelu_eager_pair<float>);
  bench::add("BM_bias_gelu/eager_pair/bf16", BM_bias_gelu_eager_pair<__nv_bfloat16>);
  bench::add("BM_bias_gelu_backward/f32", BM_bias_gelu_backward<float>);
  bench::add("BM_bias_gelu_backward/bf16", BM_bias_gelu_backward<__nv_bfloat16>);
  return true;
}();

}  // namespace

CUDALAB_BENCH_MAIN();
