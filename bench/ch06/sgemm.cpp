// Chapter 6 benchmarks: every hand-written kernel timed beside the vendor library in the same row
// (bench::run_vs: the two alternate in every iteration; vs_base = library time / kernel time).
// A file per topic, registered in this order: sgemm.cpp, tc_gemm.cpp, conv.cpp, fused.cpp; the
// rows of all of them are listed here.
//
//   BM_sgemm/<variant>/<size>            the SGEMM ladder, beside cublasSgemm (NN, row-major via
//                                        the swap identity; CUBLAS_DEFAULT_MATH: FP32, no TF32)
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
//     --benchmark_out_format=json
#include <string>

#include "ch06/ch06.hpp"
#include "ch06_bench.hpp"
#include "cudalab/bench.hpp"
#include "cudalab/cublas.hpp"

using namespace cudalab;
using namespace cudalab::bench_ch06;

namespace {

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

using bench::add;  // cudalab/bench.hpp

[[maybe_unused]] const bool kRegistered = [] {
  for (const int size : {1024, 2048, 4096, 4095}) {
    add("BM_sgemm_cublas/" + std::to_string(size),
        [size](benchmark::State& s) { bm_sgemm_cublas(s, size); });
    for (const auto v : ch06::kAllSgemmVariants)
      add("BM_sgemm/" + std::string(ch06::to_string(v)) + "/" + std::to_string(size),
          [v, size](benchmark::State& s) { bm_sgemm(s, v, size); });
  }
  return true;
}();

}  // namespace

CUDALAB_BENCH_MAIN();
