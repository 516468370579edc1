// Exercise 6.4 — convolution as an implicit GEMM (Chetlur et al., "cuDNN", 2014).
//
// A convolution is a GEMM in disguise: rows m = (n, p, q) are output pixels (N P Q of them),
// columns are output channels k (K), and the reduction index kk = (c, r, s) runs over C R S:
//
//   Y[m][k] = sum_kk X_col[m][kk] * W[kk][k],   X_col[m][kk] = x[n][c][p*stride - pad + r][q*stride
//   - pad + s]
//
// im2col would write X_col to memory (R S times the input); the implicit GEMM computes each
// X_col element on the fly while loading the A tile, so the GEMM tiling of the SGEMM ladder
// applies unchanged.
//
// Launch (the launcher's, fixed): 128 output pixels x kBN channels per block, kBN = 128 (256
// threads, 2 blocks per SM) or 64 (128 threads, 4 blocks per SM), at most 128 registers a thread
// (__launch_bounds__). The launcher picks the tile width and splits the reduction over gridDim.z
// from the shape (conv_plan below): deep layers have few pixels and a long C R S (ResNet-50 3x3
// 512->512 at 7 x 7, batch 32: 13 x 4 = 52 blocks of 128 x 128 for 132 SMs, C R S = 4608). Slice z
// writes its partial sums to its own slab of the workspace and a second kernel adds the slabs in
// the order z = 0, 1, ...: the result is the same bits on every run. FLOPs: 2 N K P Q C R S
// (ResNet-50 3x3 64->64 at 56, batch 32: 7.4 GFLOP). NCHW, fp32, any shape check_conv_shape
// accepts. conv2d_implicit_gemm_kernel runs every shape for which tap_major_applies() is false (in
// the starter: all of them); the stretch is a second kernel of your design,
// conv2d_tap_major_kernel, with the shapes it takes (tap_major_applies) and the filter layout it
// reads (conv_transpose_filters_kernel). The kernels' own design (tiling, the gather's index math,
// the order of the reduction) is exercise 6.4's; the reference's is in its solution notes
// (`scripts/lab hint 6.4 solution`).
#include <algorithm>
#include <cstdint>

#include "ch06/conv.hpp"
#include "cudalab/check.hpp"
#include "cudalab/cp_async.cuh"
#include "cudalab/device.hpp"
#include "cudalab/math.hpp"

namespace cudalab::ch06 {
namespace {

template <int BN, int MinBlocksPerSm>
struct ConvTile {
  static constexpr int kBM = 128;                   // output pixels per block
  static constexpr int kBN = BN;                    // output channels per block
  static constexpr int kBK = 8;                     // reduction (c, r, s) steps per tile
  static constexpr int kWarpM = 32, kWarpN = 64;    // warp tile
  static constexpr int kLanesM = 4, kLanesN = 8;    // lanes of a warp as 4 x 8
  static constexpr int kSub = 4, kTM = 8, kTN = 8;  // thread tile: 2 x 2 sub-tiles of 4 x 4
  static constexpr int kWarpsM = kBM / kWarpM, kWarpsN = kBN / kWarpN;
  static constexpr int kWarps = kWarpsM * kWarpsN;
  static constexpr int kThreads = kWarps * 32;
  static constexpr int kMinBlocksPerSm = MinBlocksPerSm;  // 16 warps per SM, <= 128 registers
  static constexpr int kPixels = kBM / 32;    // A-tile pixels a thread gathers: lane + 32 j
  static constexpr int kRows = kBK / kWarps;  // A-tile rows a thread gathers: warp + kWarps i
  static constexpr int kPadB = 4;             // Bs row padding: conflict-free transposing stores
};

using WideTile = ConvTile<128, 2>;   // 256 threads: K > 64
using NarrowTile = ConvTile<64, 4>;  // 128 threads: K <= 64, or when it balances the SMs better
template <class T>
constexpr bool tile_ok() {
  const bool warps_cover = T::kWarps * T::kRows == T::kBK && T::kBN % T::kWarpN == 0;
  const bool one_float4_of_filters = T::kBN * T::kBK == 4 * T::kThreads;
  const bool sub_tiles = T::kLanesM * T::kLanesN == 32 && T::kTM == 2 * T::kSub &&
                         T::kTN == 2 * T::kSub && T::kLanesM * T::kSub * 2 == T::kWarpM &&
                         T::kLanesN * T::kSub * 2 == T::kWarpN;
  return warps_cover && one_float4_of_filters && sub_tiles && T::kPixels == 4 && T::kPadB % 4 == 0;
}
static_assert(tile_ok<WideTile>() && tile_ok<NarrowTile>(),
              "warps cover the tile; one float4 of filters per thread per tile; 2 x 2 sub-tiles; a "
              "thread's 4 pixels are one int4 of each pixel_of row; 16-byte Bs rows");
static_assert(WideTile::kThreads == 256 && NarrowTile::kThreads == 128);

struct ConvArgs {
  int n, c, h, w, k, r, s, stride, pad, p, q;
  int pixels, crs, hw;           // N P Q, C R S, H W
  int tiles_per_slice;           // tiles of the reduction per gridDim.z slice (8 or 16 steps)
  int rs, cp, tiles_total, kp;   // second kernel: R S, C rounded up to 16, R S Cp / 16, K to 128
  int step_s, step_r, step_off;  // kk += 8 as a mixed-radix add: s += 8 % S, r += 8 / S % R, ...
  bool vec_w;                    // C R S % 4 == 0 and w 16-byte aligned: 16-byte filter loads
  std::size_t out_elems;         // N K P Q: slice z writes out + z * out_elems
};

// BEGIN EXERCISE 6.4
// TODO(6.4): room for device functions both kernels below share (the reference keeps its output
//   store here).
template <class T>
__device__ __forceinline__ void store_outputs(const float (&acc)[T::kTM][T::kTN], float* out,
                                              const ConvArgs& a, int m0, int n0, int mo, int no) {
  // Both kernels' store: the thread's accumulators (its two sub-tiles at (mo, no) and 16 rows / 32
  // columns further inside the block tile at (m0, n0)) to out[n][k][p][q] = out[n K PQ + k PQ + pq]
  // of slice z = blockIdx.z (y itself, or the slice's slab of the workspace). Thread row i is pixel
  // mo + (i / 4) * 16 + i % 4: four consecutive pixels lie in one image when PQ % 4 == 0, one
  // 16-byte store per channel where the slice is 16-byte aligned too.
  constexpr int kSubM = T::kWarpM / 2, kSubN = T::kWarpN / 2;
  float* dst = out + static_cast<std::size_t>(blockIdx.z) * a.out_elems;
  const int pq = a.p * a.q;
  const bool vec_y = pq % 4 == 0 && reinterpret_cast<std::uintptr_t>(dst) % 16 == 0;
#pragma unroll
  for (int half = 0; half < 2; ++half) {
    const int mb = m0 + mo + half * kSubM;
    if (mb >= a.pixels) continue;
    if (vec_y) {  // pixels % 4 == 0 too: mb + 3 < pixels
      const std::size_t base = static_cast<std::size_t>(mb / pq) * a.k * pq + mb % pq;
#pragma unroll
      for (int j = 0; j < T::kTN; ++j) {
        const int ch = n0 + no + (j / T::kSub) * kSubN + j % T::kSub;
        if (ch < a.k)
          *reinterpret_cast<float4*>(dst + base + static_cast<std::size_t>(ch) * pq) =
              make_float4(acc[half * 4 + 0][j], acc[half * 4 + 1][j], acc[half * 4 + 2][j],
                          acc[half * 4 + 3][j]);
      }
      continue;
    }
#pragma unroll
    for (int i = 0; i < T::kSub; ++i) {
      const int m = mb + i;
      if (m >= a.pixels) break;
      const std::size_t base = static_cast<std::size_t>(m / pq) * a.k * pq + m % pq;
#pragma unroll
      for (int j = 0; j < T::kTN; ++j) {
        const int ch = n0 + no + (j / T::kSub) * kSubN + j % T::kSub;
        if (ch < a.k) dst[base + static_cast<std::size_t>(ch) * pq] = acc[half * 4 + i][j];
      }
    }
  }
}
// END EXERCISE

// Launch: grid (ceil(N P Q / 128), ceil(K / kBN), slices), T::kThreads threads. Slice z of the
// reduction writes its sums to out + z * N K P Q (out = y when there is one slice).
template <class T, bool kVecW>
__global__ void __launch_bounds__(T::kThreads, T::kMinBlocksPerSm)
    conv2d_implicit_gemm_kernel(ConvArgs a, const float* __restrict__ x,
                                const float* __restrict__ w, float* __restrict__ out) {
  const int t = threadIdx.x, warp = t / 32, lane = t % 32;
  const int m0 = blockIdx.x * T::kBM, n0 = blockIdx.y * T::kBN;
  // BEGIN EXERCISE 6.4
  // TODO(6.4): conv2d_implicit_gemm_kernel, a convolution as an implicit GEMM (the launcher runs
  //   it for every shape tap_major_applies() rejects, the starter's rejects all, and wherever the
  //   caller's workspace has no room for the second kernel's filters).
  //   Contract: for this block's T::kBM output pixels (m = (n, p, q) from m0) x T::kBN output
  //     channels (from n0), the convolution of ch06/conv.hpp (NCHW fp32, cross-correlation, zero
  //     padding, any stride and pad that check_conv_shape accepts) summed over reduction slice
  //     z = blockIdx.z (the gridDim.z slices split C R S into equal runs of whole tiles of T::kBK
  //     steps of kk = (c, r, s); ConvArgs gives the tiles per slice), written to out + z *
  //     a.out_elems in y's layout (N, K, P, Q). The launcher adds the slices afterwards; with
  //     one slice, out is y. Launch (fixed by the launcher, which picks T: 128 x 128 tiles of 256
  //     threads or 128 x 64 of 128): T::kThreads threads, grid (ceil(N P Q / 128),
  //     ceil(K / T::kBN), slices). ConvArgs has the shape and
  //     helpers you may use (pixels, crs, hw, vec_w; step_* advance (c, r, s) by T::kBK). Partial
  //     tiles: nothing written outside the output, inputs outside x read as 0.
  //   Constraints: no im2col buffer in global memory (the GEMM's A operand is gathered from x on
  //     the fly, in the tiles you stage); shared-memory tiles and register blocking as in 6.1-6.2;
  //     FP32 FMA math (no tensor cores); no library call; no atomics (the same bits every run).
  //   Goal: BM_conv/implicit_gemm/3x3_64to64_56 >= 1.2x the speed of
  //     BM_conv_cudnn_gemm/3x3_64to64_56 (cuDNN's fastest GEMM-family algorithm, FMA math);
  //     `scripts/lab check 6.4`.
  // STARTER: (void)a; (void)x; (void)w; (void)out; (void)t; (void)warp; (void)lane; (void)m0; (void)n0;
  constexpr int kBK = T::kBK;
  __shared__ __align__(16) float As[2][kBK][T::kBM];             // (BK, BM) gathered x
  __shared__ __align__(16) float Bs[2][kBK][T::kBN + T::kPadB];  // (BK, BN) filters, transposed
  // This block's slice of the reduction, in whole tiles.
  const int k_begin = static_cast<int>(blockIdx.z) * a.tiles_per_slice * kBK;
  const int k_end = min(a.crs, k_begin + a.tiles_per_slice * kBK);

  // Gather (A tile): x offset = pix + off with pix = n C H W + h0 W + w0 (the pixel's part,
  // decoded once per block into shared memory, read back as three 16-byte loads per tile rather
  // than held in 12 registers) and off = c H W + r W + s (the row's part, advanced once per tile);
  // the element is in the image when 0 <= h0 + r < H and 0 <= w0 + s < W.
  __shared__ __align__(16) int pixel_of[3][32][T::kPixels];  // (h0, w0, pix) of pixel lane + 32 j
  if (t < T::kBM) {
    const int gm = m0 + t;
    int h0 = -(1 << 28), w0 = 0, pix = 0;  // past the last pixel: every bounds test fails
    if (gm < a.pixels) {
      const int pq = a.p * a.q, gn = gm / pq, gp = (gm % pq) / a.q, gq = gm % a.q;
      h0 = gp * a.stride - a.pad;
      w0 = gq * a.stride - a.pad;
      pix = gn * a.c * a.hw + h0 * a.w + w0;
    }
    pixel_of[0][t % 32][t / 32] = h0;
    pixel_of[1][t % 32][t / 32] = w0;
    pixel_of[2][t % 32][t / 32] = pix;
  }
  int r_cur[T::kRows], s_cur[T::kRows], off[T::kRows];
#pragma unroll
  for (int i = 0; i < T::kRows; ++i) {  // row warp + kWarps i of each tile, from k_begin on
    const int kk = k_begin + warp + i * T::kWarps, rs = a.r * a.s;
    r_cur[i] = (kk % rs) / a.s;
    s_cur[i] = kk % a.s;
    off[i] = (kk / rs) * a.hw + r_cur[i] * a.w + s_cur[i];
  }
  // Filters (B tile): w is (K, C R S) row-major; thread t loads kk k0 + b_kl .. + 3 of filter
  // n0 + t / 2: 2 threads read 32 contiguous bytes of a filter, a warp 16 filters.
  const int b_ch = n0 + t / 2, b_kl = (t % 2) * 4;
  const float* w_row = w + static_cast<std::size_t>(min(b_ch, a.k - 1)) * a.crs;
  float a_ld[T::kRows][T::kPixels];  // the next tile, in flight in registers
  float4 b_ld;
  auto load_tiles = [&](int k0) {
    const int4 h0 = *reinterpret_cast<const int4*>(pixel_of[0][lane]);
    const int4 w0 = *reinterpret_cast<const int4*>(pixel_of[1][lane]);
    const int4 pix = *reinterpret_cast<const int4*>(pixel_of[2][lane]);
    const int h0s[4] = {h0.x, h0.y, h0.z, h0.w}, w0s[4] = {w0.x, w0.y, w0.z, w0.w};
    const int pixs[4] = {pix.x, pix.y, pix.z, pix.w};
#pragma unroll
    for (int i = 0; i < T::kRows; ++i) {
      const bool row_in = k0 + warp + i * T::kWarps < k_end;  // the C R S tail, the slice's end
#pragma unroll
      for (int j = 0; j < T::kPixels; ++j) {
        const bool ok = row_in &&
                        static_cast<unsigned>(h0s[j] + r_cur[i]) < static_cast<unsigned>(a.h) &&
                        static_cast<unsigned>(w0s[j] + s_cur[i]) < static_cast<unsigned>(a.w);
        a_ld[i][j] = ok ? x[pixs[j] + off[i]] : 0.0f;  // padding reads 0
      }
      // Row kk + 8: (c, r, s) + (8 / (R S), 8 / S % R, 8 % S), one carry at most per digit.
      s_cur[i] += a.step_s;
      r_cur[i] += a.step_r;
      off[i] += a.step_off;
      if (s_cur[i] >= a.s) {
        s_cur[i] -= a.s;
        ++r_cur[i];
        off[i] += a.w - a.s;
      }
      if (r_cur[i] >= a.r) {
        r_cur[i] -= a.r;
        off[i] += a.hw - a.r * a.w;
      }
    }
    const int kb = k0 + b_kl;
    const bool ch_in = b_ch < a.k;
    if constexpr (kVecW) {  // k_end % 4 == 0: the 4 values are all inside the slice or all outside
      b_ld = ch_in && kb < k_end ? *reinterpret_cast<const float4*>(w_row + kb)
                                 : make_float4(0.0f, 0.0f, 0.0f, 0.0f);
    } else {
      b_ld.x = ch_in && kb + 0 < k_end ? w_row[kb + 0] : 0.0f;
      b_ld.y = ch_in && kb + 1 < k_end ? w_row[kb + 1] : 0.0f;
      b_ld.z = ch_in && kb + 2 < k_end ? w_row[kb + 2] : 0.0f;
      b_ld.w = ch_in && kb + 3 < k_end ? w_row[kb + 3] : 0.0f;
    }
  };
  auto store_tiles = [&](int buf) {
#pragma unroll
    for (int i = 0; i < T::kRows; ++i)
#pragma unroll
      for (int j = 0; j < T::kPixels; ++j)
        As[buf][warp + i * T::kWarps][lane + 32 * j] = a_ld[i][j];  // a warp: 32 words of a row
    Bs[buf][b_kl + 0][t / 2] = b_ld.x;  // transposed; the padding spreads the banks
    Bs[buf][b_kl + 1][t / 2] = b_ld.y;
    Bs[buf][b_kl + 2][t / 2] = b_ld.z;
    Bs[buf][b_kl + 3][t / 2] = b_ld.w;
  };

  // The FMAs: warp (warp_m, warp_n), lane (lane_m, lane_n); the thread's first sub-tile sits at
  // (mo, no) inside the block tile, the second 16 rows / 32 columns further (sgemm_7_warptile.cu).
  const int warp_m = warp / T::kWarpsN, warp_n = warp % T::kWarpsN;
  const int lane_m = lane / T::kLanesN, lane_n = lane % T::kLanesN;
  const int mo = warp_m * T::kWarpM + lane_m * T::kSub, no = warp_n * T::kWarpN + lane_n * T::kSub;
  constexpr int kSubM = T::kWarpM / 2, kSubN = T::kWarpN / 2;
  float acc[T::kTM][T::kTN] = {};
  const int tiles = ceil_div(max(k_end - k_begin, 0), kBK);
  __syncthreads();  // pixel_of complete
  if (tiles > 0) {
    load_tiles(k_begin);
    store_tiles(0);
  }
  __syncthreads();  // buffer 0 complete
  // Unrolled by two, as in step 7: `cur` is then a constant in each copy of the body.
#pragma unroll 2
  for (int tile = 0; tile < tiles; ++tile) {
    const bool has_next = tile + 1 < tiles;
    const int cur = tile & 1;
    if (has_next) load_tiles(k_begin + (tile + 1) * kBK);  // in flight during the FMAs below
#pragma unroll
    for (int k = 0; k < kBK; ++k) {
      float av[T::kTM], bv[T::kTN];
      *reinterpret_cast<float4*>(&av[0]) = *reinterpret_cast<const float4*>(&As[cur][k][mo]);
      *reinterpret_cast<float4*>(&av[4]) =
          *reinterpret_cast<const float4*>(&As[cur][k][mo + kSubM]);
      *reinterpret_cast<float4*>(&bv[0]) = *reinterpret_cast<const float4*>(&Bs[cur][k][no]);
      *reinterpret_cast<float4*>(&bv[4]) =
          *reinterpret_cast<const float4*>(&Bs[cur][k][no + kSubN]);
#pragma unroll
      for (int i = 0; i < T::kTM; ++i)
#pragma unroll
        for (int j = 0; j < T::kTN; ++j) acc[i][j] += av[i] * bv[j];  // 64 FMAs, 4 shared loads
    }
    // Buffer cur ^ 1 was last read during the previous tile, which every thread finished before
    // the previous barrier: writing it now is safe.
    if (has_next) store_tiles(cur ^ 1);
    __syncthreads();  // the next tile is complete, and nobody reads `cur` any more
  }

  store_outputs<T>(acc, out, a, m0, n0, mo, no);
  // END EXERCISE
}

// The second kernel's tiles (the launcher's, fixed): 128 pixels x kBN channels x 16 reduction
// steps, kStages shared-memory stages of A and B in kSmemBytes of dynamic shared memory.
template <int BN, int MinBlocksPerSm>
struct TapTile {
  static constexpr int kBM = 128, kBN = BN, kBK = 16, kStages = 3;
  static constexpr int kWarpM = 32, kWarpN = 64, kLanesM = 4, kLanesN = 8;
  static constexpr int kSub = 4, kTM = 8, kTN = 8;
  static constexpr int kWarpsM = kBM / kWarpM, kWarpsN = kBN / kWarpN;
  static constexpr int kWarps = kWarpsM * kWarpsN, kThreads = kWarps * 32;
  static constexpr int kMinBlocksPerSm = MinBlocksPerSm;
  static constexpr int kTPP = kThreads / kBM;  // threads per pixel (1: 128 x 64, 2: 128 x 128)
  static constexpr int kARows = kBK / kTPP;    // A elements a thread copies per tile
  static constexpr int kAFloats = kBK * kBM, kStageFloats = kAFloats + kBK * kBN;
  static constexpr int kSmemBytes = kStages * kStageFloats * 4;  // dynamic shared memory
  static constexpr int kBVec = kBK * kBN / 4 / kThreads;         // 16-byte filter copies a thread
};
using WideTap = TapTile<128, 2>;
using NarrowTap = TapTile<64, 4>;
template <class T>
constexpr bool tap_tile_ok() {
  return T::kLanesM * T::kLanesN == 32 && T::kLanesM * T::kSub * 2 == T::kWarpM &&
         T::kTM == 2 * T::kSub && T::kTN == 2 * T::kSub && T::kTPP * T::kBM == T::kThreads &&
         T::kARows * T::kTPP == T::kBK && T::kBVec * T::kThreads * 4 == T::kBK * T::kBN &&
         T::kSmemBytes <= 48 * 1024;
}
static_assert(tap_tile_ok<WideTap>() && tap_tile_ok<NarrowTap>(),
              "4 x 8 lanes of 4 x 4 sub-tiles; threads cover the pixels; whole 16-byte filter "
              "copies; <= 48 KB of shared memory");
static_assert(WideTap::kBK == NarrowTap::kBK);
constexpr int kTapBK = WideTap::kBK;
constexpr int kTapKp = 128;  // wt's rows are K rounded up to this (a wide tile never reads past)
// The cp.async copies: cudalab/cp_async.cuh's wrappers (the starter may use them or not).

// Launch: grid (ceil(N P Q / 128), ceil(K / kBN), slices), T::kThreads threads, T::kSmemBytes of
// dynamic shared memory. wt = the transposed filters; slice z covers tiles
// [z tiles_per_slice, min(tiles_total, (z + 1) tiles_per_slice)) and writes out + z N K P Q.
template <class T>
__global__ void __launch_bounds__(T::kThreads, T::kMinBlocksPerSm)
    conv2d_tap_major_kernel(ConvArgs a, const float* __restrict__ x, const float* __restrict__ wt,
                            float* __restrict__ out) {
  extern __shared__ __align__(16) float smem[];
  const int t = threadIdx.x, warp = t / 32, lane = t % 32;
  const int m0 = blockIdx.x * T::kBM, n0 = blockIdx.y * T::kBN;
  // BEGIN EXERCISE 6.4
  // TODO(6.4): (stretch) conv2d_tap_major_kernel, a second kernel of your design for the shapes
  //   tap_major_applies() gives it (the starter's gives it none).
  //   Contract: conv2d_implicit_gemm_kernel's (this block's T::kBM pixels x T::kBN channels, slice
  //     z = blockIdx.z written to out + z * a.out_elems in y's layout, partial tiles, any shape it
  //     is given), except that the reduction runs over a.tiles_total tiles of 16 steps in an order
  //     of your choosing over R S x Cp (Cp = a.cp, C rounded up to 16; steps with c >= C add 0),
  //     slice z taking tiles [z a.tiles_per_slice, (z + 1) a.tiles_per_slice); and that the filters
  //     arrive as wt, the R S Cp a.kp floats conv_transpose_filters_kernel wrote (its layout is
  //     yours too). T::kSmemBytes of dynamic shared memory; launch as above.
  //   Constraints and goal: conv2d_implicit_gemm_kernel's.
  // STARTER: (void)a; (void)x; (void)wt; (void)out; (void)smem; (void)t; (void)warp; (void)lane; (void)m0; (void)n0;
  constexpr int kBK = T::kBK, kBM = T::kBM, kS = T::kStages;
  // The reference's order: kk = (r S + s) Cp + c, so one 16-deep tile is 16 channels of ONE
  // filter tap (one bounds test per pixel per tile), with the filters pre-transposed as
  // wt[(r S + s) Cp + c][Kp] (zero padded) by conv_transpose_filters_kernel.
  const int tb = static_cast<int>(blockIdx.z) * a.tiles_per_slice;
  const int ntiles = max(min(a.tiles_total, tb + a.tiles_per_slice) - tb, 0);

  // This thread's pixel (t % kBM: a warp copies 32 consecutive pixels) and A rows (channels
  // t / kBM + kTPP i of each tile). One bounds test per tile: the tile is one tap (r, s).
  const int pl = t % kBM, prow = t / kBM;
  int h0 = -(1 << 28), w0 = -(1 << 28), pix = 0;  // past the last pixel: every test fails
  if (m0 + pl < a.pixels) {
    const int gm = m0 + pl, pq = a.p * a.q, gn = gm / pq, rem = gm - gn * pq, gp = rem / a.q;
    h0 = gp * a.stride - a.pad;
    w0 = (rem - gp * a.q) * a.stride - a.pad;
    pix = gn * a.c * a.hw + h0 * a.w + w0 + prow * a.hw;
  }
  const std::uint32_t s_base = shared_address(smem);
  const std::uint32_t a_dst0 = s_base + 4u * (prow * kBM + pl);
  const int a_step = T::kTPP * a.hw;  // x offset between a thread's consecutive A rows

  // The load cursor (tap r, s; channel block c0), in c-block-major order: consecutive tiles walk
  // the taps of the same 16 channels, so the x rows re-read for the next tap are still in L1.
  const int cb = tb / a.rs;
  int ld_c0 = cb * kBK, ld_tap = tb - cb * a.rs;
  int ld_r = ld_tap / a.s, ld_s = ld_tap - ld_r * a.s;
  auto issue = [&](int stage) {  // cp.async of the tile at the cursor into `stage`, then advance
    const std::uint32_t st_off = 4u * stage * T::kStageFloats;
    const bool pin = static_cast<unsigned>(h0 + ld_r) < static_cast<unsigned>(a.h) &&
                     static_cast<unsigned>(w0 + ld_s) < static_cast<unsigned>(a.w);
    const int stp = pin ? a_step : 0;
    const float* src = x + (pin ? pix + ld_c0 * a.hw + ld_r * a.w + ld_s : 0);
    const std::uint32_t dst = a_dst0 + st_off;
    if (ld_c0 + kBK <= a.c) {  // block-uniform: every row of the tile is a real channel
#pragma unroll                 // pin false: zero-fill (padding, past the last pixel)
      for (int i = 0; i < T::kARows; ++i)
        cp_async_4(dst + 4u * i * T::kTPP * kBM, src + i * stp, pin);
    } else {  // the channel tail (C % 16 != 0): rows past C are zero-filled, x is not read
      const int crem = a.c - ld_c0 - prow;
#pragma unroll
      for (int i = 0; i < T::kARows; ++i) {
        const bool ok = pin && i * T::kTPP < crem;
        cp_async_4(dst + 4u * i * T::kTPP * kBM, ok ? src + i * stp : x, ok);
      }
    }
    const std::uint32_t bdst = s_base + st_off + 4u * T::kAFloats;
    const float* wrow = wt + static_cast<std::size_t>((ld_r * a.s + ld_s) * a.cp + ld_c0) * a.kp;
#pragma unroll
    for (int l = 0; l < T::kBVec; ++l) {  // copy e: row e / (kBN / 4), 4 columns
      const int e = t + l * T::kThreads, row = e / (T::kBN / 4), col = (e % (T::kBN / 4)) * 4;
      cp_async_16(bdst + 4u * (row * T::kBN + col),
                  wrow + static_cast<std::size_t>(row) * a.kp + n0 + col);
    }
    if (++ld_s == a.s) {
      ld_s = 0;
      if (++ld_r == a.r) {
        ld_r = 0;
        ld_c0 += kBK;
      }
    }
  };

  // The FMAs and the store: conv2d_implicit_gemm_kernel's (warp 32 x 64, thread 2 x 2 sub-tiles).
  const int warp_m = warp / T::kWarpsN, warp_n = warp % T::kWarpsN;
  const int lane_m = lane / T::kLanesN, lane_n = lane % T::kLanesN;
  const int mo = warp_m * T::kWarpM + lane_m * T::kSub, no = warp_n * T::kWarpN + lane_n * T::kSub;
  constexpr int kSubM = T::kWarpM / 2, kSubN = T::kWarpN / 2;
  float acc[T::kTM][T::kTN] = {};
#pragma unroll
  for (int st = 0; st < kS - 1; ++st) {  // kS - 1 tiles in flight before the first FMA
    if (st < ntiles) issue(st);
    cp_async_commit();
  }
  int cs = 0, ls = kS - 1;  // the stage computed now, the stage loaded next
  for (int tile = 0; tile < ntiles; ++tile) {
    cp_async_wait<kS - 2>();  // this thread's copies of `tile` have landed
    __syncthreads();          // everyone's have; everyone finished tile - 1 (stage ls is free)
    if (tile + kS - 1 < ntiles) issue(ls);
    cp_async_commit();
    const float* As = smem + cs * T::kStageFloats;
    const float* Bs = As + T::kAFloats;
#pragma unroll
    for (int k = 0; k < kBK; ++k) {
      float av[T::kTM], bv[T::kTN];
      *reinterpret_cast<float4*>(&av[0]) = *reinterpret_cast<const float4*>(&As[k * kBM + mo]);
      *reinterpret_cast<float4*>(&av[4]) =
          *reinterpret_cast<const float4*>(&As[k * kBM + mo + kSubM]);
      *reinterpret_cast<float4*>(&bv[0]) = *reinterpret_cast<const float4*>(&Bs[k * T::kBN + no]);
      *reinterpret_cast<float4*>(&bv[4]) =
          *reinterpret_cast<const float4*>(&Bs[k * T::kBN + no + kSubN]);
#pragma unroll
      for (int i = 0; i < T::kTM; ++i)
#pragma unroll
        for (int j = 0; j < T::kTN; ++j) acc[i][j] += av[i] * bv[j];
    }
    cs = cs + 1 == kS ? 0 : cs + 1;
    ls = ls + 1 == kS ? 0 : ls + 1;
  }
  cp_async_wait<0>();  // no copy outlives the block (the empty groups past the last tile)

  store_outputs<T>(acc, out, a, m0, n0, mo, no);
  // END EXERCISE
}

// The filters as the second kernel reads them: the first filter_bytes(a) bytes of the workspace,
// written inside the call (grid-stride launch, kTransposeBlock threads a block) from w (K, C, R,
// S).
constexpr unsigned kTransposeBlock = 256;
__global__ void __launch_bounds__(kTransposeBlock)
    conv_transpose_filters_kernel(const float* __restrict__ w, int k, int c, int rs, int cp, int kp,
                                  float* __restrict__ wt) {
  // BEGIN EXERCISE 6.4
  // TODO(6.4): (stretch) the filter layout conv2d_tap_major_kernel reads: every float of wt
  //   written, its padding included (filter_bytes below gives its size), from w[k][c][r][s].
  // STARTER: (void)w; (void)k; (void)c; (void)rs; (void)cp; (void)kp; (void)wt;
  const int total = rs * cp * kp;
  // wt[(r S + s) Cp + c][k] = w[k][c][r][s] for c < C, k < K; 0 in the padding (c < Cp, k < Kp).
  for (int e = blockIdx.x * blockDim.x + threadIdx.x; e < total; e += gridDim.x * blockDim.x) {
    const int kk = e % kp, row = e / kp, cc = row % cp, tap = row / cp;
    wt[e] = kk < k && cc < c ? w[(static_cast<std::size_t>(kk) * c + cc) * rs + tap] : 0.0f;
  }
  // END EXERCISE
}

// Split-K, second pass: y[e] = part[0][e] + part[1][e] + ... in that order (deterministic).
// Memory-bound: V = float4 when the element count is a multiple of 4 (16-byte accesses).
constexpr unsigned kSumBlock = 256;  // threads per block of the slice sum (bounds, grid, launch)
template <class V>
__global__ void __launch_bounds__(kSumBlock)
    conv_sum_slices_kernel(const V* __restrict__ part, int slices, std::size_t count,
                           V* __restrict__ y) {
  for (std::size_t e = blockIdx.x * std::size_t{blockDim.x} + threadIdx.x; e < count;
       e += std::size_t{gridDim.x} * blockDim.x) {
    V sum = part[e];
    for (int z = 1; z < slices; ++z) {
      const V v = part[z * count + e];
      if constexpr (sizeof(V) == sizeof(float4)) {
        sum.x += v.x, sum.y += v.y, sum.z += v.z, sum.w += v.w;
      } else {
        sum += v;
      }
    }
    y[e] = sum;
  }
}

// The launch plan: the tile width and the number of reduction slices, from the shape and the SM
// count. A model, not a measurement: the busiest SM runs its blocks in rounds of up to
// kMinBlocksPerSm at once; a round lasts its FMAs over the SM's 128 FP32 lanes, scaled by how well
// its warps hide latency (assumed: 16 warps 1, 12 warps 0.95, 8 warps 0.85, 4 warps 0.55) and by
// the tile's FMA share of its issued instructions (ptxas, sm_90: the 64-wide tile issues about 9%
// more instructions per FMA: twice the gathered values per FMA). Split-K adds the reduction pass.
struct ConvPlan {
  bool wide = false;
  int slices = 1, tiles_per_slice = 0;
};
constexpr int kMaxSlices = 8;
constexpr int kMinTilesPerSlice = 16;  // a slice keeps >= 128 reduction steps

double warp_hiding(int warps) {
  return warps >= 16 ? 1.0 : warps >= 12 ? 0.95 : warps >= 8 ? 0.85 : 0.55;
}

template <class T>
double plan_clocks(long long pixel_tiles, int k, int tiles, int per_slice, int sms, double issue) {
  const long long blocks = pixel_tiles * ceil_div(k, T::kBN) * ceil_div(tiles, per_slice);
  const long long per_sm = ceil_div<long long>(blocks, sms);  // the busiest SM's blocks
  const long long rounds = per_sm / T::kMinBlocksPerSm, rest = per_sm % T::kMinBlocksPerSm;
  const double block = 1.0 * T::kBM * T::kBN * per_slice * T::kBK / (128.0 * issue);
  return block * (rounds * T::kMinBlocksPerSm / warp_hiding(T::kMinBlocksPerSm * T::kWarps) +
                  (rest > 0 ? rest / warp_hiding(static_cast<int>(rest) * T::kWarps) : 0.0));
}

ConvPlan conv_plan(const ConvArgs& a, int sms, int max_slices) {
  const long long pixel_tiles = ceil_div(a.pixels, WideTile::kBM);
  const int tiles = ceil_div(a.crs, WideTile::kBK);
  // Reduction pass: (2 slices + 1) N K P Q floats through DRAM at ~2 KB per clock, and a launch.
  const double out_bytes = 4.0 * static_cast<double>(a.out_elems);
  ConvPlan best;
  double best_clocks = 0;
  for (const bool wide : {false, true}) {
    if (wide && a.k <= NarrowTile::kBN) continue;  // a 128-wide tile would be half empty
    for (int slices = 1; slices <= max_slices; ++slices) {
      if (slices > 1 && tiles / slices < kMinTilesPerSlice) break;
      const int per_slice = ceil_div(tiles, slices), used = ceil_div(tiles, per_slice);
      double clocks = wide
                          ? plan_clocks<WideTile>(pixel_tiles, a.k, tiles, per_slice, sms, 1.0)
                          : plan_clocks<NarrowTile>(pixel_tiles, a.k, tiles, per_slice, sms, 0.915);
      if (used > 1) clocks += (2.0 * used + 1) * out_bytes / 2048.0 + 8000.0;
      if (best.tiles_per_slice == 0 || clocks < best_clocks) {
        best = {wide, used, per_slice};
        best_clocks = clocks;
      }
    }
  }
  return best;
}

ConvArgs conv_args(const ConvShape& shape) {
  ConvArgs a{};
  a.n = shape.n, a.c = shape.c, a.h = shape.h, a.w = shape.w, a.k = shape.k, a.r = shape.r;
  a.s = shape.s, a.stride = shape.stride, a.pad = shape.pad, a.p = shape.p(), a.q = shape.q();
  a.pixels = a.n * a.p * a.q;
  a.crs = a.c * a.r * a.s;
  a.hw = a.h * a.w;
  const int step = WideTile::kBK;
  static_assert(WideTile::kBK == NarrowTile::kBK);
  a.step_s = step % a.s;
  a.step_r = step / a.s % a.r;
  a.step_off = step / (a.r * a.s) * a.hw + a.step_r * a.w + a.step_s;
  a.out_elems = static_cast<std::size_t>(a.n) * a.k * a.p * a.q;
  a.rs = a.r * a.s;
  a.cp = ceil_div(a.c, kTapBK) * kTapBK;
  a.tiles_total = a.rs * (a.cp / kTapBK);
  a.kp = ceil_div(a.k, kTapKp) * kTapKp;
  return a;
}

// Whether conv2d_tap_major_kernel runs this shape (given room in the workspace for its filters).
bool tap_major_applies(const ConvArgs& a) {
  // BEGIN EXERCISE 6.4
  // TODO(6.4): (stretch) true for the shapes your conv2d_tap_major_kernel should run (with R S Cp
  //   a.kp floats of filters, and R S Cp a.kp < 2^31); the starter's: none.
  // STARTER: (void)a;
  // STARTER: return false;
  const bool fits = 1.0 * a.rs * a.cp * a.kp <= 2147483647.0;  // wt: 32-bit indices
  // The reference's: where the channel padding wastes at most a third of the FMAs (3 Cp <= 4 C:
  // C % 16 == 0, or C >= 48); otherwise (conv1's C = 3) the (c, r, s) kernel.
  return fits && 3 * a.cp <= 4 * a.c;
  // END EXERCISE
}
// The transposed filters: R S Cp Kp floats, a multiple of 16 bytes (Kp % 128 == 0).
std::size_t filter_bytes(const ConvArgs& a) {
  return tap_major_applies(a) ? sizeof(float) * a.rs * a.cp * a.kp : 0;
}
std::size_t workspace_of(const ConvArgs& a, const ConvPlan& plan) {
  return filter_bytes(a) + (plan.slices > 1 ? sizeof(float) * plan.slices * a.out_elems : 0);
}

template <class T>
void launch_tap_major(const ConvArgs& a, int slices, const float* x, const float* wt, float* out,
                      cudaStream_t stream) {
  const dim3 grid(ceil_div(a.pixels, T::kBM), ceil_div(a.k, T::kBN), slices);
  require(grid.y <= 65535, "shape.k", "too many output channels for grid.y");
  conv2d_tap_major_kernel<T><<<grid, T::kThreads, T::kSmemBytes, stream>>>(a, x, wt, out);
  CUDALAB_CHECK_LAUNCH();
}

template <class T>
void launch_conv(const ConvArgs& a, const ConvPlan& plan, const float* x, const float* w,
                 float* out, cudaStream_t stream) {
  const dim3 grid(ceil_div(a.pixels, T::kBM), ceil_div(a.k, T::kBN), plan.slices);
  require(grid.y <= 65535, "shape.k", "too many output channels for grid.y");
  if (a.vec_w)
    conv2d_implicit_gemm_kernel<T, true><<<grid, T::kThreads, 0, stream>>>(a, x, w, out);
  else
    conv2d_implicit_gemm_kernel<T, false><<<grid, T::kThreads, 0, stream>>>(a, x, w, out);
  CUDALAB_CHECK_LAUNCH();
}

}  // namespace

std::size_t conv2d_implicit_gemm_workspace_bytes(const ConvShape& shape) {
  check_conv_shape(shape);
  const ConvArgs a = conv_args(shape);
  return workspace_of(a, conv_plan(a, current_sm_count(), kMaxSlices));
}

void conv2d_implicit_gemm(const ConvShape& shape, const float* x, const float* w, float* y,
                          void* workspace, std::size_t workspace_bytes, cudaStream_t stream) {
  check_conv_shape(shape);
  ConvArgs a = conv_args(shape);
  require_device_pointer(x, static_cast<std::size_t>(a.n) * a.c * a.h * a.w, "x");
  require_device_pointer(w, static_cast<std::size_t>(a.k) * a.crs, "w");
  require_device_pointer(y, a.out_elems, "y");
  // The workspace: the transposed filters (tap-major path), then the split-K slabs. With less than
  // the filters need (or a workspace that is not 16-byte aligned: both are copied in 16-byte
  // pieces), the (c, r, s) kernel runs; with fewer slabs, fewer slices.
  const bool ws_ok = workspace != nullptr && reinterpret_cast<std::uintptr_t>(workspace) % 16 == 0;
  const std::size_t have = ws_ok ? workspace_bytes : 0, wt_bytes = filter_bytes(a);
  const bool tap = tap_major_applies(a) && have >= wt_bytes;
  float* slabs = static_cast<float*>(workspace) + (tap ? wt_bytes / sizeof(float) : 0);
  const int fit = static_cast<int>(std::min<std::size_t>(
      kMaxSlices, (have - (tap ? wt_bytes : 0)) / (sizeof(float) * a.out_elems)));
  const ConvPlan plan = conv_plan(a, current_sm_count(), std::max(fit, 1));
  int slices = plan.slices;
  if (tap) {  // the plan's slices, re-cut in whole 16-step tiles
    a.tiles_per_slice = ceil_div(a.tiles_total, plan.slices);
    slices = ceil_div(a.tiles_total, a.tiles_per_slice);
  } else {
    a.tiles_per_slice = plan.tiles_per_slice;
  }
  if (tap)
    require_device_pointer(static_cast<float*>(workspace), wt_bytes / sizeof(float), "workspace");
  if (slices > 1) require_device_pointer(slabs, slices * a.out_elems, "workspace");
  a.vec_w = a.crs % 4 == 0 && reinterpret_cast<std::uintptr_t>(w) % 16 == 0;
  float* out = slices > 1 ? slabs : y;
  if (tap) {
    float* wt = static_cast<float*>(workspace);
    const int total = a.rs * a.cp * a.kp;
    const int blocks =
        std::min(ceil_div(total, static_cast<int>(kTransposeBlock)), current_sm_count() * 8);
    conv_transpose_filters_kernel<<<blocks, kTransposeBlock, 0, stream>>>(w, a.k, a.c, a.rs, a.cp,
                                                                          a.kp, wt);
    CUDALAB_CHECK_LAUNCH();
    if (plan.wide)
      launch_tap_major<WideTap>(a, slices, x, wt, out, stream);
    else
      launch_tap_major<NarrowTap>(a, slices, x, wt, out, stream);
  } else if (plan.wide) {
    launch_conv<WideTile>(a, plan, x, w, out, stream);
  } else {
    launch_conv<NarrowTile>(a, plan, x, w, out, stream);
  }
  if (slices > 1) {
    const bool vec = a.out_elems % 4 == 0 && reinterpret_cast<std::uintptr_t>(y) % 16 == 0;
    const std::size_t count = vec ? a.out_elems / 4 : a.out_elems;
    const int blocks = static_cast<int>(std::min<std::size_t>(
        ceil_div<std::size_t>(count, kSumBlock), static_cast<std::size_t>(current_sm_count()) * 8));
    if (vec)
      conv_sum_slices_kernel<float4><<<blocks, kSumBlock, 0, stream>>>(
          reinterpret_cast<const float4*>(slabs), slices, count, reinterpret_cast<float4*>(y));
    else
      conv_sum_slices_kernel<float><<<blocks, kSumBlock, 0, stream>>>(slabs, slices, count, y);
    CUDALAB_CHECK_LAUNCH();
  }
}

}  // namespace cudalab::ch06
