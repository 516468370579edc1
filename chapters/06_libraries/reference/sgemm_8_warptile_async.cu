// SGEMM step 8 (worked example): the warp-tiled kernel of step 7 fed by a 3-stage cp.async
// pipeline (sm_80+), so the global loads of tiles t + 1 and t + 2 are in flight while the FMAs of
// tile t run, without passing through registers.
//
//   block tile (BM, BN, BK) = (128, 128, 16), 256 threads = 8 warps as 4 (M) x 2 (N)
//   warp tile  (32, 64): the 32 lanes as 4 (M) x 8 (N); thread tile 8 x 8 = 2 x 2 sub-tiles of
//   4 x 4, 16 rows and 32 columns apart (the same compute layout as step 7)
//   3 stages x (128 x 20 + 16 x 128) floats = 54 KB of dynamic shared memory, 2 blocks per SM
//
// What changes against step 7:
//  * cp.async.cg (16 bytes, L2 only) copies global memory straight into shared memory: no staging
//    registers, no STS, and the copy of a tile is issued two tiles ahead (commit_group /
//    wait_group keep count), so two tiles of loads are in flight per block while one computes.
//  * cp.async copies rows verbatim, so A arrives as As[m][k] (M-major), not transposed as in
//    step 7. A thread reads a float2 ALONG k, As[m][k .. k + 1], for its 8 rows: 8 LDS.64 per
//    2 k. In a half-warp (the unit of an LDS.64) the lanes share 2 lane_m values, rows 4 apart;
//    the row stride is padded from 16 to 20 floats (80 bytes, still 16-byte aligned for
//    cp.async) so those 2 rows fall 16 banks apart instead of on the same banks: conflict-free.
//    (A float4 along k would halve the A loads but spills at 128 registers.) B reads are step 7's.
//  * BK = 16: one __syncthreads per 16 k (1024 FMAs per thread between barriers).
//  * Grouped block order: 8 block rows are walked column by column, so the blocks resident at the
//    same time share A rows and B columns in L2.
// Per k per thread: 4 LDS.64 + 2 LDS.128 for 64 FMAs — the same shared wavefronts as step 7
// (16 per warp per k), 2 more load instructions.
// Fast path preconditions (anything else falls back to step 7's kernel, which takes any size):
// K > 0, K % 4 == 0 and N % 4 == 0 (every row of A, B, C starts 16-byte aligned), A, B, C 16-byte
// aligned. M, N, K need NOT be multiples of the tile: a copy that falls outside A or B uses
// cp.async's src-size = 0, which zero-fills its 16 bytes (with K and N % 4 == 0 a float4 is
// either fully inside or fully outside), and the epilogue's stores are guarded.
// Target: >= 85% (aim 90%) of cuBLAS SGEMM at 4096^3 on an H200.

#include <cstdint>

#include "ch06/sgemm.hpp"
#include "cudalab/check.hpp"
#include "cudalab/cp_async.cuh"
#include "cudalab/launch.hpp"
#include "cudalab/math.hpp"
#include "sgemm_common.cuh"

namespace cudalab::ch06::detail {
namespace {

struct WarptileAsyncConfig {
  static constexpr int kBM = 128, kBN = 128, kBK = 16;
  static constexpr int kStages = 3;
  static constexpr int kWarpM = 32, kWarpN = 64;  // warp tile
  static constexpr int kWarpsM = kBM / kWarpM, kWarpsN = kBN / kWarpN;
  static constexpr int kLanesM = 4, kLanesN = 8;           // lanes of a warp as 4 x 8
  static constexpr int kSub = 4;                           // 4 x 4 sub-tiles
  static constexpr int kTM = 8, kTN = 8;                   // thread tile: 2 x 2 sub-tiles
  static constexpr int kThreads = kWarpsM * kWarpsN * 32;  // 256
  static constexpr int kMinBlocksPerSm = 2;
  static constexpr int kGroupM = 8;     // block rows per L2 group
  static constexpr int kAK = 2;         // A is read as float2 along k (2 k per LDS.64)
  static constexpr int kALd = kBK + 4;  // As row stride in floats: 80 bytes (see the file comment)
  static constexpr int kStageFloats = kBM * kALd + kBK * kBN;
  static constexpr int kSmemBytes = kStages * kStageFloats * static_cast<int>(sizeof(float));
  static constexpr int kACopies = kBM * kBK / 4 / kThreads;  // float4 copies per thread per tile
  static constexpr int kBCopies = kBK * kBN / 4 / kThreads;
};
using AC = WarptileAsyncConfig;
static_assert(AC::kThreads == 256 && AC::kLanesM * AC::kLanesN == 32);
static_assert(AC::kLanesM * AC::kSub * (AC::kTM / AC::kSub) == AC::kWarpM,
              "sub-tiles cover the warp tile (M)");
static_assert(AC::kLanesN * AC::kSub * (AC::kTN / AC::kSub) == AC::kWarpN,
              "sub-tiles cover the warp tile (N)");
static_assert(AC::kACopies * 4 * AC::kThreads == AC::kBM * AC::kBK,
              "A tile = whole float4 copies per thread");
static_assert(AC::kBCopies * 4 * AC::kThreads == AC::kBK * AC::kBN,
              "B tile = whole float4 copies per thread");
static_assert(AC::kBK % 4 == 0 && AC::kStages >= 2);
static_assert(AC::kSmemBytes * AC::kMinBlocksPerSm <= 227 * 1024,
              "2 blocks must fit in an SM's shared memory");

// Launch: grid (ceil(N / 128), ceil(M / 128)) reordered in groups of 8 block rows, 256 threads,
// AC::kSmemBytes of dynamic shared memory. Preconditions: see the file comment (the host checks).
__global__ void __launch_bounds__(AC::kThreads, AC::kMinBlocksPerSm)
    sgemm_warptile_async_kernel(SgemmArgs a) {
  extern __shared__ __align__(16) float smem[];
  // Stage s: As (BM, BK) = A tile as in global memory (M-major), then Bs (BK, BN).
  auto As = [&](int s) {
    return reinterpret_cast<float(*)[AC::kALd]>(smem + s * AC::kStageFloats);
  };
  auto Bs = [&](int s) {
    return reinterpret_cast<float(*)[AC::kBN]>(smem + s * AC::kStageFloats + AC::kBM * AC::kALd);
  };

  // Grouped order: consecutive block ids walk down a group of kGroupM block rows, then move one
  // block column right. A bijection of the grid (the last group may have fewer rows).
  const int grid_n = gridDim.x, grid_m = gridDim.y;
  const int pid = blockIdx.y * grid_n + blockIdx.x;
  const int per_group = AC::kGroupM * grid_n;
  const int first_m = (pid / per_group) * AC::kGroupM;
  const int group_rows = min(grid_m - first_m, AC::kGroupM);
  const int bm = (first_m + (pid % per_group) % group_rows) * AC::kBM;
  const int bn = ((pid % per_group) / group_rows) * AC::kBN;

  const int t = threadIdx.x, warp = t / 32, lane = t % 32;
  const int warp_m = warp / AC::kWarpsN, warp_n = warp % AC::kWarpsN;
  const int lane_m = lane / AC::kLanesN, lane_n = lane % AC::kLanesN;
  const int m0 = warp_m * AC::kWarpM + lane_m * AC::kSub;  // first sub-tile; the second is 16
  const int n0 = warp_n * AC::kWarpN + lane_n * AC::kSub;  // rows / 32 columns further
  constexpr int kSubStrideM = AC::kWarpM / 2, kSubStrideN = AC::kWarpN / 2;

  // Copies of K tile `tile` into stage `s`. A: float4 f = t + i * 256 is row f / 4, columns
  // (f % 4) * 4: 4 threads copy 64 contiguous bytes of a row. B: row f / 32, columns (f % 32) * 4:
  // a warp copies 512 contiguous bytes of a row. Shared destinations are contiguous in f. The
  // per-thread parts (row pointers, row/column checks) are computed once; a tile adds k0.
  constexpr int kARowStep = AC::kThreads / (AC::kBK / 4), kBRowStep = AC::kThreads / (AC::kBN / 4);
  const int a_r = t / (AC::kBK / 4), a_c = (t % (AC::kBK / 4)) * 4;
  const int b_r = t / (AC::kBN / 4), b_c = (t % (AC::kBN / 4)) * 4;
  const float* a_src = a.A + at(bm + a_r, a_c, a.K);  // row a_r + i * 64 is i * 64 * K further
  const float* b_src = a.B + at(b_r, bn + b_c, a.N);  // row b_r + i * 8 is i * 8 * N further
  const bool b_col_in = bn + b_c < a.N;
  auto issue_tile = [&](int tile, int s) {
    const int k0 = tile * AC::kBK;
    const bool a_k_in = k0 + a_c < a.K;
#pragma unroll
    for (int i = 0; i < AC::kACopies; ++i) {
      const bool in = a_k_in && bm + a_r + i * kARowStep < a.M;
      cp_async_16(&As(s)[a_r + i * kARowStep][a_c],
                  in ? a_src + static_cast<std::size_t>(i) * kARowStep * a.K + k0 : a.A, in);
    }
#pragma unroll
    for (int i = 0; i < AC::kBCopies; ++i) {
      const bool in = b_col_in && k0 + b_r + i * kBRowStep < a.K;
      cp_async_16(&Bs(s)[b_r + i * kBRowStep][b_c],
                  in ? b_src + static_cast<std::size_t>(k0 + i * kBRowStep) * a.N : a.B, in);
    }
  };

  float acc[AC::kTM][AC::kTN] = {};
  const int tiles = ceil_div(a.K, AC::kBK);
  // Prologue: tiles 0 .. kStages - 2 in flight. One commit per tile, even an empty one, so that
  // "group g" is always "tile g" and wait_group's count stays right near the end of K.
#pragma unroll
  for (int s = 0; s < AC::kStages - 1; ++s) {
    if (s < tiles) issue_tile(s, s);
    cp_async_commit();
  }
  for (int tile = 0; tile < tiles; ++tile) {
    cp_async_wait<AC::kStages - 2>();  // my copies of `tile` have landed (later ones may not)
    // Everybody's copies of `tile` have landed, and everybody finished computing tile - 1: its
    // stage, (tile - 1) % kStages = (tile + kStages - 1) % kStages, may be overwritten now.
    __syncthreads();
    if (tile + AC::kStages - 1 < tiles)
      issue_tile(tile + AC::kStages - 1, (tile + AC::kStages - 1) % AC::kStages);
    cp_async_commit();

    const int s = tile % AC::kStages;
    const auto as = As(s);
    const auto bs = Bs(s);
    // Not unrolled: fully unrolled, ptxas hoists the next steps' fragments and spills past the
    // 128-register cap of 2 blocks per SM; rolled, it needs 120 registers and no spills.
#pragma unroll 1
    for (int kq = 0; kq < AC::kBK; kq += AC::kAK) {
      // A: this thread's 8 rows (row i of the thread tile is block row m0 + (i / 4) * 16 + i % 4),
      // 2 consecutive k each: 8 LDS.64.
      float a_frag[AC::kTM][AC::kAK];
#pragma unroll
      for (int i = 0; i < AC::kTM; ++i)
        *reinterpret_cast<float2*>(a_frag[i]) = *reinterpret_cast<const float2*>(
            &as[m0 + (i / AC::kSub) * kSubStrideM + i % AC::kSub][kq]);
#pragma unroll
      for (int kk = 0; kk < AC::kAK; ++kk) {
        float b_reg[AC::kTN];
        *reinterpret_cast<float4*>(&b_reg[0]) = *reinterpret_cast<const float4*>(&bs[kq + kk][n0]);
        *reinterpret_cast<float4*>(&b_reg[4]) =
            *reinterpret_cast<const float4*>(&bs[kq + kk][n0 + kSubStrideN]);
#pragma unroll
        for (int i = 0; i < AC::kTM; ++i)
#pragma unroll
          for (int j = 0; j < AC::kTN; ++j) acc[i][j] += a_frag[i][kk] * b_reg[j];
      }
    }
  }
  cp_async_wait<0>();  // only empty groups remain; leave nothing in flight at exit

  // Epilogue (as step 7): for each row a quarter-warp writes 128 contiguous bytes; beta == 0
  // never reads C (Axpby::reads_c).
  const Axpby epi{a.alpha, a.beta};
#pragma unroll
  for (int i = 0; i < AC::kTM; ++i) {
    const int row = bm + m0 + (i / AC::kSub) * kSubStrideM + i % AC::kSub;
    if (row >= a.M) continue;
    float* c_row = a.C + at(row, 0, a.N);
#pragma unroll
    for (int js = 0; js < AC::kTN / AC::kSub; ++js) {
      const int col = bn + n0 + js * kSubStrideN;
      const int j = js * AC::kSub;
      store4(c_row, col, a.N, make_float4(acc[i][j], acc[i][j + 1], acc[i][j + 2], acc[i][j + 3]),
             /*vec_ok=*/true, epi);
    }
  }
}

}  // namespace

void sgemm_warptile_async(const SgemmArgs& a, cudaStream_t stream) {
  const bool fast = a.K > 0 && a.K % 4 == 0 && a.N % 4 == 0 && rows_are_float4(a.A, a.K) &&
                    rows_are_float4(a.B, a.N) && rows_are_float4(a.C, a.N);
  if (!fast) return sgemm_warptile(a, stream);  // any size, alignment and K == 0: step 7
  // 54 KB of dynamic shared memory is above the 48 KB a kernel gets without asking: opt in.
  set_kernel_attribute_once(sgemm_warptile_async_kernel,
                            cudaFuncAttributeMaxDynamicSharedMemorySize, AC::kSmemBytes);
  const dim3 grid(ceil_div(a.N, AC::kBN), ceil_div(a.M, AC::kBM));
  sgemm_warptile_async_kernel<<<grid, AC::kThreads, AC::kSmemBytes, stream>>>(a);
  CUDALAB_CHECK_LAUNCH();
}

}  // namespace cudalab::ch06::detail
