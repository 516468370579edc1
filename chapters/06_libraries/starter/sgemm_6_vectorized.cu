// Starter track — write your code at the TODO marks; the tests of each exercise
// fail until you do. (Generated from chapters/06_libraries/reference/sgemm_6_vectorized.cu by scripts/variants.py.)
// SGEMM step 6 (worked example): 16-byte loads, and the A tile stored transposed.
//
// Same 128 x 128 x 8 block tile and 8 x 8 thread tile as step 5. Two changes:
//  * global loads: each thread fetches one float4 of A and one float4 of B per K step (LDG.128:
//    a quarter of the load instructions of step 5);
//  * As is stored transposed, (BK, BM): the 8 A values a thread needs for one k are then 8
//    consecutive floats, read with two LDS.128 instead of eight LDS.32 down a column.
// Shared traffic per k: 4 LDS.128 for 64 FMAs. Boehm: 68.7% -> 78.4% of cuBLAS. Reads of Bs are
// still 2-way bank-conflicted (a thread's 8 columns are contiguous, so lanes are 32 bytes
// apart): step 7 fixes that with 4 x 4 sub-tiles. Edges: load4 falls back to guarded scalar
// loads (zero-fill) at partial tiles or when rows are not 16-byte aligned (K or N % 4 != 0).
#include "ch06/sgemm.hpp"
#include "cudalab/check.hpp"
#include "cudalab/math.hpp"
#include "sgemm_common.cuh"

namespace cudalab::ch06::detail {
namespace {

struct VectorizedConfig {
  static constexpr int kBM = 128, kBN = 128, kBK = 8, kTM = 8, kTN = 8;
  static constexpr int kThreads = (kBM / kTM) * (kBN / kTN);  // 256
};
static_assert(VectorizedConfig::kBM * VectorizedConfig::kBK == 4 * VectorizedConfig::kThreads,
              "one float4 of A per thread per K step");
static_assert(VectorizedConfig::kBK * VectorizedConfig::kBN == 4 * VectorizedConfig::kThreads,
              "one float4 of B per thread per K step");

// Launch: grid (ceil(N / 128), ceil(M / 128)), 256 threads; thread t owns the 8 x 8 tile of C at
// rows (t / 16) * 8, columns (t % 16) * 8 of the block tile.
__global__ void __launch_bounds__(VectorizedConfig::kThreads)
sgemm_vectorized_kernel(SgemmArgs a, bool vec_a, bool vec_b, bool vec_c) {
  using C = VectorizedConfig;
  __shared__ __align__(16) float As[C::kBK][C::kBM];  // (BK, BM): A tile transposed
  __shared__ __align__(16) float Bs[C::kBK][C::kBN];  // (BK, BN)
  const int bm = blockIdx.y * C::kBM, bn = blockIdx.x * C::kBN;
  const int t = threadIdx.x;
  const int t_row = (t / (C::kBN / C::kTN)) * C::kTM, t_col = (t % (C::kBN / C::kTN)) * C::kTN;
  const int a_row = t / (C::kBK / 4), a_col = (t % (C::kBK / 4)) * 4;  // float4 (a_row, a_col..+3)
  const int b_row = t / (C::kBN / 4), b_col = (t % (C::kBN / 4)) * 4;  // a warp: 512 contiguous bytes
  const float* a_src = a.A + at(bm + a_row < a.M ? bm + a_row : 0, 0, a.K);
  const int a_limit = bm + a_row < a.M ? a.K : 0;  // a row past M reads as zeros
  float acc[C::kTM][C::kTN] = {};
  for (int k0 = 0; k0 < a.K; k0 += C::kBK) {
    const float4 av = load4(a_src, k0 + a_col, a_limit, vec_a);
    As[a_col + 0][a_row] = av.x;  // transpose on the way into shared memory
    As[a_col + 1][a_row] = av.y;
    As[a_col + 2][a_row] = av.z;
    As[a_col + 3][a_row] = av.w;
    const bool b_in = k0 + b_row < a.K;
    const float4 bv = load4(a.B + at(b_in ? k0 + b_row : 0, bn, a.N), b_col, b_in ? a.N - bn : 0, vec_b);
    *reinterpret_cast<float4*>(&Bs[b_row][b_col]) = bv;
    __syncthreads();  // tiles complete
#pragma unroll
    for (int k = 0; k < C::kBK; ++k) {
      float a_reg[C::kTM], b_reg[C::kTN];
      *reinterpret_cast<float4*>(&a_reg[0]) = *reinterpret_cast<const float4*>(&As[k][t_row]);
      *reinterpret_cast<float4*>(&a_reg[4]) = *reinterpret_cast<const float4*>(&As[k][t_row + 4]);
      *reinterpret_cast<float4*>(&b_reg[0]) = *reinterpret_cast<const float4*>(&Bs[k][t_col]);
      *reinterpret_cast<float4*>(&b_reg[4]) = *reinterpret_cast<const float4*>(&Bs[k][t_col + 4]);
#pragma unroll
      for (int i = 0; i < C::kTM; ++i)
#pragma unroll
        for (int j = 0; j < C::kTN; ++j) acc[i][j] += a_reg[i] * b_reg[j];
    }
    __syncthreads();  // all reads done before the next tile is written
  }
  const Axpby epi{a.alpha, a.beta};
  for (int i = 0; i < C::kTM; ++i) {
    if (bm + t_row + i >= a.M) break;
    float* c_row = a.C + at(bm + t_row + i, 0, a.N);
    for (int j = 0; j < C::kTN; j += 4)
      store4(c_row, bn + t_col + j, a.N, make_float4(acc[i][j], acc[i][j + 1], acc[i][j + 2], acc[i][j + 3]),
             vec_c, epi);
  }
}

}  // namespace

void sgemm_vectorized(const SgemmArgs& a, cudaStream_t stream) {
  using C = VectorizedConfig;
  sgemm_vectorized_kernel<<<dim3(ceil_div(a.N, C::kBN), ceil_div(a.M, C::kBM)), C::kThreads, 0, stream>>>(
      a, rows_are_float4(a.A, a.K), rows_are_float4(a.B, a.N), rows_are_float4(a.C, a.N));
  CUDALAB_CHECK_LAUNCH();
}

}  // namespace cudalab::ch06::detail
