// Chapter 6 benchmarks: every hand-written kernel timed beside the vendor library in the same row
// (bench::run_vs: the two alternate in every iteration; vs_base = library time / kernel time).
//
//   BM_sgemm/<variant>/<size>            the SGEMM ladder, beside cublasSgemm (NN, row-major via
//   the
//                                        swap identity; CUBLAS_DEFAULT_MATH: FP32, no TF32)
//   BM_sgemm_cublas/<size>               cublasSgemm alone (the ladder tables' yardstick)
//   BM_tc_gemm/wmma_<fp16|bf16>/<size>   WMMA tensor cores (NN), beside cublasGemmEx NN, same type
//   BM_tc_gemm/wgmma_bf16/<size>         Hopper wgmma (sm_90a), TN: C = A Bt^T, beside cublasGemmEx
//                                        TN (CUBLAS_OP_T on the K-major Bt): the same layout
//   BM_tc_gemm_cublas/<fp16|bf16>/<size> cublasGemmEx NN alone (labelled "NN")
//   BM_tc_gemm_cublas_tn/bf16/<size>     cublasGemmEx TN alone (labelled "TN")
//                                        (cublasGemmEx: CUBLAS_COMPUTE_32F, fp32 output)
//   BM_conv/implicit_gemm/<layer>        exercise 6.4, beside cuDNN's fastest GEMM-family
//                                        algorithm (the same algorithm) when built with cuDNN
//   BM_conv_cudnn/<layer>                cuDNN alone, its heuristic pick (Get_v7, no measurement)
//   BM_conv_cudnn_fastest/<layer>        cuDNN alone, its fastest algorithm of any kind (cudnnFind;
//                                        FFT and Winograd included)
//   BM_conv_cudnn_gemm/<layer>           cuDNN alone, its fastest GEMM-family algorithm
//                                        (all: NCHW fp32, batch 32, FMA math: no TF32)
//   BM_gemm_bias_relu/fused/<MxNxK>      exercise 6.6, beside cublas_then_kernel
//   BM_gemm_bias_relu/cublas_then_kernel/<MxNxK>
// The library rows call cuBLAS directly (not the chapter's exercise 6.3), so they stay the
// yardstick in the learner's build too. The key ratios and speed goals read from these rows are
// declared in bench/ch06/ch06.toml.
//
// Checked before timing (bench::verify): a hand-written kernel's whole output against the
// library's (same inputs), within the rounding of a K-long fp32 dot product; a library row
// against a host double-precision oracle on a grid of 64 x 64 sampled elements (edges included).
// SGEMM sizes: 1024, 2048, 4096 (cubes) and 4095 (odd: every tile edge is partial).
//   ./build/gpu/bench/bench_ch06 --benchmark_repetitions=5 --benchmark_out=ch06.json
//   --benchmark_out_format=json
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <exception>
#include <functional>
#include <map>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

#include "ch06/ch06.hpp"
#include "cudalab/bench.hpp"
#include "cudalab/cublas.hpp"
#include "cudalab/device_fill.hpp"
#include "cudalab/memory.hpp"

using namespace cudalab;

namespace {

// |got - want| <= 2e-5 K + 1e-5 |want|: an fp32 dot product of K terms in [-1, 1] x [-1, 1] rounds
// by about sqrt(K) 2^-24 K / 4 in practice; a skipped tile or K slab is off by ~1 or more.
Tolerance dot_tolerance(int k) {
  return {.abs = 2e-5 * k, .rel = 1e-5};
}

// 64 sample indices in [0, n): both ends and a spread in between.
std::vector<int> samples(int n) {
  std::vector<int> s;
  for (int i = 0; i < 64; ++i)
    s.push_back(static_cast<int>((static_cast<long long>(n - 1) * i) / 63));
  return s;
}

// Host oracle of C (M x N) = A (M x K) op(B) on 64 x 64 sampled elements. B is K x N row-major
// (NN) or, with b_transposed, Bt (N x K) row-major (TN). `c` is the device result.
std::string check_gemm_sampled(const std::vector<float>& a, const std::vector<float>& b,
                               bool b_transposed, int m, int n, int k, const std::vector<float>& c,
                               const char* what) {
  std::vector<double> got, want;
  for (int i : samples(m))
    for (int j : samples(n)) {
      double acc = 0;
      for (int p = 0; p < k; ++p)
        acc += double(a[std::size_t(i) * k + p]) *
               double(b_transposed ? b[std::size_t(j) * k + p] : b[std::size_t(p) * n + j]);
      want.push_back(acc);
      got.push_back(c[std::size_t(i) * n + j]);
    }
  return bench::mismatch(got, want, dot_tolerance(k), what);
}

// Row-major C (M x N) = A (M x K) B (K x N) with column-major cuBLAS: C^T = B^T A^T.
void cublas_sgemm_nn(cublasHandle_t h, int m, int n, int k, const float* a, const float* b,
                     float* c, cudaStream_t s) {
  const float one = 1.0f, zero = 0.0f;
  CUDALAB_CHECK_CUBLAS(cublasSetStream(h, s));
  CUDALAB_CHECK_CUBLAS(
      cublasSgemm(h, CUBLAS_OP_N, CUBLAS_OP_N, n, m, k, &one, b, n, a, k, &zero, c, n));
}

// cublasGemmEx, fp32 output and compute. NN: B (K x N) row-major. TN: Bt (N x K) row-major, the
// wgmma kernel's layout: C^T = Bt A^T, Bt is the column-major K x N matrix (Bt)^T, taken with op T.
void cublas_gemm_ex(cublasHandle_t h, bool tn, int m, int n, int k, const void* a, const void* b,
                    cudaDataType_t type, float* c, cudaStream_t s) {
  const float one = 1.0f, zero = 0.0f;
  CUDALAB_CHECK_CUBLAS(cublasSetStream(h, s));
  CUDALAB_CHECK_CUBLAS(cublasGemmEx(h, tn ? CUBLAS_OP_T : CUBLAS_OP_N, CUBLAS_OP_N, n, m, k, &one,
                                    b, type, tn ? k : n, a, type, k, &zero, c, CUDA_R_32F, n,
                                    CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT));
}

struct GemmData {
  int m, n, k;
  DeviceBuffer<float> a, b, c, ref;  // ref: the library's result for the same inputs
  GemmData(int m_, int n_, int k_)
      : m(m_),
        n(n_),
        k(k_),
        a(uniform_device_buffer(std::size_t(m_) * k_, 11, -1.0f, 1.0f)),
        b(uniform_device_buffer(std::size_t(k_) * n_, 12, -1.0f, 1.0f)),
        c(uniform_device_buffer(std::size_t(m_) * n_, 13, -1.0f, 1.0f)),
        ref(std::size_t(m_) * n_) {}
  double flops() const { return 2.0 * m * n * k; }
  // Compulsory traffic: read A and B once, write C (beta = 0).
  double bytes() const { return 4.0 * (double(m) * k + double(k) * n + double(m) * n); }
};

void bm_sgemm(benchmark::State& state, ch06::SgemmVariant v, int size) {
  GemmData d(size, size, size);
  CublasHandle h(
      CUBLAS_DEFAULT_MATH);  // FP32 on CUDA cores: TF32 only with CUBLAS_TF32_TENSOR_OP_MATH
  state.SetLabel(std::string(ch06::to_string(v)));
  auto work = [&](cudaStream_t s) {
    ch06::sgemm(v, d.m, d.n, d.k, 1.0f, d.a.data(), d.b.data(), 0.0f, d.c.data(), s);
  };
  auto base = [&](cudaStream_t s) {
    cublas_sgemm_nn(h, d.m, d.n, d.k, d.a.data(), d.b.data(), d.ref.data(), s);
  };
  if (!bench::verify(state, "sgemm/" + std::string(ch06::to_string(v)) + "/" + std::to_string(size),
                     [&] {
                       work(nullptr);
                       base(nullptr);
                       CUDALAB_CHECK(cudaDeviceSynchronize());
                       return bench::mismatch(d.c.to_host(), d.ref.to_host(), dot_tolerance(d.k),
                                              "sgemm against cublasSgemm");
                     }))
    return;
  bench::run_vs(state, work, base, {.bytes = d.bytes(), .flops = d.flops()});
}

void bm_sgemm_cublas(benchmark::State& state, int size) {
  GemmData d(size, size, size);
  CublasHandle h(CUBLAS_DEFAULT_MATH);
  state.SetLabel("cublasSgemm NN, CUBLAS_DEFAULT_MATH (no TF32)");
  auto work = [&](cudaStream_t s) {
    cublas_sgemm_nn(h, d.m, d.n, d.k, d.a.data(), d.b.data(), d.c.data(), s);
  };
  if (!bench::verify(state, "sgemm_cublas/" + std::to_string(size), [&] {
        work(nullptr);
        CUDALAB_CHECK(cudaDeviceSynchronize());
        return check_gemm_sampled(d.a.to_host(), d.b.to_host(), false, d.m, d.n, d.k, d.c.to_host(),
                                  "cublasSgemm against a host oracle");
      }))
    return;
  bench::run(state, work, {.bytes = d.bytes(), .flops = d.flops()});
}

// fp16 / bf16 operands for the tensor-core rows: uniform in [-1, 1], converted on the device. For
// the TN rows, b holds Bt (N x K): the same size, random all the same.
template <class T>
struct TcData {
  int size;
  DeviceBuffer<T> a, b;
  DeviceBuffer<float> c, ref;
  explicit TcData(int n)
      : size(n),
        a(std::size_t(n) * n),
        b(std::size_t(n) * n),
        c(std::size_t(n) * n),
        ref(std::size_t(n) * n) {
    ch06::convert(uniform_device_buffer(a.size(), 21, -1.0f, 1.0f).data(), a.data(), a.size());
    ch06::convert(uniform_device_buffer(b.size(), 22, -1.0f, 1.0f).data(), b.data(), b.size());
    CUDALAB_CHECK(
        cudaDeviceSynchronize());  // the conversions, before bench::run's own stream starts
  }
  double flops() const { return 2.0 * size * double(size) * size; }
  double bytes() const { return (2.0 * sizeof(T) + 4.0) * size * double(size); }
  static cudaDataType_t type() { return std::is_same_v<T, __half> ? CUDA_R_16F : CUDA_R_16BF; }
  static std::vector<float> to_float(const DeviceBuffer<T>& x) {
    const std::vector<T> h = x.to_host();
    std::vector<float> f(h.size());
    for (std::size_t i = 0; i < h.size(); ++i) {
      if constexpr (std::is_same_v<T, __half>)
        f[i] = __half2float(h[i]);
      else
        f[i] = __bfloat162float(h[i]);
    }
    return f;
  }
};

const char* type_name(cudaDataType_t t) {
  return t == CUDA_R_16F ? "fp16" : "bf16";
}

template <class T>
void bm_tc_cublas(benchmark::State& state, int size, bool tn) {
  TcData<T> d(size);
  CublasHandle h;
  state.SetLabel(tn ? "cublasGemmEx TN, CUBLAS_COMPUTE_32F"
                    : "cublasGemmEx NN, CUBLAS_COMPUTE_32F");
  auto work = [&](cudaStream_t s) {
    cublas_gemm_ex(h, tn, size, size, size, d.a.data(), d.b.data(), d.type(), d.c.data(), s);
  };
  if (!bench::verify(state,
                     std::string("tc_cublas/") + (tn ? "tn/" : "nn/") + type_name(d.type()) + "/" +
                         std::to_string(size),
                     [&] {
                       work(nullptr);
                       CUDALAB_CHECK(cudaDeviceSynchronize());
                       return check_gemm_sampled(d.to_float(d.a), d.to_float(d.b), tn, size, size,
                                                 size, d.c.to_host(),
                                                 "cublasGemmEx against a host oracle");
                     }))
    return;
  bench::run(state, work, {.bytes = d.bytes(), .flops = d.flops()});
}

// A hand-written tensor-core kernel beside cublasGemmEx of the same type and layout.
template <class T>
void bm_tc_hand(benchmark::State& state, int size, bool tn, const std::string& key,
                const std::function<void(TcData<T>&, cudaStream_t)>& kernel) {
  TcData<T> d(size);
  CublasHandle h;
  auto work = [&](cudaStream_t s) { kernel(d, s); };
  auto base = [&](cudaStream_t s) {
    cublas_gemm_ex(h, tn, size, size, size, d.a.data(), d.b.data(), d.type(), d.ref.data(), s);
  };
  if (!bench::verify(state, key, [&] {
        work(nullptr);
        base(nullptr);
        CUDALAB_CHECK(cudaDeviceSynchronize());
        return bench::mismatch(d.c.to_host(), d.ref.to_host(), dot_tolerance(size),
                               tn ? "against cublasGemmEx TN" : "against cublasGemmEx NN");
      }))
    return;
  bench::run_vs(state, work, base, {.bytes = d.bytes(), .flops = d.flops()});
}

template <class T>
void bm_tc_wmma(benchmark::State& state, int size) {
  bm_tc_hand<T>(state, size, false,
                std::string("wmma/") + type_name(TcData<T>::type()) + "/" + std::to_string(size),
                [size](TcData<T>& d, cudaStream_t s) {
                  ch06::wmma_gemm(size, size, size, 1.0f, d.a.data(), d.b.data(), 0.0f, d.c.data(),
                                  s);
                });
}

// Hopper wgmma (sm_90a): C = A Bt^T, bf16, beside cublasGemmEx TN (the same layout).
void bm_tc_wgmma(benchmark::State& state, int size) {
  if (!ch06::wgmma_supported()) {
    state.SkipWithError("wgmma needs compute capability 9.0 (sm_90a)");
    return;
  }
  state.SetLabel("wgmma m64n256k16, TMA + mbarrier ring, warp-specialized, TN");
  bm_tc_hand<__nv_bfloat16>(state, size, true, "wgmma/bf16/" + std::to_string(size),
                            [size](TcData<__nv_bfloat16>& d, cudaStream_t s) {
                              ch06::wgmma_gemm_bf16_tn(size, size, size, d.a.data(), d.b.data(),
                                                       d.c.data(), s);
                            });
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
  ch06::ConvShape s;
  DeviceBuffer<float> x, w, y, ref;
  std::size_t workspace_bytes;
  DeviceBuffer<float> workspace;  // split-K slices of the implicit GEMM, allocated once
  explicit ConvData(const ch06::ConvShape& shape)
      : s(shape),
        x(uniform_device_buffer(std::size_t(s.n) * s.c * s.h * s.w, 31, -1.0f, 1.0f)),
        w(uniform_device_buffer(std::size_t(s.k) * s.c * s.r * s.s, 32, -1.0f, 1.0f)),
        y(std::size_t(s.n) * s.k * s.p() * s.q()),
        ref(y.size()),
        workspace_bytes(ch06::conv2d_implicit_gemm_workspace_bytes(s)),
        workspace((workspace_bytes + sizeof(float) - 1) / sizeof(float)) {}
  // Compulsory traffic: read x and w once, write y.
  double bytes() const { return 4.0 * double(x.size() + w.size() + y.size()); }
  int reduction() const { return s.c * s.r * s.s; }
  // cuDNN may pick FFT or Winograd: their rounding grows with the transform, hence the wider bound.
  Tolerance tolerance() const { return {.abs = 5e-5 * reduction() + 1e-3, .rel = 1e-4}; }
  // Host oracle (double) on 4096 sampled outputs (both ends of every dimension included).
  std::string check_sampled(const DeviceBuffer<float>& out) const {
    const std::vector<float> hx = x.to_host(), hw = w.to_host(), hy = out.to_host();
    const int P = s.p(), Q = s.q();
    std::vector<double> got, want;
    for (int t = 0; t < 4096; ++t) {
      const int n = (t * 7) % s.n, k = (t * 13) % s.k, p = (t * 29) % P, q = (t * 31 + t / 64) % Q;
      double acc = 0;
      for (int c = 0; c < s.c; ++c)
        for (int r = 0; r < s.r; ++r)
          for (int u = 0; u < s.s; ++u) {
            const int hh = p * s.stride - s.pad + r, ww = q * s.stride - s.pad + u;
            if (hh < 0 || hh >= s.h || ww < 0 || ww >= s.w) continue;
            acc += double(hx[((std::size_t(n) * s.c + c) * s.h + hh) * s.w + ww]) *
                   double(hw[((std::size_t(k) * s.c + c) * s.r + r) * s.s + u]);
          }
      want.push_back(acc);
      got.push_back(hy[((std::size_t(n) * s.k + k) * P + p) * Q + q]);
    }
    return bench::mismatch(got, want, tolerance(), "conv2d against a host oracle (4096 outputs)");
  }
};

// One cuDNN convolution per (layer, choice) for the whole process: cudnnFind runs once (its pick
// can differ between runs of Find; within a process every repetition times the same algorithm).
// Never destroyed: a static destructor would run after the CUDA runtime's teardown.
ch06::CudnnConvForward& cudnn_conv(const ConvLayer& layer, ch06::CudnnConvChoice choice) {
  static std::map<std::pair<std::string, int>, ch06::CudnnConvForward*> cache;
  auto& slot = cache[{layer.slug, static_cast<int>(choice)}];
  if (!slot) slot = new ch06::CudnnConvForward(layer.shape, std::size_t{1} << 30, choice);
  return *slot;
}

void bm_conv_implicit_gemm(benchmark::State& state, const ConvLayer& layer) {
  ConvData d(layer.shape);
  auto work = [&](cudaStream_t s) {
    ch06::conv2d_implicit_gemm(d.s, d.x.data(), d.w.data(), d.y.data(), d.workspace.data(),
                               d.workspace_bytes, s);
  };
  if (!ch06::have_cudnn()) {  // no library to sit beside: a host-checked row of its own
    state.SetLabel("no cuDNN in this build: not interleaved");
    if (!bench::verify(state, std::string("conv/") + layer.slug, [&] {
          work(nullptr);
          CUDALAB_CHECK(cudaDeviceSynchronize());
          return d.check_sampled(d.y);
        }))
      return;
    bench::run(state, work, {.bytes = d.bytes(), .flops = d.s.flops()});
    return;
  }
  // Like for like: cuDNN's fastest implicit-GEMM-family algorithm (BM_conv_cudnn_fastest has its
  // fastest of any kind, FFT and Winograd included, for the ratios that compare algorithms).
  ch06::CudnnConvForward& conv = cudnn_conv(layer, ch06::CudnnConvChoice::kFastestGemm);
  state.SetLabel("beside cuDNN " + conv.algo_name() + ", FMA math");
  auto base = [&](cudaStream_t s) { conv.run(d.x.data(), d.w.data(), d.ref.data(), s); };
  if (!bench::verify(state, std::string("conv/") + layer.slug, [&] {
        work(nullptr);
        base(nullptr);
        CUDALAB_CHECK(cudaDeviceSynchronize());
        return bench::mismatch(d.y.to_host(), d.ref.to_host(), d.tolerance(),
                               "conv2d against cuDNN");
      }))
    return;
  bench::run_vs(state, work, base, {.bytes = d.bytes(), .flops = d.s.flops()});
}

void bm_conv_cudnn(benchmark::State& state, const ConvLayer& layer, ch06::CudnnConvChoice choice) {
  if (!ch06::have_cudnn()) {
    state.SkipWithError("built without cuDNN (CUDALAB_HAVE_CUDNN=OFF)");
    return;
  }
  ConvData d(layer.shape);
  ch06::CudnnConvForward& conv = cudnn_conv(layer, choice);
  const char* how = choice == ch06::CudnnConvChoice::kFastestGemm ? "fastest GEMM-family"
                    : choice == ch06::CudnnConvChoice::kFastest   ? "fastest"
                                                                  : "heuristic pick";
  state.SetLabel("cuDNN " + conv.algo_name() + ", FMA math, " + how);
  auto work = [&](cudaStream_t s) { conv.run(d.x.data(), d.w.data(), d.y.data(), s); };
  if (!bench::verify(state, std::string("conv_cudnn/") + conv.algo_name() + "/" + layer.slug, [&] {
        work(nullptr);
        CUDALAB_CHECK(cudaDeviceSynchronize());
        return d.check_sampled(d.y);
      }))
    return;
  bench::run(state, work, {.bytes = d.bytes(), .flops = d.s.flops()});
}

// GEMM + bias + ReLU shapes: skinny (few rows, like a decode step), small, small K (memory-bound:
// the extra pass over Y matters most), large (compute-bound: the GEMM itself decides).
struct FusedShape {
  int m, n, k;
};
const FusedShape kFusedShapes[] = {
    {32, 4096, 4096}, {512, 1024, 1024}, {16384, 1024, 64}, {8192, 4096, 256}, {4096, 4096, 4096}};

std::string shape_name(const FusedShape& sh) {
  return std::to_string(sh.m) + "x" + std::to_string(sh.n) + "x" + std::to_string(sh.k);
}

void bm_gemm_bias_relu(benchmark::State& state, const FusedShape& sh, bool fused) {
  GemmData d(sh.m, sh.n, sh.k);
  const DeviceBuffer<float> bias = uniform_device_buffer(std::size_t(sh.n), 41, -1.0f, 1.0f);
  CublasHandle h;
  state.SetLabel(fused ? "warptile + bias/ReLU epilogue" : "cublasSgemm + bias_relu kernel");
  auto library = [&](float* y, cudaStream_t s) {
    ch06::gemm_bias_relu_cublas(h, d.m, d.n, d.k, d.a.data(), d.b.data(), bias.data(), y, s);
  };
  auto hand = [&](cudaStream_t s) {
    ch06::gemm_bias_relu_fused(d.m, d.n, d.k, d.a.data(), d.b.data(), bias.data(), d.c.data(), s);
  };
  const std::string key = std::string(fused ? "fused/" : "cublas_then_kernel/") + shape_name(sh);
  if (!fused) {
    auto work = [&](cudaStream_t s) { library(d.c.data(), s); };
    if (!bench::verify(state, key, [&] {
          work(nullptr);
          CUDALAB_CHECK(cudaDeviceSynchronize());
          // relu(A B + bias) on the sampled grid: the host oracle of the GEMM, then the epilogue.
          const std::vector<float> a = d.a.to_host(), b = d.b.to_host(), hb = bias.to_host(),
                                   y = d.c.to_host();
          std::vector<double> got, want;
          for (int i : samples(d.m))
            for (int j : samples(d.n)) {
              double acc = 0;
              for (int p = 0; p < d.k; ++p)
                acc += double(a[std::size_t(i) * d.k + p]) * b[std::size_t(p) * d.n + j];
              want.push_back(std::max(acc + hb[j], 0.0));
              got.push_back(y[std::size_t(i) * d.n + j]);
            }
          return bench::mismatch(got, want, dot_tolerance(d.k),
                                 "gemm_bias_relu_cublas against a host oracle");
        }))
      return;
    bench::run(state, work, {.bytes = d.bytes(), .flops = d.flops()});
    return;
  }
  auto base = [&](cudaStream_t s) { library(d.ref.data(), s); };
  if (!bench::verify(state, key, [&] {
        hand(nullptr);
        base(nullptr);
        CUDALAB_CHECK(cudaDeviceSynchronize());
        return bench::mismatch(d.c.to_host(), d.ref.to_host(), dot_tolerance(d.k),
                               "fused against cuBLAS + kernel");
      }))
    return;
  bench::run_vs(state, hand, base, {.bytes = d.bytes(), .flops = d.flops()});
}

using bench::add;  // cudalab/bench.hpp

[[maybe_unused]] const bool kRegistered = [] {
  for (const int size : {1024, 2048, 4096, 4095}) {
    add("BM_sgemm_cublas/" + std::to_string(size),
        [size](benchmark::State& s) { bm_sgemm_cublas(s, size); });
    for (const auto v : ch06::kAllSgemmVariants)
      add("BM_sgemm/" + std::string(ch06::to_string(v)) + "/" + std::to_string(size),
          [v, size](benchmark::State& s) { bm_sgemm(s, v, size); });
  }
  for (const int size : {4096, 8192, 4095}) {
    const std::string n = std::to_string(size);
    add("BM_tc_gemm_cublas/fp16/" + n,
        [size](benchmark::State& s) { bm_tc_cublas<__half>(s, size, false); });
    add("BM_tc_gemm_cublas/bf16/" + n,
        [size](benchmark::State& s) { bm_tc_cublas<__nv_bfloat16>(s, size, false); });
    add("BM_tc_gemm/wmma_fp16/" + n, [size](benchmark::State& s) { bm_tc_wmma<__half>(s, size); });
    add("BM_tc_gemm/wmma_bf16/" + n,
        [size](benchmark::State& s) { bm_tc_wmma<__nv_bfloat16>(s, size); });
    if (size % 128 == 0) {
      add("BM_tc_gemm_cublas_tn/bf16/" + n,
          [size](benchmark::State& s) { bm_tc_cublas<__nv_bfloat16>(s, size, true); });
      add("BM_tc_gemm/wgmma_bf16/" + n, [size](benchmark::State& s) { bm_tc_wgmma(s, size); });
    }
  }
  for (const auto& layer : kLayers) {
    add(std::string("BM_conv_cudnn/") + layer.slug, [&layer](benchmark::State& s) {
      bm_conv_cudnn(s, layer, ch06::CudnnConvChoice::kHeuristic);
    });
    add(std::string("BM_conv_cudnn_fastest/") + layer.slug, [&layer](benchmark::State& s) {
      bm_conv_cudnn(s, layer, ch06::CudnnConvChoice::kFastest);
    });
    add(std::string("BM_conv_cudnn_gemm/") + layer.slug, [&layer](benchmark::State& s) {
      bm_conv_cudnn(s, layer, ch06::CudnnConvChoice::kFastestGemm);
    });
    add(std::string("BM_conv/implicit_gemm/") + layer.slug,
        [&layer](benchmark::State& s) { bm_conv_implicit_gemm(s, layer); });
  }
  for (const auto& sh : kFusedShapes) {
    add("BM_gemm_bias_relu/cublas_then_kernel/" + shape_name(sh),
        [sh](benchmark::State& s) { bm_gemm_bias_relu(s, sh, false); });
    add("BM_gemm_bias_relu/fused/" + shape_name(sh),
        [sh](benchmark::State& s) { bm_gemm_bias_relu(s, sh, true); });
  }
  return true;
}();

}  // namespace

CUDALAB_BENCH_MAIN();
