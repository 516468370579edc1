// Chapter 8 — tensor-parallel GEMM with cuBLAS (reference/tensor_parallel.cu): C = A B split over
// ranks, checked against one GPU. Matrices are column-major (cuBLAS's order): A is m x k, B is
// k x n, C is m x n, leading dimensions m, k, m.
//
// Ranks are given as in ring_allreduce: devices[r], streams[r] (a stream of that device) and a
// cuBLAS handle created on that device (handles[r]); ranks may share a device (N ranks simulated on
// one GPU). a[r] and b[r] are rank r's replicas of the whole A and B (the split is of the work; a
// real model would store only its shard), c[r] its m x n output. Asynchronous; on return the
// current device is what it was. As in ring_allreduce, the inputs are what the ranks' streams have
// produced before the call, and later work on streams[r] may overwrite c[r] (it waits for the
// other ranks' reads of it).
#pragma once

#include <cublas_v2.h>
#include <cuda_runtime_api.h>

#include <span>

namespace cudalab::ch08 {

struct TpRanks {
  std::span<const int> devices;
  std::span<const cudaStream_t> streams;
  std::span<const cublasHandle_t> handles;
};

// Column split + all-gather: rank r computes the columns ring_chunk(n, ranks, r) of C (A times its
// columns of B: no communication inside the GEMM), then every rank copies every other rank's
// columns in (contiguous in column-major). Every c[r] ends equal to A B.
void tp_gemm_columns(std::span<const float* const> a, std::span<const float* const> b,
                     std::span<float* const> c, int m, int n, int k, const TpRanks& ranks);
// Row split + all-reduce: rank r computes the partial product over its slice ring_chunk(k, ranks,
// r) of the inner dimension (its columns of A times its rows of B) into c[r], then the hand ring
// all-reduce sums the partials. Every c[r] ends equal to A B (up to the order of the additions).
void tp_gemm_rows(std::span<const float* const> a, std::span<const float* const> b,
                  std::span<float* const> c, int m, int n, int k, const TpRanks& ranks);

}  // namespace cudalab::ch08
