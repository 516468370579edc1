// Chapter 6 benchmarks: every hand-written kernel beside the vendor library, in the same run.
//
//   BM_sgemm/<variant>/<size>          the SGEMM ladder      vs  BM_sgemm_cublas/<size>
//                                      (FP32 CUDA cores; cuBLAS with CUBLAS_DEFAULT_MATH: no TF32)
// Read: TFLOP/s of BM_sgemm/warptile/4096 / BM_sgemm_cublas/4096 (target >= 85%, aim 90%).
// Sizes: 1024, 2048, 4096 (cubes) and 4095 (odd: every tile edge is partial, no float4 rows).
//   ./build/gpu/bench/bench_ch06 --benchmark_out=ch06.json --benchmark_out_format=json
#include <cstdint>
#include <string>

#include "ch06/ch06.hpp"
#include "cudalab/bench.hpp"
#include "cudalab/cublas.hpp"
#include "cudalab/device_fill.hpp"
#include "cudalab/memory.hpp"

using namespace cudalab;

namespace {

struct GemmData {
  int m, n, k;
  DeviceBuffer<float> a, b, c;
  GemmData(int m_, int n_, int k_)
      : m(m_), n(n_), k(k_), a(std::size_t(m_) * k_), b(std::size_t(k_) * n_), c(std::size_t(m_) * n_) {
    fill_uniform_device(a.data(), a.size(), 11, -1.0f, 1.0f);
    fill_uniform_device(b.data(), b.size(), 12, -1.0f, 1.0f);
    fill_uniform_device(c.data(), c.size(), 13, -1.0f, 1.0f);
  }
  double flops() const { return 2.0 * m * n * k; }
  // Compulsory traffic: read A and B once, write C (beta = 0).
  double bytes() const { return 4.0 * (double(m) * k + double(k) * n + double(m) * n); }
};

void bm_sgemm(benchmark::State& state, ch06::SgemmVariant v, int size) {
  GemmData d(size, size, size);
  state.SetLabel(std::string(ch06::to_string(v)));
  bench::run(state, [&](cudaStream_t s) {
    ch06::sgemm(v, d.m, d.n, d.k, 1.0f, d.a.data(), d.b.data(), 0.0f, d.c.data(), s);
  }, {.bytes = d.bytes(), .flops = d.flops()});
}

void bm_sgemm_cublas(benchmark::State& state, int size) {
  GemmData d(size, size, size);
  CublasHandle h(CUBLAS_DEFAULT_MATH);  // FP32 on CUDA cores: TF32 only with CUBLAS_TF32_TENSOR_OP_MATH
  state.SetLabel("cublasSgemm, CUBLAS_DEFAULT_MATH (no TF32)");
  bench::run(state, [&](cudaStream_t s) {
    ch06::cublas_sgemm_row_major(h, ch06::Op::kN, ch06::Op::kN, d.m, d.n, d.k, 1.0f, d.a.data(), d.k,
                                 d.b.data(), d.n, 0.0f, d.c.data(), d.n, s);
  }, {.bytes = d.bytes(), .flops = d.flops()});
}

template <class F>
void add(const std::string& name, F&& f) {
  benchmark::RegisterBenchmark(name.c_str(), std::forward<F>(f))
      ->UseManualTime()
      ->Unit(benchmark::kMicrosecond);
}

[[maybe_unused]] const bool kRegistered = [] {
  for (const int size : {1024, 2048, 4096, 4095}) {
    add("BM_sgemm_cublas/" + std::to_string(size), [size](benchmark::State& s) { bm_sgemm_cublas(s, size); });
    for (const auto v : ch06::kAllSgemmVariants)
      add("BM_sgemm/" + std::string(ch06::to_string(v)) + "/" + std::to_string(size),
          [v, size](benchmark::State& s) { bm_sgemm(s, v, size); });
  }
  return true;
}();

}  // namespace

CUDALAB_BENCH_MAIN();
