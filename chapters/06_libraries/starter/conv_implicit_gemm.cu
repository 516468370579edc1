// Starter track — write your code at the TODO marks; the tests of each exercise
// fail until you do. (Generated from chapters/06_libraries/reference/conv_implicit_gemm.cu by scripts/variants.py.)
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

// TODO(6.4): room for device functions both kernels below share (the reference keeps its output
//   store here).

// Launch: grid (ceil(N P Q / 128), ceil(K / kBN), slices), T::kThreads threads. Slice z of the
// reduction writes its sums to out + z * N K P Q (out = y when there is one slice).
template <class T, bool kVecW>
__global__ void __launch_bounds__(T::kThreads, T::kMinBlocksPerSm)
    conv2d_implicit_gemm_kernel(ConvArgs a, const float* __restrict__ x,
                                const float* __restrict__ w, float* __restrict__ out) {
  const int t = threadIdx.x, warp = t / 32, lane = t % 32;
  const int m0 = blockIdx.x * T::kBM, n0 = blockIdx.y * T::kBN;
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
  (void)a; (void)x; (void)w; (void)out; (void)t; (void)warp; (void)lane; (void)m0; (void)n0;
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
  (void)a; (void)x; (void)wt; (void)out; (void)smem; (void)t; (void)warp; (void)lane; (void)m0; (void)n0;
}

// The filters as the second kernel reads them: the first filter_bytes(a) bytes of the workspace,
// written inside the call (grid-stride launch, kTransposeBlock threads a block) from w (K, C, R,
// S).
constexpr unsigned kTransposeBlock = 256;
__global__ void __launch_bounds__(kTransposeBlock)
    conv_transpose_filters_kernel(const float* __restrict__ w, int k, int c, int rs, int cp, int kp,
                                  float* __restrict__ wt) {
  // TODO(6.4): (stretch) the filter layout conv2d_tap_major_kernel reads: every float of wt
  //   written, its padding included (filter_bytes below gives its size), from w[k][c][r][s].
  (void)w; (void)k; (void)c; (void)rs; (void)cp; (void)kp; (void)wt;
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
  // TODO(6.4): (stretch) true for the shapes your conv2d_tap_major_kernel should run (with R S Cp
  //   a.kp floats of filters, and R S Cp a.kp < 2^31); the starter's: none.
  (void)a;
  return false;
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
