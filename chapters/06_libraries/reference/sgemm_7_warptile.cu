// SGEMM step 7 (worked example, the best of the ladder): warp tiles, 4 x 4 sub-tiles, double
// buffering, and a block tile chosen from the shape. In the spirit of Boehm's kernel 10 and of
// CUTLASS's hierarchical tiling. Open it after exercise 6.2 passes: its shared-memory layout and
// reads are one answer to 6.2's design question. It stays a worked example because 6.6's fused
// path runs it.
//
//   warp tile  (32, 64): the 32 lanes as 4 (M) x 8 (N)
//   thread tile 8 x 8 = 2 x 2 sub-tiles of 4 x 4, 16 rows and 32 columns apart
//   block tile (BM, BN, BK), a template: (128, 128, 8) = 8 warps as 4 (M) x 2 (N) for large C;
//   (64, 128, 8) = 4 warps and (64, 64, 8) = 2 warps when 128 x 128 tiles would leave SMs idle
//
// What changes against step 6:
//  * Warp tiles: a warp's 32 lanes cover a 32 x 64 tile of C as 4 x 8 lanes of 2 x 2 sub-tiles,
//    so the lanes that read shared memory together read neighbouring data (the shared reads are
//    discussed in 6.2's solution notes, `scripts/lab hint 6.2 solution`).
//  * Double buffering: two shared buffers. Tile t + 1 is fetched from global memory into
//    registers before the FMAs of tile t start, and written to the other buffer after them, so
//    the global latency hides behind 512 FMAs per thread and one __syncthreads per K step suffices.
//  * 2 blocks of 256 threads per SM for the 128 x 128 tile: at most 128 registers a thread
//    (__launch_bounds__); 12 warps an SM, at most 168 registers, for the smaller tiles.
//  * Three paths per block, chosen once per block (no divergence): an interior block of an
//    aligned problem copies with 16-byte loads and no checks; an interior block of an unaligned
//    problem (K or N % 4 != 0, e.g. 4095) copies with 4-byte loads, still unchecked, a warp
//    reading whole 32-byte sectors per instruction; only edge blocks check rows and columns.
//    The K loop needs no check in any path: its windows of BK END at K, so only the first one
//    can be partial (it starts below 0, and reads zeros there).
//  * The launcher picks the block tile from M, N, K and the SM count (plan_warptile, below).

// Arithmetic per K step of 8, per thread: 512 FMAs against 4 LDS.128 x 8 = 32 shared loads.
// Target: >= 85% (aim 90%) of cuBLAS SGEMM at 4096^3 on an H200 (Boehm: 93.7% on an A6000).
// The epilogue is a template: Axpby (alpha AB + beta C) or BiasRelu (exercise 6.6, fused).
#include <algorithm>
#include <cstddef>

#include "ch06/sgemm.hpp"
#include "cudalab/check.hpp"
#include "cudalab/device.hpp"
#include "cudalab/math.hpp"
#include "sgemm_common.cuh"

namespace cudalab::ch06::detail {
namespace {

template <int BM, int BN, int BK>
struct WarptileConfig {
  static constexpr int kBM = BM, kBN = BN, kBK = BK;
  static constexpr int kWarpM = 32, kWarpN = 64;  // warp tile
  static constexpr int kWarpsM = kBM / kWarpM, kWarpsN = kBN / kWarpN;
  static constexpr int kLanesM = 4, kLanesN = 8;           // lanes of a warp as 4 x 8
  static constexpr int kSub = 4;                           // 4 x 4 sub-tiles
  static constexpr int kTM = 8, kTN = 8;                   // thread tile: 2 x 2 sub-tiles
  static constexpr int kThreads = kWarpsM * kWarpsN * 32;  // 256, 128 or 64
  // 128 x 128: 2 blocks an SM, at most 128 registers a thread. The smaller tiles run when there
  // are few blocks an SM anyway: 12 warps an SM (3 blocks of 128, 6 of 64), at most 168.
  static constexpr int kMinBlocksPerSm = kThreads == 256 ? 2 : 12 * 32 / kThreads;
  // As rows (one k) are padded by 4 floats: the transposing stores of A then hit 32 different
  // banks, and every row stays 16-byte aligned for the LDS.128 reads.
  static constexpr int kAPad = 4;
  static constexpr int kACopy = kBM * kBK / kThreads;  // floats of A a thread copies per K tile
  static constexpr int kBCopy = kBK * kBN / kThreads;  // floats of B

  static_assert(kBM % kWarpM == 0 && kBN % kWarpN == 0, "whole warp tiles");
  static_assert(kLanesM * kLanesN == 32);
  static_assert(kLanesM * kSub * (kTM / kSub) == kWarpM, "sub-tiles cover the warp tile (M)");
  static_assert(kLanesN * kSub * (kTN / kSub) == kWarpN, "sub-tiles cover the warp tile (N)");
  static_assert(kBK % 4 == 0 && kACopy % 4 == 0 && kBCopy % 4 == 0,
                "whole float4 copies per thread per K tile");
  static_assert(kACopy * kThreads == kBM * kBK && kBCopy * kThreads == kBK * kBN);
};
using Tile128x128 = WarptileConfig<128, 128, 8>;
using Tile64x128 = WarptileConfig<64, 128, 8>;
using Tile64x64 = WarptileConfig<64, 64, 8>;

// x[col .. col + 3] of a row whose valid columns are [lo, hi); the others read as 0. As load4
// (sgemm_common.cuh) with a lower bound too: the first K window may start below column 0.
__device__ __forceinline__ float4 load4_window(const float* row, int col, int lo, int hi,
                                               bool vec_ok) {
  if (vec_ok && col >= lo && col + 3 < hi) return *reinterpret_cast<const float4*>(row + col);
  float4 v;
  v.x = col + 0 >= lo && col + 0 < hi ? row[col + 0] : 0.0f;
  v.y = col + 1 >= lo && col + 1 < hi ? row[col + 1] : 0.0f;
  v.z = col + 2 >= lo && col + 2 < hi ? row[col + 2] : 0.0f;
  v.w = col + 3 >= lo && col + 3 < hi ? row[col + 3] : 0.0f;
  return v;
}

// The work of one block: C tile (bm, bn).
//   kEdge = false: the block's tile lies wholly inside C; no row or column checks.
//     kVec = true: A, B and C rows are 16-byte aligned: LDG.128 / STG.128.
//     kVec = false: 4-byte loads, consecutive lanes on consecutive elements.
//   kEdge = true: any size and alignment; rows and columns checked, float4 where vec_* allow.
// K is walked in windows of BK that end at K: window t is k0 = K - (tiles - t) BK .. k0 + BK.
// Only window 0 can start below column 0; it alone is loaded with a K check.
template <class C, bool kEdge, bool kVec, class Epilogue>
__device__ __forceinline__ void warptile_block(const SgemmArgs& a, int bm, int bn, bool vec_a,
                                               bool vec_b, bool vec_c,
                                               const Epilogue& epi,
                                               float (&As)[2][C::kBK][C::kBM + C::kAPad],
                                               float (&Bs)[2][C::kBK][C::kBN]) {
  const int t = threadIdx.x, warp = t / 32, lane = t % 32;
  const int warp_m = warp / C::kWarpsN, warp_n = warp % C::kWarpsN;
  const int lane_m = lane / C::kLanesN, lane_n = lane % C::kLanesN;
  // Offsets of this thread's first sub-tile inside the block tile; the second is 16 rows /
  // 32 columns further.
  const int m0 = warp_m * C::kWarpM + lane_m * C::kSub;
  const int n0 = warp_n * C::kWarpN + lane_n * C::kSub;
  constexpr int kSubStrideM = C::kWarpM / 2, kSubStrideN = C::kWarpN / 2;

  // Global -> shared copy. Element j of this thread's share of a tile, as (row, col) of the tile:
  //  quads (16-byte loads, and the checked path): float4 f = t + (j / 4) threads, element j % 4;
  //    A (BM, BK): row f / (BK / 4), col (f % (BK / 4)) 4 + j % 4; B (BK, BN) likewise with BN.
  //  scalars: element e = t + j threads, row e / width, col e % width: for each load instruction
  //    a warp reads 32 consecutive elements of the tile, whole sectors (step 5's mapping).
  constexpr bool kQuads = kEdge || kVec;
  auto a_rc = [&](int j) {
    if constexpr (kQuads) {
      const int f = t + (j / 4) * C::kThreads;
      return int2{f / (C::kBK / 4), (f % (C::kBK / 4)) * 4 + j % 4};
    }
    const int e = t + j * C::kThreads;
    return int2{e / C::kBK, e % C::kBK};
  };
  auto b_rc = [&](int j) {
    if constexpr (kQuads) {
      const int f = t + (j / 4) * C::kThreads;
      return int2{f / (C::kBN / 4), (f % (C::kBN / 4)) * 4 + j % 4};
    }
    const int e = t + j * C::kThreads;
    return int2{e / C::kBN, e % C::kBN};
  };
  float a_next[C::kACopy], b_next[C::kBCopy];  // the next K tile, in flight during the FMAs
  // Window k0 into a_next / b_next. check_k: zeros for K columns below 0 (window 0).
  auto fetch = [&](int k0, bool check_k) {
#pragma unroll
    for (int q = 0; q < C::kACopy; q += (kQuads ? 4 : 1)) {
      const int2 rc = a_rc(q);
      const int row = bm + rc.x, col = k0 + rc.y;
      if constexpr (kEdge) {
        const bool in = row < a.M;  // rows past M read as zeros
        *reinterpret_cast<float4*>(&a_next[q]) =
            load4_window(a.A + at(in ? row : 0, 0, a.K), col, 0, in ? a.K : 0, vec_a);
      } else if constexpr (kVec) {
        *reinterpret_cast<float4*>(&a_next[q]) =
            check_k ? load4_window(a.A + at(row, 0, a.K), col, 0, a.K, true)
                    : *reinterpret_cast<const float4*>(a.A + at(row, col, a.K));
      } else {
        a_next[q] = !check_k || col >= 0 ? a.A[at(row, col, a.K)] : 0.0f;
      }
    }
#pragma unroll
    for (int q = 0; q < C::kBCopy; q += (kQuads ? 4 : 1)) {
      const int2 rc = b_rc(q);
      const int k = k0 + rc.x, col = bn + rc.y;
      if constexpr (kEdge) {
        const bool in = k >= 0;  // rows below 0 (window 0) read as zeros
        *reinterpret_cast<float4*>(&b_next[q]) =
            load4(a.B + at(in ? k : 0, 0, a.N), col, in ? a.N : 0, vec_b);
      } else if constexpr (kVec) {
        *reinterpret_cast<float4*>(&b_next[q]) =
            !check_k || k >= 0 ? *reinterpret_cast<const float4*>(a.B + at(k, col, a.N))
                                     : make_float4(0.0f, 0.0f, 0.0f, 0.0f);
      } else {
        b_next[q] = !check_k || k >= 0 ? a.B[at(k, col, a.N)] : 0.0f;
      }
    }
  };
  auto store_tiles = [&](int buf) {
#pragma unroll
    for (int j = 0; j < C::kACopy; ++j) {
      const int2 rc = a_rc(j);
      As[buf][rc.y][rc.x] = a_next[j];  // transposed (BK, BM)
    }
#pragma unroll
    for (int q = 0; q < C::kBCopy; q += (kQuads ? 4 : 1)) {
      const int2 rc = b_rc(q);
      if constexpr (kQuads)
        *reinterpret_cast<float4*>(&Bs[buf][rc.x][rc.y]) =
            *reinterpret_cast<const float4*>(&b_next[q]);
      else
        Bs[buf][rc.x][rc.y] = b_next[q];
    }
  };

  float acc[C::kTM][C::kTN] = {};
  const int tiles = ceil_div(a.K, C::kBK);
  const int k_first = a.K - tiles * C::kBK;  // window 0: at or below column 0
  if (tiles > 0) {
    fetch(k_first, /*check_k=*/true);
    store_tiles(0);
  }
  __syncthreads();  // buffer 0 complete
  // Unrolled by two: in each copy of the body `cur` is a compile-time constant, so every shared
  // address is a base register plus an immediate offset and no instruction computes the buffer.
  // Measured on the H200 at 4096^3 (128 x 128 tile): 87.8% of cuBLAS rolled, 92.8% unrolled.
#pragma unroll 2
  for (int tile = 0; tile < tiles; ++tile) {
    const int cur = tile & 1;
    const bool has_next = tile + 1 < tiles;
    // Issue the next window's global loads now; they land during the FMAs below. Windows after
    // the first are whole: only edge blocks check.
    if (has_next) fetch(k_first + (tile + 1) * C::kBK, /*check_k=*/kEdge);
#pragma unroll
    for (int k = 0; k < C::kBK; ++k) {
      float a_reg[C::kTM], b_reg[C::kTN];
      *reinterpret_cast<float4*>(&a_reg[0]) = *reinterpret_cast<const float4*>(&As[cur][k][m0]);
      *reinterpret_cast<float4*>(&a_reg[4]) =
          *reinterpret_cast<const float4*>(&As[cur][k][m0 + kSubStrideM]);
      *reinterpret_cast<float4*>(&b_reg[0]) = *reinterpret_cast<const float4*>(&Bs[cur][k][n0]);
      *reinterpret_cast<float4*>(&b_reg[4]) =
          *reinterpret_cast<const float4*>(&Bs[cur][k][n0 + kSubStrideN]);
#pragma unroll
      for (int i = 0; i < C::kTM; ++i)
#pragma unroll
        for (int j = 0; j < C::kTN; ++j) acc[i][j] += a_reg[i] * b_reg[j];
    }
    // Buffer cur ^ 1 was last read during the previous tile, which every thread finished before
    // the previous barrier: writing it now is safe.
    if (has_next) store_tiles(cur ^ 1);
    __syncthreads();  // the next buffer is complete, and nobody reads `cur` any more
  }

  // Epilogue: thread tile row i lives at block row m0 + (i / 4) * 16 + i % 4, column j at
  // n0 + (j / 4) * 32 + j % 4. For each row a quarter-warp writes 128 contiguous bytes.
#pragma unroll
  for (int i = 0; i < C::kTM; ++i) {
    const int row = bm + m0 + (i / C::kSub) * kSubStrideM + i % C::kSub;
    if (kEdge && row >= a.M) continue;
    float* c_row = a.C + at(row, 0, a.N);
#pragma unroll
    for (int js = 0; js < C::kTN / C::kSub; ++js) {
      const int col = bn + n0 + js * kSubStrideN;
      const int j = js * C::kSub;
      store4(c_row, col, a.N, make_float4(acc[i][j], acc[i][j + 1], acc[i][j + 2], acc[i][j + 3]),
             kEdge ? vec_c : kVec, epi);
    }
  }
}

// Launch: grid (ceil(N / BN), ceil(M / BM)), C::kThreads threads, static shared memory.
// kVec: A, B and C rows are all 16-byte aligned, a property of the whole problem: the host picks
// the kernel, so each kernel holds two block paths (interior, edge), not three, and stays within
// its registers.
template <class C, bool kVec, class Epilogue>
__global__ void __launch_bounds__(C::kThreads, C::kMinBlocksPerSm)
    sgemm_warptile_kernel(SgemmArgs a, bool vec_a, bool vec_b, bool vec_c, Epilogue epi) {
  __shared__ __align__(16) float As[2][C::kBK][C::kBM + C::kAPad];  // A transposed, padded rows
  __shared__ __align__(16) float Bs[2][C::kBK][C::kBN];
  const int bm = blockIdx.y * C::kBM, bn = blockIdx.x * C::kBN;
  // Block-uniform choice (no divergence): interior blocks skip every row and column check.
  if (bm + C::kBM <= a.M && bn + C::kBN <= a.N)
    warptile_block<C, false, kVec>(a, bm, bn, kVec, kVec, kVec, epi, As, Bs);
  else
    warptile_block<C, true, false>(a, bm, bn, vec_a, vec_b, vec_c, epi, As, Bs);
}

// The block tile of a launch, from the shape and the SM count.
enum class WarptileTile { k128x128, k64x128, k64x64 };

// A cost model, in clocks of the busiest SM. The blocks are spread evenly over the SMs, so the
// busiest one computes ceil(blocks / SMs) tiles of BM x BN x K at 128 FMAs a clock, slowed by
// `speed`: a smaller tile loads more bytes per FMA and shares each barrier among fewer warps
// (0.9 for 64 x 128, 0.8 for 64 x 64), and an SM with fewer than 8 warps resident hides less
// latency (0.8 with 4 to 7 warps, warps / 5 below 4). 128 x 128 wins once C has about a block per
// SM; smaller tiles win below (1024^3: 64 blocks of 128 x 128 would leave half of 132 SMs idle).
WarptileTile plan_warptile(int M, int N, int K, int sms) {
  struct Shape {
    WarptileTile tile;
    int bm, bn, warps, max_resident;
    double speed;
  };
  constexpr Shape kShapes[] = {{WarptileTile::k128x128, 128, 128, 8, 2, 1.0},
                               {WarptileTile::k64x128, 64, 128, 4, 3, 0.9},
                               {WarptileTile::k64x64, 64, 64, 2, 6, 0.8}};
  WarptileTile best = WarptileTile::k128x128;
  double best_cost = 0;
  for (const Shape& s : kShapes) {
    const long long blocks = static_cast<long long>(ceil_div(M, s.bm)) * ceil_div(N, s.bn);
    const long long per_sm = ceil_div<long long>(blocks, sms);
    const long long warps = std::min<long long>(per_sm, s.max_resident) * s.warps;
    const double occupancy = warps >= 8 ? 1.0 : warps >= 4 ? 0.8 : warps / 5.0;
    const double cost =
        static_cast<double>(per_sm) * s.bm * s.bn * std::max(K, 1) / (128.0 * s.speed * occupancy);
    if (best_cost == 0 || cost < best_cost) {
      best = s.tile;
      best_cost = cost;
    }
  }
  return best;
}

template <class C, class Epilogue>
void launch_tile(const SgemmArgs& a, const Epilogue& epi, cudaStream_t stream) {
  const dim3 grid(ceil_div(a.N, C::kBN), ceil_div(a.M, C::kBM));
  const bool vec_a = rows_are_float4(a.A, a.K), vec_b = rows_are_float4(a.B, a.N),
             vec_c = rows_are_float4(a.C, a.N);
  if (vec_a && vec_b && vec_c)
    sgemm_warptile_kernel<C, true><<<grid, C::kThreads, 0, stream>>>(a, true, true, true, epi);
  else
    sgemm_warptile_kernel<C, false><<<grid, C::kThreads, 0, stream>>>(a, vec_a, vec_b, vec_c, epi);
  CUDALAB_CHECK_LAUNCH();
}

template <class Epilogue>
void launch_plan(const SgemmArgs& a, const Epilogue& epi, WarptileTile tile, cudaStream_t stream) {
  switch (tile) {
    case WarptileTile::k128x128: return launch_tile<Tile128x128>(a, epi, stream);
    case WarptileTile::k64x128: return launch_tile<Tile64x128>(a, epi, stream);
    case WarptileTile::k64x64: return launch_tile<Tile64x64>(a, epi, stream);
  }
}

template <class Epilogue>
void launch_warptile(const SgemmArgs& a, const Epilogue& epi, cudaStream_t stream) {
  launch_plan(a, epi, plan_warptile(a.M, a.N, a.K, current_sm_count()), stream);
}

}  // namespace

void sgemm_warptile(const SgemmArgs& a, cudaStream_t stream) {
  launch_warptile(a, Axpby{a.alpha, a.beta}, stream);
}

void sgemm_warptile_bias_relu(const SgemmArgs& a, const float* bias, cudaStream_t stream) {
  launch_warptile(a, BiasRelu{bias},
                  stream);  // the epilogue itself: exercise 6.6 (sgemm_common.cuh)
}

}  // namespace cudalab::ch06::detail
