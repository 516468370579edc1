// Chapter 11 — quantized GEMMs through cuBLASLt: INT8 and FP8 (E4M3, per-tensor scales) beside
// bf16, in the layout of a linear layer: Y[n][m] = X[n][k] . W[m][k]^T, all row-major (cuBLAS's
// "TN": the only layout its FP8 kernels take). m, n: output features and tokens; k: input features.
#pragma once

#include <cuda_runtime_api.h>

#include <cstdint>
#include <memory>
#include <string>

#include "ch11/host.hpp"  // Fp8Format

namespace cudalab::ch11 {

class LtGemm {
 public:
  LtGemm();  // one cuBLASLt handle and a 32 MiB workspace; plans cached per (type, m, n, k)
  ~LtGemm();
  LtGemm(LtGemm&&) noexcept;
  LtGemm& operator=(LtGemm&&) noexcept;
  LtGemm(const LtGemm&) = delete;
  LtGemm& operator=(const LtGemm&) = delete;

  // bf16 in and out, fp32 accumulation. Any positive m, n, k.
  void bf16(const void* w, const void* x, void* y, int m, int n, int k,
            cudaStream_t stream = nullptr);
  // INT8 in, INT32 out: exact integer sums. m, n, k multiples of 16 (cuBLASLt's INT8 tensor-core
  // kernels want 16-byte aligned rows).
  void int8(const std::int8_t* w, const std::int8_t* x, std::int32_t* y, int m, int n, int k,
            cudaStream_t stream = nullptr);
  // FP8 in (codes as host.hpp's float_to_fp8 writes them), bf16 out:
  // y = (*w_scale) * (*x_scale) * sum_k w x, the scales device floats (host.hpp's quantize_fp8).
  // w in E4M3; x in E4M3 (inference: activations) or E5M2 (training's backward pass: gradients,
  // whose range needs E5M2's exponent; cuBLASLt takes E4M3 x E5M2 but not E5M2 x E5M2).
  // fp32 accumulation unless fast_accum (Hopper's faster, less precise FP8 accumulation).
  // m, n, k multiples of 16. Throws std::runtime_error on a GPU below compute capability 8.9.
  void fp8(const std::uint8_t* w, const std::uint8_t* x, const float* w_scale, const float* x_scale,
           void* y, int m, int n, int k, bool fast_accum = false, cudaStream_t stream = nullptr,
           Fp8Format x_format = Fp8Format::kE4M3);

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

// Whether the current device runs FP8 GEMMs (compute capability >= 8.9), and why not.
bool fp8_supported(std::string* why_not = nullptr);

}  // namespace cudalab::ch11
