// Chapter 10 — the fused bias + GELU the chapter registers as a PyTorch operator (torch/).
//
//   z[r, c] = x[r, c] + bias[c]
//   y[r, c] = gelu(z) = 0.5 z (1 + erf(z / sqrt 2))                       (Gelu::kErf, PyTorch's
//                                                                          approximate="none")
//           or 0.5 z (1 + tanh(sqrt(2 / pi) (z + 0.044715 z^3)))          (Gelu::kTanh, "tanh")
//
// Backward, for an upstream gradient dy:
//   dx[r, c]  = dy[r, c] gelu'(z[r, c])
//   dbias[c]  = sum over r of dx[r, c]        (a column reduction over all rows)
//
// The eager composition (x + bias, then gelu) writes z to memory and reads it back: 4 passes over
// the matrix forward instead of 2. Both are memory-bound (a few FLOPs a byte), so the fused
// forward should run ~2x the eager pair at a size that does not fit in L2.
//
// Element types: float, double, __half, __nv_bfloat16. Arithmetic is in float for the three
// 32-bit-or-narrower types and in double for double: a half-precision kernel keeps its
// intermediates, and the dbias sum, in fp32 (the mixed-precision rule of the chapter; 10.2).
//
// Layout: row-major with a row stride (ld*, in elements, >= cols): a row-strided view (a slice of
// a wider matrix, torch's x[:, :n]) is read in place. Elements of a row must be contiguous (column
// stride 1): a transposed view is refused here (the PyTorch wrapper copies it, and the chapter
// measures what that copy costs). Any rows and cols, including 0.
#pragma once

#include <cuda_runtime_api.h>

#include <cstddef>

namespace cudalab::ch10 {

enum class Gelu { kErf, kTanh };

const char* to_string(Gelu form);

// y = gelu(x + bias). y may equal x (in place) when ldy == ldx; it must not partially overlap x.
template <class T>
void bias_gelu_forward(const T* x, std::size_t ldx, const T* bias, T* y, std::size_t ldy,
                       std::size_t rows, std::size_t cols, Gelu form = Gelu::kErf,
                       cudaStream_t stream = nullptr);

// The eager composition in two kernels, as a framework without fusion runs it: z = x + bias
// written to y, then y = gelu(y) in place. The benchmark's baseline (4 passes over the matrix).
template <class T>
void bias_gelu_two_kernels(const T* x, std::size_t ldx, const T* bias, T* y, std::size_t ldy,
                           std::size_t rows, std::size_t cols, Gelu form = Gelu::kErf,
                           cudaStream_t stream = nullptr);

// Temporary storage of bias_gelu_backward: one partial column sum per row block (CUB's protocol:
// the caller allocates it, outside timed loops; no call allocates).
std::size_t bias_gelu_backward_workspace_bytes(std::size_t cols);

// dx = dy * gelu'(x + bias) and dbias = column sums of dx. dx may equal dy (in place, lddx ==
// lddy).
template <class T>
void bias_gelu_backward(const T* dy, std::size_t lddy, const T* x, std::size_t ldx, const T* bias,
                        T* dx, std::size_t lddx, T* dbias, std::size_t rows, std::size_t cols,
                        void* workspace, std::size_t workspace_bytes, Gelu form = Gelu::kErf,
                        cudaStream_t stream = nullptr);

}  // namespace cudalab::ch10
