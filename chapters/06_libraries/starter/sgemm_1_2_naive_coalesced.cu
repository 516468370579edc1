// Starter track — write your code at the TODO marks; the tests of each exercise
// fail until you do. (Generated from chapters/06_libraries/reference/sgemm_1_2_naive_coalesced.cu by scripts/variants.py.)
// SGEMM steps 1 and 2 (worked examples): one thread per element of C.
//
// Each thread reads a row of A and a column of B from global memory: 2K loads for 2K FLOPs, an
// arithmetic intensity of 0.25 FLOP/byte before caches. Step 1 maps threadIdx.x to the ROW of C,
// so the 32 threads of a warp read 32 different rows of A (32 sectors per load) and write 32
// rows of C: uncoalesced. Step 2 maps threadIdx.x to the COLUMN: a warp reads one element of A
// (broadcast) and 32 consecutive floats of B (one 128-byte line). Same arithmetic, several times
// faster: Boehm's worklog measures 1.3% -> 8.5% of cuBLAS on an A6000.
#include "ch06/sgemm.hpp"
#include "cudalab/check.hpp"
#include "cudalab/math.hpp"
#include "sgemm_common.cuh"

namespace cudalab::ch06::detail {
namespace {

struct SimpleConfig {
  static constexpr int kTile = 32;  // 32 x 32 threads cover a 32 x 32 tile of C
  static constexpr int kThreads = kTile * kTile;
};
static_assert(SimpleConfig::kThreads <= 1024);

// Launch: grid (ceil(M / 32), ceil(N / 32)), block (32, 32). threadIdx.x -> row: uncoalesced.
__global__ void __launch_bounds__(SimpleConfig::kThreads) sgemm_naive_kernel(SgemmArgs a) {
  const int row = blockIdx.x * SimpleConfig::kTile + threadIdx.x;
  const int col = blockIdx.y * SimpleConfig::kTile + threadIdx.y;
  if (row >= a.M || col >= a.N) return;
  float acc = 0.0f;
  for (int k = 0; k < a.K; ++k) acc += a.A[at(row, k, a.K)] * a.B[at(k, col, a.N)];
  store1(a.C + at(row, 0, a.N), col, a.N, acc, Axpby{a.alpha, a.beta});
}

// Launch: grid (ceil(N / 32), ceil(M / 32)), block (32, 32). threadIdx.x -> column: coalesced.
__global__ void __launch_bounds__(SimpleConfig::kThreads) sgemm_coalesced_kernel(SgemmArgs a) {
  const int col = blockIdx.x * SimpleConfig::kTile + threadIdx.x;
  const int row = blockIdx.y * SimpleConfig::kTile + threadIdx.y;
  if (row >= a.M || col >= a.N) return;
  float acc = 0.0f;
  for (int k = 0; k < a.K; ++k) acc += a.A[at(row, k, a.K)] * a.B[at(k, col, a.N)];
  store1(a.C + at(row, 0, a.N), col, a.N, acc, Axpby{a.alpha, a.beta});
}

}  // namespace

void sgemm_naive(const SgemmArgs& a, cudaStream_t stream) {
  constexpr int t = SimpleConfig::kTile;
  sgemm_naive_kernel<<<dim3(ceil_div(a.M, t), ceil_div(a.N, t)), dim3(t, t), 0, stream>>>(a);
  CUDALAB_CHECK_LAUNCH();
}

void sgemm_coalesced(const SgemmArgs& a, cudaStream_t stream) {
  constexpr int t = SimpleConfig::kTile;
  sgemm_coalesced_kernel<<<dim3(ceil_div(a.N, t), ceil_div(a.M, t)), dim3(t, t), 0, stream>>>(a);
  CUDALAB_CHECK_LAUNCH();
}

}  // namespace cudalab::ch06::detail
