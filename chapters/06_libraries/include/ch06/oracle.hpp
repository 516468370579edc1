// Chapter 6 — the CPU oracles of the chapter (cpu/oracle.cpp), in double.
//
// All matrices are row-major (C-style) unless a function says otherwise. Device pointers, sizes
// and a stream, like CUB; any size works (0, 1, odd, not a multiple of a tile); bad arguments
// throw std::invalid_argument naming the argument. (ch06/ch06.hpp includes every topic.)
#pragma once

#include <vector>

#include "ch06/conv.hpp"
#include "ch06/cublas_layout.hpp"

namespace cudalab::ch06 {

// ---------------------------------------------------------------------------------------------
// CPU oracles (cpu/oracle.cpp), in double.
// ---------------------------------------------------------------------------------------------
// C = alpha op(A) op(B) + beta C with the row-major conventions of cublas_sgemm_row_major; C is
// read only when beta != 0. Also returns, in `abs_sum` (when not null, size M * ldc), the
// sum_k |alpha a_ik b_kj| + |beta c_ij| of each element: the scale of its rounding error.
void gemm_oracle(Op opA, Op opB, int M, int N, int K, double alpha, const float* A, int lda,
                 const float* B, int ldb, double beta, const float* C_in, int ldc, double* C_out,
                 double* abs_sum);
// y = conv(x, w) in double.
std::vector<double> conv2d_oracle(const ConvShape& shape, const std::vector<float>& x,
                                  const std::vector<float>& w);

}  // namespace cudalab::ch06
