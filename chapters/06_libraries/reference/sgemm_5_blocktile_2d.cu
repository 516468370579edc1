// SGEMM step 5: register blocking in two dimensions — each thread computes a tile of C.
//
// Step 4 (sgemm_4_blocktile_1d.cu) does (8 + 1) shared loads per 8 FMAs. Step 5 (2D, exercise
// 6.2): a thread computes a TM x TN = 8 x 8 tile: 16 shared loads per 64 FMAs. The block tile
// grows to 128 x 128 so global traffic falls too: per K step of 8 a block loads (128 + 128) x 8
// floats for 2 x 128 x 128 x 8 FLOPs = 32 FLOP/byte. Boehm: 68.7% of cuBLAS on an A6000. Step 5's
// design question is the shared layout and which columns a thread owns: they decide how many
// shared reads a k step costs and whether they are bank-conflicted. Edges: guarded loads with
// zero-fill, guarded stores.
#include "ch06/sgemm.hpp"
#include "cudalab/check.hpp"
#include "cudalab/math.hpp"
#include "sgemm_common.cuh"

namespace cudalab::ch06::detail {
namespace {

struct Blocktile2dConfig {
  static constexpr int kBM = 128, kBN = 128, kBK = 8, kTM = 8, kTN = 8;
  static constexpr int kThreads = (kBM / kTM) * (kBN / kTN);  // 256
  // 2 blocks per SM caps ptxas at 128 registers a thread. Without it (sm_90, CUDA 13) it took
  // 148: 256 x 152 (allocation granularity) = 38912 registers, so ONE block per SM (8 warps) and
  // nothing ran while that block waited on its global loads between the two barriers.
  static constexpr int kMinBlocksPerSm = 2;
  static constexpr int kLoads = kBM * kBK / kThreads;  // elements of each tile a thread loads: 4
};
static_assert((Blocktile2dConfig::kBM * Blocktile2dConfig::kBK) % Blocktile2dConfig::kThreads == 0);
static_assert((Blocktile2dConfig::kBK * Blocktile2dConfig::kBN) % Blocktile2dConfig::kThreads == 0);
static_assert(Blocktile2dConfig::kLoads * Blocktile2dConfig::kThreads ==
                  Blocktile2dConfig::kBK * Blocktile2dConfig::kBN,
              "as many elements of B as of A per thread");

// Launch: grid (ceil(N / 128), ceil(M / 128)), 256 threads; each computes 8 x 8 elements of its
// block's 128 x 128 tile of C.
__global__ void __launch_bounds__(Blocktile2dConfig::kThreads, Blocktile2dConfig::kMinBlocksPerSm)
    sgemm_blocktile_2d_kernel(SgemmArgs a) {
  // BEGIN EXERCISE 6.2
  // TODO(6.2): sgemm_blocktile_2d_kernel, step 5 of the ladder.
  //   Contract: C = alpha A B + beta C (as in 6.1) for the 128 x 128 tile of C this block owns;
  //     each of the 256 threads computes 64 of its elements, 8 rows x 8 columns (which columns is
  //     yours to choose: the choice decides the bank conflicts of the shared reads). Any M,
  //     N, K; zero-fill outside A and B; guarded stores through store1 with Axpby; beta == 0 never
  //     reads C. Launch (fixed): 256 threads, 128 x 128 x 8 block tile (Blocktile2dConfig), at most
  //     128 registers a thread (__launch_bounds__ with 2 blocks per SM): no spills.
  //   Constraints: shared-memory tiles of A and B (as 6.1), and register blocking in two
  //     dimensions: each value read from shared memory is used for several FMAs from registers
  //     (count the shared loads per FMA: step 4 needs 9 per 8, this step should need far fewer); no
  //     library call.
  //   Goal: BM_sgemm/blocktile_2d/4096 >= 0.72x BM_sgemm_cublas/4096;
  //     `scripts/lab check 6.2`.
  // STARTER: (void)a;
  using C = Blocktile2dConfig;
  const int bm = blockIdx.y * C::kBM, bn = blockIdx.x * C::kBN;
  const int t = threadIdx.x;
  // Thread (t / 16, t % 16) of a 16 x 16 grid: rows t_row .. t_row + 7 and columns
  // t_col .. t_col + 3, 64 + t_col .. 64 + t_col + 3 of the block tile (two runs of 4: why, below).
  const int t_row = (t / (C::kBN / C::kTN)) * C::kTM, t_col = (t % (C::kBN / C::kTN)) * 4;
  // Shared-memory reads bound this kernel (16 values per 64 FMAs): keep them few and free of bank
  // conflicts. As transposed: a thread's 8 A values for one k are 8 consecutive floats, 16-byte
  // aligned, which the compiler reads with two LDS.128; a warp needs 2 rows 32 bytes apart.
  // Bs read as two runs of 4 consecutive floats, 64 apart: two LDS.128 again; in each
  // quarter-warp phase of a 16-byte read, 8 threads cover 128 contiguous bytes, every bank once
  // (the other half-warp reads the same addresses). Columns t % 16 + 16 j are conflict-free too
  // but cost 8 scalar reads (10 shared loads per k instead of 4); columns (t % 16) * 8 + j put a
  // quarter-warp's threads 32 bytes apart: two-way conflicts.
  // As padded by 4 floats a row: the transposing stores (a warp writes 8 k-rows of 4 consecutive
  // m) land in 32 different banks, and rows stay 16-byte aligned.
  constexpr int kPad = 4;
  __shared__ __align__(16) float As[C::kBK][C::kBM + kPad];  // (BK, BM + pad): A transposed
  __shared__ __align__(16) float Bs[C::kBK][C::kBN];         // (BK, BN)
  // Each thread stages C::kLoads elements of A and of B per K tile. A: rows a_r + 32 l, column a_c
  // (8 threads read 32 contiguous bytes of a row); B: rows b_r + 2 l, column b_c (a warp reads 128
  // contiguous bytes of a row).
  constexpr int kARowStep = C::kThreads / C::kBK, kBRowStep = C::kThreads / C::kBN;
  const int a_r = t / C::kBK, a_c = t % C::kBK, b_r = t / C::kBN, b_c = t % C::kBN;
  // A block whose whole 128 x 128 tile of C is inside M x N reads its rows and columns unguarded;
  // only the last, partial K tile and the edge blocks take the guarded, zero-filling path.
  const bool interior = bm + C::kBM <= a.M && bn + C::kBN <= a.N;
  float a_next[C::kLoads], b_next[C::kLoads];
  // The loads of tile k0, into registers: issued one tile ahead, their global latency hides
  // behind this tile's 8 x 64 FMAs instead of stalling the block between its two barriers.
  auto load_tile = [&](int k0) {
    if (interior && k0 + C::kBK <= a.K) {
      const float* ap = a.A + at(bm + a_r, k0 + a_c, a.K);
      const float* bp = a.B + at(k0 + b_r, bn + b_c, a.N);
#pragma unroll
      for (int l = 0; l < C::kLoads; ++l) {
        a_next[l] = ap[static_cast<std::size_t>(l) * kARowStep * a.K];
        b_next[l] = bp[static_cast<std::size_t>(l) * kBRowStep * a.N];
      }
      return;
    }
#pragma unroll
    for (int l = 0; l < C::kLoads; ++l) {
      const int ar = bm + a_r + l * kARowStep, ac = k0 + a_c;
      const int br = k0 + b_r + l * kBRowStep, bc = bn + b_c;
      a_next[l] = (ar < a.M && ac < a.K) ? a.A[at(ar, ac, a.K)] : 0.0f;
      b_next[l] = (br < a.K && bc < a.N) ? a.B[at(br, bc, a.N)] : 0.0f;
    }
  };
  float acc[C::kTM][C::kTN] = {};
  if (a.K > 0) load_tile(0);
  for (int k0 = 0; k0 < a.K; k0 += C::kBK) {
#pragma unroll
    for (int l = 0; l < C::kLoads; ++l) {
      As[a_c][a_r + l * kARowStep] = a_next[l];  // transposed
      Bs[b_r + l * kBRowStep][b_c] = b_next[l];
    }
    __syncthreads();                                // tiles complete
    if (k0 + C::kBK < a.K) load_tile(k0 + C::kBK);  // in flight during the FMAs below
#pragma unroll
    for (int k = 0; k < C::kBK; ++k) {
      float a_reg[C::kTM], b_reg[C::kTN];
#pragma unroll
      for (int i = 0; i < C::kTM; ++i) a_reg[i] = As[k][t_row + i];
#pragma unroll
      for (int j = 0; j < C::kTN; ++j) b_reg[j] = Bs[k][(j < 4 ? 0 : 64) + t_col + j % 4];
#pragma unroll
      for (int i = 0; i < C::kTM; ++i)
#pragma unroll
        for (int j = 0; j < C::kTN; ++j) acc[i][j] += a_reg[i] * b_reg[j];  // 64 FMAs, 4 reads
    }
    __syncthreads();  // all reads done before the next tile is written
  }
  const Axpby epi{a.alpha, a.beta};
  for (int i = 0; i < C::kTM; ++i) {
    if (bm + t_row + i >= a.M) break;
    float* c_row = a.C + at(bm + t_row + i, 0, a.N);
#pragma unroll
    for (int j = 0; j < C::kTN; ++j)
      store1(c_row, bn + (j < 4 ? 0 : 64) + t_col + j % 4, a.N, acc[i][j], epi);
  }
  // END EXERCISE
}

}  // namespace

void sgemm_blocktile_2d(const SgemmArgs& a, cudaStream_t stream) {
  using C = Blocktile2dConfig;
  sgemm_blocktile_2d_kernel<<<dim3(ceil_div(a.N, C::kBN), ceil_div(a.M, C::kBM)), C::kThreads, 0,
                              stream>>>(a);
  CUDALAB_CHECK_LAUNCH();
}

}  // namespace cudalab::ch06::detail
