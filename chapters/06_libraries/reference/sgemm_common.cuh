// Device pieces every SGEMM step shares: guarded loads with zero-fill and guarded stores through
// an epilogue. One copy, so that each step's file shows only what that step changes.
#pragma once

#include <cuda_runtime.h>

#include <cstddef>
#include <cstdint>

#include "sgemm_steps.hpp"

namespace cudalab::ch06::detail {

// Element (row, col) of a dense row-major matrix with `cols` columns: 64-bit offset (M * N may
// pass 2^31 on an H200).
__device__ __forceinline__ std::size_t at(int row, int col, int cols) {
  return static_cast<std::size_t>(row) * static_cast<std::size_t>(cols) +
         static_cast<std::size_t>(col);
}

// x[col .. col + 3] of a row whose valid columns are [0, limit); elements past the limit read as
// 0 (predicated zero-fill: a partial tile then adds 0 * 0 to the dot products). `vec_ok` says the
// row start is 16-byte aligned and col % 4 == 0, so one 16-byte load (LDG.128) can fetch all four.
__device__ __forceinline__ float4 load4(const float* row, int col, int limit, bool vec_ok) {
  if (vec_ok && col + 3 < limit) return *reinterpret_cast<const float4*>(row + col);
  float4 v;
  v.x = col + 0 < limit ? row[col + 0] : 0.0f;
  v.y = col + 1 < limit ? row[col + 1] : 0.0f;
  v.z = col + 2 < limit ? row[col + 2] : 0.0f;
  v.w = col + 3 < limit ? row[col + 3] : 0.0f;
  return v;
}

// C = alpha * acc + beta * C. beta == 0 must not read C (BLAS semantics: C may hold NaN, and
// 0 * NaN = NaN), so the read is skipped rather than multiplied by zero.
struct Axpby {
  float alpha, beta;
  __device__ bool reads_c() const { return beta != 0.0f; }
  __device__ float operator()(float acc, float c, int /*col*/) const {
    return alpha * acc + beta * c;
  }
};

// The fused epilogue of exercise 6.6: Y = relu(A B + bias), applied in registers before the store
// (col: the column in Y).
struct BiasRelu {
  const float* bias;
  __device__ bool reads_c() const { return false; }
  __device__ float operator()(float acc, float /*c*/, int col) const {
    // BEGIN EXERCISE 6.6
    // TODO(6.6): BiasRelu::operator(), the fused epilogue of the warp-tiled SGEMM.
    //   Contract: the value the kernel stores at Y[row][col], given that element's accumulator (its
    //     A B): the accumulator plus the bias of its column, through a ReLU, as ch06/ch06.hpp
    //     defines gemm_bias_relu; C is not read.
    //   Constraints: registers only: Y is written once, by the GEMM's own store (no second pass).
    //   Goal: BM_gemm_bias_relu/fused/16384x1024x64 >= 1.3x faster than cublas_then_kernel,
    //     and explain, shape by shape, when the library path wins;
    //     `scripts/lab check 6.6`.
    // STARTER: (void)col;
    // STARTER: return acc;
    return fmaxf(acc + bias[col], 0.0f);
    // END EXERCISE
  }
};

template <class Epilogue>
__device__ __forceinline__ void store1(float* c_row, int col, int limit, float acc,
                                       const Epilogue& epi) {
  if (col < limit) c_row[col] = epi(acc, epi.reads_c() ? c_row[col] : 0.0f, col);
}

// Four consecutive outputs: one 16-byte store when the row is aligned and all four are inside.
template <class Epilogue>
__device__ __forceinline__ void store4(float* c_row, int col, int limit, float4 v, bool vec_ok,
                                       const Epilogue& epi) {
  if (vec_ok && col + 3 < limit) {
    float4* p = reinterpret_cast<float4*>(c_row + col);
    const float4 old = epi.reads_c() ? *p : make_float4(0.0f, 0.0f, 0.0f, 0.0f);
    *p = make_float4(epi(v.x, old.x, col), epi(v.y, old.y, col + 1), epi(v.z, old.z, col + 2),
                     epi(v.w, old.w, col + 3));
    return;
  }
  store1(c_row, col + 0, limit, v.x, epi);
  store1(c_row, col + 1, limit, v.y, epi);
  store1(c_row, col + 2, limit, v.z, epi);
  store1(c_row, col + 3, limit, v.w, epi);
}

}  // namespace cudalab::ch06::detail
