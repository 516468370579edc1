// Chapter 2 benchmarks, cuBLAS beside the card (rows: fma.cpp's header):
//   BM_sgemm_cublas/8192, BM_gemm_cublas/<tf32|fp16|bf16|int8>/8192
#include "cudalab/cublas.hpp"

#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include <cstdint>
#include <string>
#include <type_traits>
#include <vector>

#include "ch02/ch02.hpp"
#include "ch02_bench.hpp"
#include "cudalab/bench.hpp"
#include "cudalab/memory.hpp"

using namespace cudalab;
using namespace cudalab::bench_ch02;

namespace {

constexpr int kGemm = 8192;

// Small integers (exact in every type and in fp32 sums of 8192 products).
float gemm_a(std::size_t i, std::size_t k) {
  return float(int((i * 7 + k * 13) % 5) - 2);
}
float gemm_b(std::size_t j, std::size_t k) {
  return float(int((j * 11 + k * 3) % 5) - 2);
}

enum class GemmType { fp32, tf32, fp16, bf16, int8 };

template <class T>
DeviceBuffer<T> gemm_operand(bool is_a) {
  const std::size_t n = std::size_t(kGemm) * kGemm;
  std::vector<T> h(n);
  for (std::size_t r = 0; r < kGemm; ++r)
    for (std::size_t k = 0; k < kGemm; ++k) {
      const float v = is_a ? gemm_a(r, k) : gemm_b(r, k);
      if constexpr (std::is_same_v<T, __half>)
        h[r * kGemm + k] = __float2half(v);
      else if constexpr (std::is_same_v<T, __nv_bfloat16>)
        h[r * kGemm + k] = __float2bfloat16(v);
      else
        h[r * kGemm + k] = static_cast<T>(v);
    }
  return to_device(h);
}

// Row-major C (M x N) = A (M x K) Bt^T with Bt (N x K) row-major (TN): with column-major cuBLAS,
// C^T = Bt A^T, Bt taken with op T. Checked on 16 sampled entries against a double dot product.
template <class T, class Out>
void bm_gemm(benchmark::State& state, GemmType type) {
  const DeviceBuffer<T> a = gemm_operand<T>(true), b = gemm_operand<T>(false);
  DeviceBuffer<Out> c(std::size_t(kGemm) * kGemm);
  CublasHandle h(type == GemmType::tf32 ? CUBLAS_TF32_TENSOR_OP_MATH : CUBLAS_DEFAULT_MATH);
  auto work = [&](cudaStream_t s) {
    CUDALAB_CHECK_CUBLAS(cublasSetStream(h, s));
    if (type == GemmType::fp32) {
      const float one = 1, zero = 0;
      CUDALAB_CHECK_CUBLAS(cublasSgemm(h, CUBLAS_OP_T, CUBLAS_OP_N, kGemm, kGemm, kGemm, &one,
                                       reinterpret_cast<const float*>(b.data()), kGemm,
                                       reinterpret_cast<const float*>(a.data()), kGemm, &zero,
                                       reinterpret_cast<float*>(c.data()), kGemm));
    } else if (type == GemmType::int8) {
      const int one = 1, zero = 0;
      CUDALAB_CHECK_CUBLAS(cublasGemmEx(h, CUBLAS_OP_T, CUBLAS_OP_N, kGemm, kGemm, kGemm, &one,
                                        b.data(), CUDA_R_8I, kGemm, a.data(), CUDA_R_8I, kGemm,
                                        &zero, c.data(), CUDA_R_32I, kGemm, CUBLAS_COMPUTE_32I,
                                        CUBLAS_GEMM_DEFAULT));
    } else {
      const float one = 1, zero = 0;
      const cudaDataType_t in = type == GemmType::tf32   ? CUDA_R_32F
                                : type == GemmType::fp16 ? CUDA_R_16F
                                                         : CUDA_R_16BF;
      const cublasComputeType_t compute =
          type == GemmType::tf32 ? CUBLAS_COMPUTE_32F_FAST_TF32 : CUBLAS_COMPUTE_32F;
      CUDALAB_CHECK_CUBLAS(cublasGemmEx(h, CUBLAS_OP_T, CUBLAS_OP_N, kGemm, kGemm, kGemm, &one,
                                        b.data(), in, kGemm, a.data(), in, kGemm, &zero, c.data(),
                                        CUDA_R_32F, kGemm, compute, CUBLAS_GEMM_DEFAULT));
    }
  };
  if (!bench::verify(state, "gemm/" + std::to_string(int(type)), [&] {
        work(nullptr);
        CUDALAB_CHECK(cudaDeviceSynchronize());
        for (int s = 0; s < 16; ++s) {
          const std::size_t i = (s * 2654435761u) % kGemm, j = (s * 40503u + 17) % kGemm;
          double want = 0;
          for (std::size_t k = 0; k < kGemm; ++k) want += double(gemm_a(i, k)) * gemm_b(j, k);
          Out got{};
          CUDALAB_CHECK(
              cudaMemcpy(&got, c.data() + i * kGemm + j, sizeof(Out), cudaMemcpyDeviceToHost));
          if (double(got) != want)
            return "C[" + std::to_string(i) + "][" + std::to_string(j) +
                   "] = " + std::to_string(double(got)) + ", expected " + std::to_string(want);
        }
        return std::string();
      }))
    return;
  bench::run(state, work, {.flops = 2.0 * kGemm * kGemm * double(kGemm)});
  const ch02::Metric m = type == GemmType::fp32   ? ch02::Metric::fp32
                         : type == GemmType::tf32 ? ch02::Metric::tf32
                         : type == GemmType::fp16 ? ch02::Metric::fp16
                         : type == GemmType::bf16 ? ch02::Metric::bf16
                                                  : ch02::Metric::int8;
  record_peak(state, "TFLOP/s", [m](double sm, double) { return compute_peak(m, sm); });
}

[[maybe_unused]] const bool kRegistered = [] {
  bench::add("BM_sgemm_cublas/8192",
             [](benchmark::State& s) { bm_gemm<float, float>(s, GemmType::fp32); });
  bench::add("BM_gemm_cublas/tf32/8192",
             [](benchmark::State& s) { bm_gemm<float, float>(s, GemmType::tf32); });
  bench::add("BM_gemm_cublas/fp16/8192",
             [](benchmark::State& s) { bm_gemm<__half, float>(s, GemmType::fp16); });
  bench::add("BM_gemm_cublas/bf16/8192",
             [](benchmark::State& s) { bm_gemm<__nv_bfloat16, float>(s, GemmType::bf16); });
  bench::add("BM_gemm_cublas/int8/8192",
             [](benchmark::State& s) { bm_gemm<std::int8_t, std::int32_t>(s, GemmType::int8); });
  return true;
}();

}  // namespace
