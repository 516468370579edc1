// Chapter 6 — libraries and the hand-written GEMM ladder: cuBLAS, cuDNN, tensor cores.
// Every topic of the chapter's API, for code that uses several (tests, the benchmark); a file that
// needs one topic includes that header.
#pragma once

#include "ch06/conv.hpp"           // convolution: implicit GEMM and cuDNN (exercise 6.4)
#include "ch06/cublas_layout.hpp"  // cuBLAS from row-major code (exercise 6.3)
#include "ch06/fused.hpp"          // GEMM + bias + ReLU, fused or through cuBLAS (exercise 6.6)
#include "ch06/oracle.hpp"         // CPU oracles
#include "ch06/sgemm.hpp"          // the SGEMM ladder (exercises 6.1, 6.2)
#include "ch06/tensor_core.hpp"    // WMMA (exercise 6.5), wgmma, conversions
