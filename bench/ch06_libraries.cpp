// Chapter 6 benchmarks: every hand-written kernel beside the vendor library, in the same run.
//
//   BM_sgemm/<variant>/<size>          the SGEMM ladder      vs  BM_sgemm_cublas/<size>
//                                      (FP32 CUDA cores; cuBLAS with CUBLAS_DEFAULT_MATH: no TF32)
//   BM_tc_gemm/wmma_<fp16|bf16>/<size>  WMMA tensor cores   vs  BM_tc_gemm_cublas/<fp16|bf16>/<size>
//   BM_tc_gemm/wgmma_bf16/<size>        Hopper wgmma (sm_90a, TN)
//                                      (cublasGemmEx, CUBLAS_COMPUTE_32F)
//   BM_conv/implicit_gemm/<layer>      exercise 6.4          vs  BM_conv_cudnn/<layer>
//                                      (NCHW fp32, batch 32, cuDNN FMA math: no TF32; label = algo)
//   BM_gemm_bias_relu/fused/<MxNxK>    exercise 6.6          vs  BM_gemm_bias_relu/cublas_then_kernel/<MxNxK>
// Read: TFLOP/s of the best BM_sgemm/<variant>/4096 (warptile or warptile_async, step 8) /
//       BM_sgemm_cublas/4096 (target >= 85%, aim 90%); warptile_async/4095 runs step 7 (K % 4 != 0);
//       BM_tc_gemm/wmma_fp16/8192 / BM_tc_gemm_cublas/fp16/8192 (no target: see the README);
//       BM_tc_gemm/wgmma_bf16/8192 / BM_tc_gemm_cublas/bf16/8192 (Hopper path; aim >= 70%).
// SGEMM sizes: 1024, 2048, 4096 (cubes) and 4095 (odd: every tile edge is partial, no float4 rows).
//   ./build/gpu/bench/bench_ch06 --benchmark_out=ch06.json --benchmark_out_format=json
#include <cstdint>
#include <exception>
#include <string>
#include <type_traits>

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
      : m(m_), n(n_), k(k_),
        a(uniform_device_buffer(std::size_t(m_) * k_, 11, -1.0f, 1.0f)),
        b(uniform_device_buffer(std::size_t(k_) * n_, 12, -1.0f, 1.0f)),
        c(uniform_device_buffer(std::size_t(m_) * n_, 13, -1.0f, 1.0f)) {}
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

// fp16 / bf16 operands for the tensor-core rows: uniform in [-1, 1], converted on the device.
template <class T>
struct TcData {
  int size;
  DeviceBuffer<T> a, b;
  DeviceBuffer<float> c;
  explicit TcData(int n) : size(n), a(std::size_t(n) * n), b(std::size_t(n) * n), c(std::size_t(n) * n) {
    ch06::convert(uniform_device_buffer(a.size(), 21, -1.0f, 1.0f).data(), a.data(), a.size());
    ch06::convert(uniform_device_buffer(b.size(), 22, -1.0f, 1.0f).data(), b.data(), b.size());
    CUDALAB_CHECK(cudaDeviceSynchronize());  // the conversions, before bench::run's own stream starts
  }
  double flops() const { return 2.0 * size * double(size) * size; }
  double bytes() const { return (2.0 * sizeof(T) + 4.0) * size * double(size); }
};

template <class T>
void bm_tc_wmma(benchmark::State& state, int size) {
  TcData<T> d(size);
  bench::run(state, [&](cudaStream_t s) {
    ch06::wmma_gemm(size, size, size, 1.0f, d.a.data(), d.b.data(), 0.0f, d.c.data(), s);
  }, {.bytes = d.bytes(), .flops = d.flops()});
}

template <class T>
void bm_tc_cublas(benchmark::State& state, int size) {
  TcData<T> d(size);
  CublasHandle h;
  const cudaDataType_t type = std::is_same_v<T, __half> ? CUDA_R_16F : CUDA_R_16BF;
  state.SetLabel("cublasGemmEx, CUBLAS_COMPUTE_32F");
  bench::run(state, [&](cudaStream_t s) {
    ch06::cublas_gemm_ex_row_major(h, size, size, size, 1.0f, d.a.data(), d.b.data(), type, 0.0f, d.c.data(), s);
  }, {.bytes = d.bytes(), .flops = d.flops()});
}

// Hopper wgmma (sm_90a): C = A Bt^T, bf16. Beside BM_tc_gemm_cublas/bf16/<size> (NN layout; cuBLAS
// runs NN and TN at the same speed on these sizes).
void bm_tc_wgmma(benchmark::State& state, int size) {
  if (!ch06::wgmma_supported()) {
    state.SkipWithError("wgmma needs compute capability 9.0 (sm_90a)");
    return;
  }
  TcData<__nv_bfloat16> d(size);  // b holds Bt (N x K): same size, random
  state.SetLabel("wgmma m64n256k16, TMA + mbarrier ring, warp-specialized, TN");
  bench::run(state, [&](cudaStream_t s) {
    ch06::wgmma_gemm_bf16_tn(size, size, size, d.a.data(), d.b.data(), d.c.data(), s);
  }, {.bytes = d.bytes(), .flops = d.flops()});
}

struct ConvLayer {
  const char* slug;
  ch06::ConvShape shape;
};
// ResNet-50 layers, batch 32 (n, c, h, w, k, r, s, stride, pad).
const ConvLayer kLayers[] = {{"conv1_7x7s2_3to64_224", {32, 3, 224, 224, 64, 7, 7, 2, 3}},
                             {"3x3_64to64_56", {32, 64, 56, 56, 64, 3, 3, 1, 1}},
                             {"1x1_256to64_56", {32, 256, 56, 56, 64, 1, 1, 1, 0}},
                             {"3x3_128to128_28", {32, 128, 28, 28, 128, 3, 3, 1, 1}},
                             {"3x3_256to256_14", {32, 256, 14, 14, 256, 3, 3, 1, 1}},
                             {"3x3_512to512_7", {32, 512, 7, 7, 512, 3, 3, 1, 1}}};

struct ConvData {
  DeviceBuffer<float> x, w, y;
  explicit ConvData(const ch06::ConvShape& s)
      : x(uniform_device_buffer(std::size_t(s.n) * s.c * s.h * s.w, 31, -1.0f, 1.0f)),
        w(uniform_device_buffer(std::size_t(s.k) * s.c * s.r * s.s, 32, -1.0f, 1.0f)),
        y(std::size_t(s.n) * s.k * s.p() * s.q()) {}
  // Compulsory traffic: read x and w once, write y.
  double bytes() const { return 4.0 * double(x.size() + w.size() + y.size()); }
};

void bm_conv_implicit_gemm(benchmark::State& state, const ch06::ConvShape& shape) {
  ConvData d(shape);
  bench::run(state, [&](cudaStream_t s) { ch06::conv2d_implicit_gemm(shape, d.x.data(), d.w.data(), d.y.data(), s); },
             {.bytes = d.bytes(), .flops = shape.flops()});
}

void bm_conv_cudnn(benchmark::State& state, const ch06::ConvShape& shape) {
  if (!ch06::have_cudnn()) {
    state.SkipWithError("built without cuDNN (CUDALAB_HAVE_CUDNN=OFF)");
    return;
  }
  ConvData d(shape);
  ch06::CudnnConvForward conv(shape);
  state.SetLabel("cuDNN " + conv.algo_name() + ", FMA math");
  bench::run(state, [&](cudaStream_t s) { conv.run(d.x.data(), d.w.data(), d.y.data(), s); },
             {.bytes = d.bytes(), .flops = shape.flops()});
}

// GEMM + bias + ReLU shapes: skinny (few rows, like a decode step), small, small K (memory-bound:
// the extra pass over Y matters most), large (compute-bound: the GEMM itself decides).
struct FusedShape {
  int m, n, k;
};
const FusedShape kFusedShapes[] = {{32, 4096, 4096}, {512, 1024, 1024}, {16384, 1024, 64},
                                   {8192, 4096, 256}, {4096, 4096, 4096}};

void bm_gemm_bias_relu(benchmark::State& state, const FusedShape& sh, bool fused) {
  GemmData d(sh.m, sh.n, sh.k);
  const DeviceBuffer<float> bias = uniform_device_buffer(std::size_t(sh.n), 41, -1.0f, 1.0f);
  CublasHandle h;
  state.SetLabel(fused ? "warptile + bias/ReLU epilogue" : "cublasSgemm + bias_relu kernel");
  bench::run(state, [&](cudaStream_t s) {
    if (fused) ch06::gemm_bias_relu_fused(d.m, d.n, d.k, d.a.data(), d.b.data(), bias.data(), d.c.data(), s);
    else ch06::gemm_bias_relu_cublas(h, d.m, d.n, d.k, d.a.data(), d.b.data(), bias.data(), d.c.data(), s);
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
  for (const int size : {4096, 8192, 4095}) {
    const std::string n = std::to_string(size);
    add("BM_tc_gemm_cublas/fp16/" + n, [size](benchmark::State& s) { bm_tc_cublas<__half>(s, size); });
    add("BM_tc_gemm_cublas/bf16/" + n, [size](benchmark::State& s) { bm_tc_cublas<__nv_bfloat16>(s, size); });
    add("BM_tc_gemm/wmma_fp16/" + n, [size](benchmark::State& s) { bm_tc_wmma<__half>(s, size); });
    add("BM_tc_gemm/wmma_bf16/" + n, [size](benchmark::State& s) { bm_tc_wmma<__nv_bfloat16>(s, size); });
    if (size % 128 == 0)
      add("BM_tc_gemm/wgmma_bf16/" + n, [size](benchmark::State& s) { bm_tc_wgmma(s, size); });
  }
  for (const auto& layer : kLayers) {
    const auto shape = layer.shape;
    add(std::string("BM_conv_cudnn/") + layer.slug, [shape](benchmark::State& s) { bm_conv_cudnn(s, shape); });
    add(std::string("BM_conv/implicit_gemm/") + layer.slug,
        [shape](benchmark::State& s) { bm_conv_implicit_gemm(s, shape); });
  }
  for (const auto& sh : kFusedShapes) {
    const std::string n = std::to_string(sh.m) + "x" + std::to_string(sh.n) + "x" + std::to_string(sh.k);
    add("BM_gemm_bias_relu/cublas_then_kernel/" + n, [sh](benchmark::State& s) { bm_gemm_bias_relu(s, sh, false); });
    add("BM_gemm_bias_relu/fused/" + n, [sh](benchmark::State& s) { bm_gemm_bias_relu(s, sh, true); });
  }
  return true;
}();

}  // namespace

CUDALAB_BENCH_MAIN();
