// Starter track — write your code at the TODO marks; the tests of each exercise
// fail until you do. (Generated from chapters/06_libraries/reference/sgemm_8_warptile_async.cu by scripts/variants.py.)
// SGEMM step 8 (worked example): step 7's warp-tiled compute fed by a 3-stage cp.async pipeline
// (sm_80+). Global memory goes straight into shared memory, without staging registers, two K tiles
// ahead of the FMAs. Measured against step 7 and cuBLAS: see the chapter README (docs/results).
//
//   block tile (BM, BN, BK) = (128, 128, 16), 256 threads = 8 warps as 4 (M) x 2 (N)
//   warp tile  (32, 64): the 32 lanes as 4 (M) x 8 (N); thread tile 8 x 8 = 2 x 2 sub-tiles of
//   4 x 4, 16 rows and 32 columns apart (step 7's compute layout and inner loop, unchanged)
// or, for grids that would not fill the GPU, the 64 x 64 block tile: 128 threads = 4 warps as
// 2 x 2, warp tile (32, 32), thread tile 8 x 4. The choice is step 7's planner,
// plan_warptile_tile (ch06/sgemm.hpp); sgemm_warptile_async_tile forces either tile.
//   shared memory per stage: As (BK, BM + 4) and Bs (BK, BN) floats; 3 stages = 48.75 KB of
//   dynamic shared memory at 128 x 128 (2 blocks per SM), 24.75 KB at 64 x 64 (4 blocks per SM).
//
// What changes against step 7:
//  * cp.async replaces the register staging. Step 7 loads tile t + 1 into registers (LDG), then
//    stores it to shared memory (STS) after the FMAs of tile t. Here each thread issues
//    cp.async copies of tile t + 2 at the top of tile t; they need no registers and no STS, and
//    two tiles of copies are in flight while one is computed.
//  * A is transposed on the way in, by 4-byte copies. Step 7's inner loop reads A as a float4
//    along m (As[k][m .. m + 3]: one LDS.128 per 4 rows), which needs A k-major in shared memory,
//    and A is M-major in global memory. A 16-byte cp.async copies 4 consecutive k of a row and
//    cannot scatter them, so a verbatim copy (As[m][k]) forces reads along k. The first version
//    of this step did that: float2 reads of 2 k (more load instructions, an A fragment of 16
//    registers), and its k loop had to stay rolled to fit the 128-register cap, so every 2 k the
//    warp waited for its shared loads. A 4-byte cp.async (cp.async.ca, one element) writes each
//    element where it belongs: As[k][m]. A warp's 32 copies are 8 consecutive k (one 32-byte
//    sector of a row of A) x 4 rows; the As row stride BM + 4 puts element (k, m) in bank
//    4 k + m, so the 32 shared writes of a warp hit 32 different banks, and rows stay 16-byte
//    aligned for the LDS.128. Element copies also take any K and any alignment of A: there is no
//    K % 4 condition.
//  * B is copied as in global memory (Bs[k][n]) by 16-byte cp.async.cg when its rows are 16-byte
//    aligned (N % 4 == 0 and an aligned base; a warp copies 512 contiguous bytes of a row), else by
//    4-byte copies (a warp copies 32 consecutive columns). The launcher picks the kernel instance.
//  * Edges without a separate kernel: a copy of an element outside A or B (row >= M, k >= K,
//    column >= N) uses cp.async's src-size 0, which writes zeros (the source is then the matrix
//    base, a valid address), so a partial tile adds 0 * 0 to the dot products. Interior blocks
//    (the whole block tile inside C) issue every full K tile with no predicate at all; edge blocks
//    and the last K tile when K % 16 != 0 take the guarded issue (a block-uniform branch). The
//    epilogue is step 7's store4: guarded, 16-byte stores where C's rows are aligned.
//  * BK = 16: one __syncthreads per 16 k. The BK loop is fully unrolled, as step 7's, so ptxas
//    issues the fragment loads of k + 1 between the FMAs of k.
//  * Blocks in plain order (blockIdx.x along N), as step 7. (An L2-grouped order was tried in the
//    side harness: its index arithmetic spilled at the 128-register cap.)
// The pipeline: one commit group per K tile, an empty one when there is nothing left to copy, so
// that group g is always tile g. The prologue issues tiles 0 and 1. At the top of tile t each
// thread waits until at most one of its groups is pending (its tile t has landed), then a barrier
// (everybody's tile t has landed, and everybody finished tile t - 1), then it issues tile t + 2
// into the stage tile t - 1 used, and computes tile t.
// Any shape works: M, N > 0, K >= 0 (K == 0: no tile, C = beta C), any alignment of A, B and C.
// Target: >= 85% (aim 90%) of cuBLAS SGEMM at 4096^3; the measured ratios are in the chapter
// README and docs/results (written by the benchmark tools).

#include <cstdint>

#include "ch06/sgemm.hpp"
#include "cudalab/check.hpp"
#include "cudalab/cp_async.cuh"
#include "cudalab/device.hpp"
#include "cudalab/launch.hpp"
#include "cudalab/math.hpp"
#include "sgemm_common.cuh"

namespace cudalab::ch06::detail {
namespace {

// Block tile BM x BN x BK, warp tile WarpM x WarpN (32 lanes as 4 (M) x 8 (N), 4 x 4 sub-tiles),
// Stages shared buffers, MinBlocksPerSm for __launch_bounds__ (the 128-register cap either way).
template <int BM, int BN, int WarpM, int WarpN, int BK, int Stages, int MinBlocksPerSm>
struct AsyncConfig {
  static constexpr int kBM = BM, kBN = BN, kBK = BK, kStages = Stages;
  static constexpr int kWarpM = WarpM, kWarpN = WarpN;
  static constexpr int kWarpsM = kBM / kWarpM, kWarpsN = kBN / kWarpN;
  static constexpr int kLanesM = 4, kLanesN = 8, kSub = 4;
  static constexpr int kTM = kWarpM / kLanesM, kTN = kWarpN / kLanesN;  // thread tile
  static constexpr int kSubsM = kTM / kSub, kSubsN = kTN / kSub;        // its sub-tiles
  static constexpr int kSubStrideM = kWarpM / kSubsM, kSubStrideN = kWarpN / kSubsN;
  static constexpr int kThreads = kWarpsM * kWarpsN * 32;
  static constexpr int kMinBlocksPerSm = MinBlocksPerSm;
  static constexpr int kALd = kBM + 4;  // As row stride in floats (see the file comment)
  static constexpr int kAFloats = kBK * kALd, kBFloats = kBK * kBN;
  static constexpr int kStageFloats = kAFloats + kBFloats;
  static constexpr int kSmemBytes = kStages * kStageFloats * static_cast<int>(sizeof(float));
  static constexpr int kACopies = kBM * kBK / kThreads;        // 4-byte copies of A per thread
  static constexpr int kBCopies16 = kBK * kBN / 4 / kThreads;  // 16-byte copies of B per thread
  static constexpr int kBCopies4 = kBK * kBN / kThreads;       // 4-byte copies of B per thread
  // Per-thread copy maps are affine in the copy index i (a base row plus i times a row step):
  // A: a warp covers 8 k x 4 rows, the block (kThreads / 32 warps) BK k x kARowStep rows.
  static constexpr int kARowStep = 4 * (kThreads / 32) / (kBK / 8);
  static constexpr int kBRowStep16 = kThreads / (kBN / 4), kBRowStep4 = kThreads / kBN;
  static_assert(kLanesM * kLanesN == 32 && kBM % kWarpM == 0 && kBN % kWarpN == 0);
  static_assert(kLanesM * kSub * kSubsM == kWarpM, "sub-tiles cover the warp tile (M)");
  static_assert(kLanesN * kSub * kSubsN == kWarpN, "sub-tiles cover the warp tile (N)");
  static_assert(kBK % 8 == 0 && (kThreads / 32) % (kBK / 8) == 0,
                "A copies: whole 8 k x 4 row warp blocks");
  static_assert(kACopies * kThreads == kBM * kBK && kARowStep * kACopies == kBM);
  static_assert(kBCopies16 >= 1 && kBCopies16 * 4 * kThreads == kBK * kBN &&
                kBRowStep16 * kBCopies16 == kBK);
  static_assert(kThreads % kBN == 0 && kBCopies4 * kThreads == kBK * kBN &&
                kBRowStep4 * kBCopies4 == kBK);
  static_assert(kALd % 4 == 0 && kBN % 4 == 0,
                "shared rows 16-byte aligned (LDS.128, cp.async 16)");
  static_assert(kStages >= 2);
  static_assert(kSmemBytes * kMinBlocksPerSm <= 227 * 1024, "the blocks fit an SM's shared memory");
};
// 2 blocks of 256 threads per SM, thread tile 8 x 8 (64 accumulators, at most 128 registers).
using Async128 = AsyncConfig<128, 128, 32, 64, 16, 3, 2>;
static_assert(Async128::kThreads == 256 && Async128::kTM == 8 && Async128::kTN == 8);
// 4 blocks of 128 threads per SM: the same 16 warps and register cap, a quarter of the tile.
using Async64 = AsyncConfig<64, 64, 32, 32, 16, 3, 4>;
static_assert(Async64::kThreads == 128 && Async64::kTM == 8 && Async64::kTN == 4);

// Launch: grid (ceil(N / BN), ceil(M / BM)), C::kThreads threads, C::kSmemBytes of dynamic shared
// memory. kVecB: B's rows are 16-byte aligned (16-byte copies of B). vec_c: C's rows are 16-byte
// aligned (16-byte stores). Any M, N > 0 and K >= 0; A may have any alignment.
template <class C, bool kVecB>
__global__ void __launch_bounds__(C::kThreads, C::kMinBlocksPerSm)
    sgemm_warptile_async_kernel(SgemmArgs a, bool vec_c) {
  extern __shared__ __align__(16) float smem[];
  const int bm = blockIdx.y * C::kBM, bn = blockIdx.x * C::kBN;
  const int t = threadIdx.x, warp = t / 32, lane = t % 32;
  const int warp_m = warp / C::kWarpsN, warp_n = warp % C::kWarpsN;
  const int lane_m = lane / C::kLanesN, lane_n = lane % C::kLanesN;
  // This thread's first sub-tile in the block tile; the others are kSubStrideM rows /
  // kSubStrideN columns further.
  const int m0 = warp_m * C::kWarpM + lane_m * C::kSub;
  const int n0 = warp_n * C::kWarpN + lane_n * C::kSub;
  // Block-uniform: the whole block tile lies inside C (so every row of its A tile is inside A and
  // every column of its B tile inside B). Its full K tiles are copied with no predicate.
  const bool interior = bm + C::kBM <= a.M && bn + C::kBN <= a.N;
  const int full_tiles = a.K / C::kBK;  // K tiles with no k past K
  const int tiles = ceil_div(a.K, C::kBK);
  const std::uint32_t smem_base = shared_address(smem);

  // A copy i of thread t: tile row a_r0 + i * kARowStep, column a_k, where lanes 0-7 of a warp
  // take k 0-7 of one row, lanes 8-15 the next row, ...; warp w takes k (w % (BK / 8)) * 8 + 0-7 of
  // rows (w / (BK / 8)) * 4 + 0-3. Shared destination As[a_k][a_r0 + i * kARowStep].
  const int a_k = (t / 32) % (C::kBK / 8) * 8 + t % 8;
  const int a_r0 = (t / 32) / (C::kBK / 8) * 4 + (t / 8) % 4;
  const float* a_src = a.A + at(bm + a_r0 < a.M ? bm + a_r0 : 0, a_k, a.K);
  const std::uint32_t a_dst = smem_base + 4u * static_cast<std::uint32_t>(a_k * C::kALd + a_r0);
  // B copy i of thread t: tile row b_r0 + i * kBRowStep, columns b_c .. b_c + 3 (kVecB) or b_c.
  constexpr int kBCopies = kVecB ? C::kBCopies16 : C::kBCopies4;
  constexpr int kBRowStep = kVecB ? C::kBRowStep16 : C::kBRowStep4;
  const int b_r0 = kVecB ? t / (C::kBN / 4) : t / C::kBN;
  const int b_c = kVecB ? (t % (C::kBN / 4)) * 4 : t % C::kBN;
  const float* b_src = a.B + at(b_r0, bn + b_c, a.N);
  const std::uint32_t b_dst =
      smem_base + 4u * static_cast<std::uint32_t>(C::kAFloats + b_r0 * C::kBN + b_c);
  const bool b_col_in = bn + b_c < a.N;  // kVecB: N % 4 == 0, so all 4 columns or none

  // Issues this thread's copies of K tile `tile` into stage s.
  auto issue_tile = [&](int tile, int s) {
    const int k0 = tile * C::kBK;
    const std::uint32_t so = 4u * static_cast<std::uint32_t>(s * C::kStageFloats);
    if (interior && tile < full_tiles) {  // every element inside A and B: no predicates
#pragma unroll
      for (int i = 0; i < C::kACopies; ++i)
        cp_async_4(a_dst + so + 4u * (i * C::kARowStep), a_src + at(i * C::kARowStep, k0, a.K));
#pragma unroll
      for (int i = 0; i < kBCopies; ++i) {
        const std::uint32_t d = b_dst + so + 4u * (i * kBRowStep * C::kBN);
        const float* src = b_src + at(k0 + i * kBRowStep, 0, a.N);
        if constexpr (kVecB)
          cp_async_16(d, src);
        else
          cp_async_4(d, src);
      }
    } else {  // an edge block or the K tail: elements outside A or B are zero-filled
      const bool a_k_in = k0 + a_k < a.K;
#pragma unroll
      for (int i = 0; i < C::kACopies; ++i) {
        const bool in = a_k_in && bm + a_r0 + i * C::kARowStep < a.M;
        cp_async_4(a_dst + so + 4u * (i * C::kARowStep),
                   in ? a_src + at(i * C::kARowStep, k0, a.K) : a.A, in);
      }
#pragma unroll
      for (int i = 0; i < kBCopies; ++i) {
        const bool in = b_col_in && k0 + b_r0 + i * kBRowStep < a.K;
        const std::uint32_t d = b_dst + so + 4u * (i * kBRowStep * C::kBN);
        const float* src = in ? b_src + at(k0 + i * kBRowStep, 0, a.N) : a.B;
        if constexpr (kVecB)
          cp_async_16(d, src, in);
        else
          cp_async_4(d, src, in);
      }
    }
  };

  float acc[C::kTM][C::kTN] = {};
  // Prologue: tiles 0 .. kStages - 2 in flight. One commit per tile, even an empty one, so that
  // group g is always tile g and wait_group's count stays right near the end of K.
#pragma unroll
  for (int s = 0; s < C::kStages - 1; ++s) {
    if (s < tiles) issue_tile(s, s);
    cp_async_commit();
  }
  int s_read = 0, s_write = C::kStages - 1;  // stages of tile and of tile + kStages - 1
  for (int tile = 0; tile < tiles; ++tile) {
    cp_async_wait<C::kStages - 2>();  // my copies of `tile` have landed (later ones may not)
    // Everybody's copies of `tile` have landed, and everybody finished computing tile - 1: its
    // stage, s_write, may be overwritten now.
    __syncthreads();
    if (tile + C::kStages - 1 < tiles) issue_tile(tile + C::kStages - 1, s_write);
    cp_async_commit();

    const float* As = smem + s_read * C::kStageFloats;  // As[k][m], row stride kALd
    const float* Bs = As + C::kAFloats;                 // Bs[k][n], row stride kBN
    // Step 7's inner loop: per k, LDS.128 fragments of A (along m) and B (along n), then the
    // thread tile's FMAs. Fully unrolled (ptxas overlaps the loads of k + 1 with the FMAs of k).
#pragma unroll
    for (int k = 0; k < C::kBK; ++k) {
      float a_reg[C::kTM], b_reg[C::kTN];
#pragma unroll
      for (int s = 0; s < C::kSubsM; ++s)
        *reinterpret_cast<float4*>(&a_reg[4 * s]) =
            *reinterpret_cast<const float4*>(&As[k * C::kALd + m0 + s * C::kSubStrideM]);
#pragma unroll
      for (int s = 0; s < C::kSubsN; ++s)
        *reinterpret_cast<float4*>(&b_reg[4 * s]) =
            *reinterpret_cast<const float4*>(&Bs[k * C::kBN + n0 + s * C::kSubStrideN]);
#pragma unroll
      for (int i = 0; i < C::kTM; ++i)
#pragma unroll
        for (int j = 0; j < C::kTN; ++j) acc[i][j] += a_reg[i] * b_reg[j];
    }
    s_read = s_read + 1 == C::kStages ? 0 : s_read + 1;
    s_write = s_write + 1 == C::kStages ? 0 : s_write + 1;
  }
  cp_async_wait<0>();  // only empty groups remain; leave nothing in flight at exit

  // Epilogue (step 7's): thread tile row i is block row m0 + (i / 4) * kSubStrideM + i % 4; for
  // each row a quarter-warp writes 128 contiguous bytes. beta == 0 never reads C.
  const Axpby epi{a.alpha, a.beta};
#pragma unroll
  for (int i = 0; i < C::kTM; ++i) {
    const int row = bm + m0 + (i / C::kSub) * C::kSubStrideM + i % C::kSub;
    if (row >= a.M) continue;
    float* c_row = a.C + at(row, 0, a.N);
#pragma unroll
    for (int js = 0; js < C::kSubsN; ++js) {
      const int col = bn + n0 + js * C::kSubStrideN;
      const int j = js * C::kSub;
      store4(c_row, col, a.N, make_float4(acc[i][j], acc[i][j + 1], acc[i][j + 2], acc[i][j + 3]),
             vec_c, epi);
    }
  }
}

template <class C, bool kVecB>
void launch_async(const SgemmArgs& a, bool vec_c, cudaStream_t stream) {
  // 48.75 KB (128 x 128) is above the 48 KB a kernel gets without asking: opt in (each instance).
  set_kernel_attribute_once(sgemm_warptile_async_kernel<C, kVecB>,
                            cudaFuncAttributeMaxDynamicSharedMemorySize, C::kSmemBytes);
  const dim3 grid(ceil_div(a.N, C::kBN), ceil_div(a.M, C::kBM));
  sgemm_warptile_async_kernel<C, kVecB><<<grid, C::kThreads, C::kSmemBytes, stream>>>(a, vec_c);
  CUDALAB_CHECK_LAUNCH();
}

template <class C>
void launch_async(const SgemmArgs& a, cudaStream_t stream) {
  const bool vec_c = rows_are_float4(a.C, a.N);  // 16-byte stores to C
  if (rows_are_float4(a.B, a.N))
    launch_async<C, true>(a, vec_c, stream);  // 16-byte copies of B
  else
    launch_async<C, false>(a, vec_c, stream);  // 4-byte copies of B
}

}  // namespace

void sgemm_warptile_async(const SgemmArgs& a, cudaStream_t stream) {
  sgemm_warptile_async_tile(a, WarptileTile::kAuto, stream);
}

void sgemm_warptile_async_tile(const SgemmArgs& a, WarptileTile tile, cudaStream_t stream) {
  if (tile == WarptileTile::kAuto) tile = plan_warptile_tile(a.M, a.N, current_sm_count());
  if (tile == WarptileTile::k64x64)
    launch_async<Async64>(a, stream);
  else
    launch_async<Async128>(a, stream);
}

}  // namespace cudalab::ch06::detail
