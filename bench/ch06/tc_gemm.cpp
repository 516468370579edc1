// Chapter 6 benchmarks, tensor-core GEMMs beside cublasGemmEx (rows: sgemm.cpp's header):
//   BM_tc_gemm/<wmma_fp16|wmma_bf16|mma_fp16|mma_bf16|wgmma_bf16>/<size>,
//   BM_tc_gemm_cublas/<fp16|bf16>/<size>,
//   BM_tc_gemm_cublas_tn/bf16/<size>
#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include <functional>
#include <string>
#include <type_traits>
#include <vector>

#include "ch06/ch06.hpp"
#include "ch06_bench.hpp"
#include "cudalab/bench.hpp"
#include "cudalab/cublas.hpp"
#include "cudalab/device_fill.hpp"
#include "cudalab/memory.hpp"

using namespace cudalab;
using namespace cudalab::bench_ch06;

namespace {

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

// mma.sync m16n8k16 + ldmatrix + a cp.async pipeline (worked example), beside cublasGemmEx NN.
template <class T>
void bm_tc_mma(benchmark::State& state, int size) {
  state.SetLabel("mma.sync m16n8k16, ldmatrix, swizzled smem, 4-stage cp.async, NN");
  bm_tc_hand<T>(state, size, false,
                std::string("mma/") + type_name(TcData<T>::type()) + "/" + std::to_string(size),
                [size](TcData<T>& d, cudaStream_t s) {
                  ch06::mma_gemm(size, size, size, 1.0f, d.a.data(), d.b.data(), 0.0f, d.c.data(),
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

using bench::add;  // cudalab/bench.hpp

[[maybe_unused]] const bool kRegistered = [] {
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
      add("BM_tc_gemm/mma_fp16/" + n, [size](benchmark::State& s) { bm_tc_mma<__half>(s, size); });
      add("BM_tc_gemm/mma_bf16/" + n,
          [size](benchmark::State& s) { bm_tc_mma<__nv_bfloat16>(s, size); });
      add("BM_tc_gemm_cublas_tn/bf16/" + n,
          [size](benchmark::State& s) { bm_tc_cublas<__nv_bfloat16>(s, size, true); });
      add("BM_tc_gemm/wgmma_bf16/" + n, [size](benchmark::State& s) { bm_tc_wgmma(s, size); });
    }
  }
  return true;
}();

}  // namespace
