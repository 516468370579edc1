// SGEMM step 7 (worked example, the best of the ladder): warp tiles, 4 x 4 sub-tiles, double
// buffering. In the spirit of Boehm's kernel 10 and of CUTLASS's hierarchical tiling.
// Open it after exercise 6.2 passes: its shared-memory layout and reads are one answer to 6.2's
// design question. It stays a worked example because 6.6's fused path runs it.
//
//   block tile (BM, BN, BK) = (128, 128, 8), 256 threads = 8 warps as 4 (M) x 2 (N)
//   warp tile  (32, 64): the 32 lanes as 4 (M) x 8 (N)
//   thread tile 8 x 8 = 2 x 2 sub-tiles of 4 x 4, 16 rows and 32 columns apart
// or, for grids that would not fill the GPU (plan_warptile_tile, ch06/sgemm.hpp), the same kernel
// with a 64 x 64 block tile: 128 threads = 4 warps as 2 x 2, warp tile (32, 32), thread tile
// 8 x 4 = 2 x 1 sub-tiles, 4 blocks per SM. At 1024^3 the 128 x 128 grid is 64 blocks, under half
// of an H100's 132 SMs; the 64 x 64 grid is 256 blocks, 16 warps on every SM. Its unchecked path
// peels the last K tile off the loop, so that the prefetch needs no test (WarptileConfig).
//
// What changes against step 6:
//  * Warp tiles: a warp's 32 lanes cover a 32 x 64 tile of C as 4 x 8 lanes of 2 x 2 sub-tiles,
//    so the lanes that read shared memory together read neighbouring data (the shared reads are
//    discussed in 6.2's solution notes, `scripts/lab hint 6.2 solution`).
//  * Double buffering: two shared buffers. Tile t + 1 is fetched from global memory into
//    registers before the FMAs of tile t start, and written to the other buffer after them, so
//    the global latency hides behind 512 FMAs per thread (256 at 64 x 64) and one __syncthreads
//    per K step suffices.
//  * 2 blocks of 256 threads per SM (__launch_bounds__(256, 2): at most 128 registers a thread);
//    at 64 x 64, 4 blocks of 128 (__launch_bounds__(128, 4): the same cap).
// Arithmetic per K step of 8, per thread: 512 FMAs against 4 LDS.128 x 8 = 32 shared loads
// (64 x 64: 256 FMAs against 3 x 8 = 24).
// Target: >= 85% (aim 90%) of cuBLAS SGEMM at 4096^3 on an H200 (Boehm: 93.7% on an A6000).
// The epilogue is a template: Axpby (alpha AB + beta C) or BiasRelu (exercise 6.6, fused).
#include "ch06/sgemm.hpp"
#include "cudalab/check.hpp"
#include "cudalab/device.hpp"
#include "cudalab/math.hpp"
#include "sgemm_common.cuh"

namespace cudalab::ch06::detail {
namespace {

// Block tile BM x BN x 8 and warp tile WarpM x WarpN, the 32 lanes of a warp as 4 (M) x 8 (N) with
// 4 x 4 sub-tiles: a thread tile of (WarpM / 4) x (WarpN / 8), its sub-tiles 16 rows (and 32
// columns) apart. PeelLastTile: the unchecked path (warptile_block<WC, false>) runs every K tile
// but the last in a loop that prefetches its successor with no test, then the last tile alone.
template <int BM, int BN, int WarpM, int WarpN, int MinBlocksPerSm, bool PeelLastTile>
struct WarptileConfig {
  static constexpr int kBM = BM, kBN = BN, kBK = 8;
  static constexpr int kWarpM = WarpM, kWarpN = WarpN;  // warp tile
  static constexpr int kWarpsM = kBM / kWarpM, kWarpsN = kBN / kWarpN;
  static constexpr int kLanesM = 4, kLanesN = 8;                        // lanes of a warp as 4 x 8
  static constexpr int kSub = 4;                                        // 4 x 4 sub-tiles
  static constexpr int kTM = kWarpM / kLanesM, kTN = kWarpN / kLanesN;  // thread tile
  static constexpr int kSubsM = kTM / kSub, kSubsN = kTN / kSub;        // its sub-tiles
  static constexpr int kThreads = kWarpsM * kWarpsN * 32;
  static constexpr int kMinBlocksPerSm = MinBlocksPerSm;
  static constexpr bool kPeelLastTile = PeelLastTile;
  static_assert(kLanesM * kLanesN == 32 && kBM % kWarpM == 0 && kBN % kWarpN == 0);
  static_assert(kLanesM * kSub * kSubsM == kWarpM, "sub-tiles cover the warp tile (M)");
  static_assert(kLanesN * kSub * kSubsN == kWarpN, "sub-tiles cover the warp tile (N)");
  static_assert(kBM * kBK == 4 * kThreads, "one float4 of A per thread per K step");
  static_assert(kBK * kBN == 4 * kThreads, "one float4 of B per thread per K step");
};
// 2 blocks of 256 threads per SM: at most 128 registers a thread (the 8 x 8 tile's 64
// accumulators). Its K loop keeps the `has_next` test: there ptxas issues the predicated prefetch
// with more than half of the tile's FMAs still ahead in both unrolled copies (sm_90 SASS), and it
// is the loop that the step's 4096^3 target is measured with.
using Warptile128 = WarptileConfig<128, 128, 32, 64, 2, false>;
static_assert(Warptile128::kThreads == 256 && Warptile128::kTM == 8 && Warptile128::kTN == 8);
// 4 blocks of 128 threads per SM: the same 16 warps and 128-register cap, a quarter of the tile.
// Its unchecked path peels the last K tile: with the `has_next` test in that loop, ptxas (CUDA 13,
// sm_90) places the first unrolled copy's predicated global loads after nearly all of that tile's
// FMAs, just before the shared stores that consume them, so every second K tile waits out the
// whole global latency.
using Warptile64 = WarptileConfig<64, 64, 32, 32, 4, true>;
static_assert(Warptile64::kThreads == 128 && Warptile64::kTM == 8 && Warptile64::kTN == 4);

// The work of one block. kChecked = false is the fast path of a block whose tiles lie wholly
// inside A, B and C, with 16-byte aligned rows and K % BK == 0: no bounds checks and no scalar
// fallbacks, only LDG.128 / STG.128. kChecked = true takes any size and alignment (edge blocks).
template <class WC, bool kChecked, class Epilogue>
__device__ __forceinline__ void warptile_block(const SgemmArgs& a, int bm, int bn, bool vec_a,
                                               bool vec_b, bool vec_c, const Epilogue& epi,
                                               float (&As)[2][WC::kBK][WC::kBM],
                                               float (&Bs)[2][WC::kBK][WC::kBN]) {
  const int t = threadIdx.x, warp = t / 32, lane = t % 32;
  const int warp_m = warp / WC::kWarpsN, warp_n = warp % WC::kWarpsN;
  const int lane_m = lane / WC::kLanesN, lane_n = lane % WC::kLanesN;
  // Offsets of this thread's first sub-tile inside the block tile; the second is 16 rows /
  // 32 columns further.
  const int m0 = warp_m * WC::kWarpM + lane_m * WC::kSub;
  const int n0 = warp_n * WC::kWarpN + lane_n * WC::kSub;
  constexpr int kSubStrideM = WC::kWarpM / WC::kSubsM, kSubStrideN = WC::kWarpN / WC::kSubsN;

  // Global -> shared copy coordinates: A (BM, BK) as BM rows x 2 float4, B (BK, BN) as 8 rows x
  // BN / 4 float4 (at 128 x 128, a warp reads 512 contiguous bytes of a row of B).
  const int a_row = t / (WC::kBK / 4), a_col = (t % (WC::kBK / 4)) * 4;
  const int b_row = t / (WC::kBN / 4), b_col = (t % (WC::kBN / 4)) * 4;
  const float* a_src = a.A + at(bm + a_row < a.M ? bm + a_row : 0, 0, a.K);
  const int a_limit = bm + a_row < a.M ? a.K : 0;  // rows past M read as zeros
  auto load_a = [&](int k0) {
    if constexpr (!kChecked) return *reinterpret_cast<const float4*>(a_src + k0 + a_col);
    return load4(a_src, k0 + a_col, a_limit, vec_a);
  };
  auto load_b = [&](int k0) {
    if constexpr (!kChecked)
      return *reinterpret_cast<const float4*>(a.B + at(k0 + b_row, bn + b_col, a.N));
    const bool in = k0 + b_row < a.K;  // rows past K read as zeros
    return load4(a.B + at(in ? k0 + b_row : 0, bn, a.N), b_col, in ? a.N - bn : 0, vec_b);
  };
  auto store_tiles = [&](int buf, float4 av, float4 bv) {
    As[buf][a_col + 0][a_row] = av.x;  // transposed (BK, BM)
    As[buf][a_col + 1][a_row] = av.y;
    As[buf][a_col + 2][a_row] = av.z;
    As[buf][a_col + 3][a_row] = av.w;
    *reinterpret_cast<float4*>(&Bs[buf][b_row][b_col]) = bv;
  };

  float acc[WC::kTM][WC::kTN] = {};
  // The FMAs of one K tile, read from shared buffer `cur`.
  auto multiply_tile = [&](int cur) {
#pragma unroll
    for (int k = 0; k < WC::kBK; ++k) {
      float a_reg[WC::kTM], b_reg[WC::kTN];
#pragma unroll
      for (int s = 0; s < WC::kSubsM; ++s)
        *reinterpret_cast<float4*>(&a_reg[4 * s]) =
            *reinterpret_cast<const float4*>(&As[cur][k][m0 + s * kSubStrideM]);
#pragma unroll
      for (int s = 0; s < WC::kSubsN; ++s)
        *reinterpret_cast<float4*>(&b_reg[4 * s]) =
            *reinterpret_cast<const float4*>(&Bs[cur][k][n0 + s * kSubStrideN]);
#pragma unroll
      for (int i = 0; i < WC::kTM; ++i)
#pragma unroll
        for (int j = 0; j < WC::kTN; ++j) acc[i][j] += a_reg[i] * b_reg[j];
    }
  };

  const int tiles = ceil_div(a.K, WC::kBK);
  if constexpr (kChecked || !WC::kPeelLastTile) {
    if (tiles > 0) store_tiles(0, load_a(0), load_b(0));
    __syncthreads();  // buffer 0 complete
    // Unrolled by two: in each copy of the body `cur` is a compile-time constant, so every shared
    // address is a base register plus an immediate offset and no instruction computes the buffer.
    // Measured on the H200 at 4096^3: 87.8% of cuBLAS rolled, 92.8% unrolled (side harness).
#pragma unroll 2
    for (int tile = 0; tile < tiles; ++tile) {
      const int cur = tile & 1;
      const bool has_next = tile + 1 < tiles;
      float4 a_next{}, b_next{};
      if (has_next) {  // issue the next tile's global loads now; they land during the FMAs below
        a_next = load_a((tile + 1) * WC::kBK);
        b_next = load_b((tile + 1) * WC::kBK);
      }
      multiply_tile(cur);
      // Buffer cur ^ 1 was last read during the previous tile, which every thread finished before
      // the previous barrier: writing it now is safe.
      if (has_next) store_tiles(cur ^ 1, a_next, b_next);
      __syncthreads();  // the next buffer is complete, and nobody reads `cur` any more
    }
  } else {
    // The same double buffering with the last tile peeled off the loop (kPeelLastTile): every
    // tile in the loop has a successor, so it fetches it with no test, and ptxas issues both
    // unrolled copies' LDG.128s at the top of their tile. The sources are pointers stepped one K
    // tile at a time (A: BK columns, B: BK rows): one 64-bit add each per tile instead of an
    // address computed from k0.
    const float* a_p = a_src + a_col;
    const float* b_p = a.B + at(b_row, bn + b_col, a.N);
    const std::size_t b_step = at(WC::kBK, 0, a.N);
    if (tiles > 0)
      store_tiles(0, *reinterpret_cast<const float4*>(a_p), *reinterpret_cast<const float4*>(b_p));
    __syncthreads();  // buffer 0 complete
    int tile = 0;
#pragma unroll 2
    for (; tile + 1 < tiles; ++tile) {
      const int cur = tile & 1;  // a constant in each unrolled copy, as above
      a_p += WC::kBK;
      b_p += b_step;
      const float4 a_next = *reinterpret_cast<const float4*>(a_p);
      const float4 b_next = *reinterpret_cast<const float4*>(b_p);
      multiply_tile(cur);
      store_tiles(cur ^ 1, a_next, b_next);  // safe for the reason given above
      __syncthreads();
    }
    if (tiles > 0) multiply_tile(tile & 1);  // the last tile: nothing left to fetch
  }

  // Epilogue: thread tile row i lives at block row m0 + (i / 4) * 16 + i % 4, column j at
  // n0 + (j / 4) * 32 + j % 4. For each row a quarter-warp writes 128 contiguous bytes.
#pragma unroll
  for (int i = 0; i < WC::kTM; ++i) {
    const int row = bm + m0 + (i / WC::kSub) * kSubStrideM + i % WC::kSub;
    if (kChecked && row >= a.M) continue;
    float* c_row = a.C + at(row, 0, a.N);
#pragma unroll
    for (int js = 0; js < WC::kTN / WC::kSub; ++js) {
      const int col = bn + n0 + js * kSubStrideN;
      const int j = js * WC::kSub;
      store4(c_row, col, a.N, make_float4(acc[i][j], acc[i][j + 1], acc[i][j + 2], acc[i][j + 3]),
             vec_c, epi);
    }
  }
}

// Launch: grid (ceil(N / BN), ceil(M / BM)), WC::kThreads threads, static shared memory
// 2 x 8 x (BM + BN) floats (16 KB at 128 x 128, 8 KB at 64 x 64).
template <class WC, class Epilogue>
__global__ void __launch_bounds__(WC::kThreads, WC::kMinBlocksPerSm)
    sgemm_warptile_kernel(SgemmArgs a, bool vec_a, bool vec_b, bool vec_c, Epilogue epi) {
  __shared__ __align__(16) float As[2][WC::kBK][WC::kBM];  // (2 buffers, BK, BM): A transposed
  __shared__ __align__(16) float Bs[2][WC::kBK][WC::kBN];  // (2 buffers, BK, BN)
  const int bm = blockIdx.y * WC::kBM, bn = blockIdx.x * WC::kBN;
  // Block-uniform choice (no divergence): interior blocks of an aligned problem skip every check.
  const bool whole =
      vec_a && vec_b && vec_c && bm + WC::kBM <= a.M && bn + WC::kBN <= a.N && a.K % WC::kBK == 0;
  if (whole)
    warptile_block<WC, false>(a, bm, bn, true, true, true, epi, As, Bs);
  else
    warptile_block<WC, true>(a, bm, bn, vec_a, vec_b, vec_c, epi, As, Bs);
}

template <class WC, class Epilogue>
void launch_warptile(const SgemmArgs& a, const Epilogue& epi, cudaStream_t stream) {
  const dim3 grid(ceil_div(a.N, WC::kBN), ceil_div(a.M, WC::kBM));
  sgemm_warptile_kernel<WC, Epilogue><<<grid, WC::kThreads, 0, stream>>>(
      a, rows_are_float4(a.A, a.K), rows_are_float4(a.B, a.N), rows_are_float4(a.C, a.N), epi);
  CUDALAB_CHECK_LAUNCH();
}

// The tile the caller forced, or the planner's for this GPU (kAuto).
template <class Epilogue>
void launch_warptile(const SgemmArgs& a, WarptileTile tile, const Epilogue& epi,
                     cudaStream_t stream) {
  if (tile == WarptileTile::kAuto) tile = plan_warptile_tile(a.M, a.N, current_sm_count());
  if (tile == WarptileTile::k64x64)
    launch_warptile<Warptile64>(a, epi, stream);
  else
    launch_warptile<Warptile128>(a, epi, stream);
}

}  // namespace

void sgemm_warptile(const SgemmArgs& a, cudaStream_t stream) {
  sgemm_warptile_tile(a, WarptileTile::kAuto, stream);
}

void sgemm_warptile_tile(const SgemmArgs& a, WarptileTile tile, cudaStream_t stream) {
  launch_warptile(a, tile, Axpby{a.alpha, a.beta}, stream);
}

void sgemm_warptile_bias_relu(const SgemmArgs& a, const float* bias, WarptileTile tile,
                              cudaStream_t stream) {
  launch_warptile(a, tile, BiasRelu{bias},
                  stream);  // the epilogue itself: exercise 6.6 (sgemm_common.cuh)
}

}  // namespace cudalab::ch06::detail
