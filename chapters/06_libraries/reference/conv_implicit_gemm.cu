// Exercise 6.4 — convolution as an implicit GEMM (Chetlur et al., "cuDNN", 2014).
//
// A convolution is a GEMM in disguise: rows m = (n, p, q) are output pixels (N P Q of them),
// columns are output channels k (K), and the reduction index kk = (c, r, s) runs over C R S:
//
//   Y[m][k] = sum_kk X_col[m][kk] * W[kk][k],   X_col[m][kk] = x[n][c][p*stride - pad + r][q*stride
//   - pad + s]
//
// im2col would write X_col to memory (R S times the input); the implicit GEMM computes each
// X_col element on the fly while loading the A tile, so the GEMM tiling of exercises 6.1/6.2
// applies unchanged. Tile: 128 pixels x 64 channels x 8 reduction steps, 128 threads, each
// thread 8 pixels x 8 channels (the SGEMM ladder's 8 x 8 outer product: 4 LDS.128 per 64 FMAs),
// two shared buffers with the next tile's global loads held in registers during the FMAs (one
// barrier per tile), im2col index math out of the inner loop: a thread's pixel is decoded once and
// its (c, r, s) advanced by carries, so a gathered element costs two compares and an add. When
// the grid is too small to fill the GPU (deep layers: few pixels, long C R S), the reduction is
// split over gridDim.z blocks that add their partial sums with atomicAdd (split-K; the summation
// order then varies from run to run, within the same error bound). FLOPs: 2 N K P Q C R S
// (ResNet-50 3x3 64->64 at 56, batch 32: 7.4 GFLOP). NCHW, fp32, any shape check_conv_shape
// accepts.
#include <algorithm>
#include <cstdint>

#include "ch06/conv.hpp"
#include "cudalab/check.hpp"
#include "cudalab/math.hpp"

namespace cudalab::ch06 {
namespace {

struct ConvConfig {
  static constexpr int kBM = 128;  // output pixels per block
  static constexpr int kBN = 64;   // output channels per block
  static constexpr int kBK = 8;    // reduction (c, r, s) steps per tile
  static constexpr int kTM = 8, kTN = 8;
  static constexpr int kThreads = (kBM / kTM) * (kBN / kTN);  // 128
  // ptxas (sm_90, CUDA 13) gives the kernel ~168 registers: 3 blocks (12 warps) per SM. The
  // launcher splits the reduction until the grid has about that many blocks per SM.
  static constexpr int kBlocksPerSm = 3;
  static constexpr int kMinTilesPerSplit = 32;  // a split-K slice keeps >= 256 reduction steps
};
using CC = ConvConfig;
static_assert(CC::kThreads == 128);
static_assert(CC::kThreads % CC::kBM == 0 && CC::kBM * CC::kBK % CC::kThreads == 0,
              "each thread gathers a fixed pixel for kBM * kBK / kThreads reduction steps");
static_assert(CC::kTM == 8 && CC::kTN == 8 && CC::kBM % 8 == 0 && CC::kBN % 8 == 0,
              "two 4-wide halves per thread in each dimension (16-byte shared loads)");
static_assert(CC::kBK * CC::kBN % CC::kThreads == 0);

struct ConvArgs {
  int n, c, h, w, k, r, s, stride, pad, p, q;
};

// Launch: grid (ceil(N P Q / 128), ceil(K / 64), splits), 128 threads; y zeroed first when
// splits > 1. Thread (tm = t % 16, tn = t / 16) owns pixels m0 + {0, 64} + 4 tm + i and channels
// n0 + {0, 32} + 4 tn + j (i, j < 4): its shared reads are 16-byte loads, and 16 consecutive
// threads store 64 consecutive output pixels (four per thread, one 16-byte store when aligned).
__global__ void __launch_bounds__(CC::kThreads)
    conv2d_implicit_gemm_kernel(ConvArgs a, const float* __restrict__ x,
                                const float* __restrict__ w, float* __restrict__ y) {
  const int t = threadIdx.x;
  const int pixels = a.n * a.p * a.q;
  const int crs = a.c * a.r * a.s, rs = a.r * a.s;
  const int m0 = blockIdx.x * CC::kBM, n0 = blockIdx.y * CC::kBN;
  const int tm = t % (CC::kBM / CC::kTM), tn = t / (CC::kBM / CC::kTM);
  // BEGIN EXERCISE 6.4
  // TODO(6.4): conv2d_implicit_gemm_kernel, a convolution as an implicit GEMM.
  //   Contract: y (N, K, P, Q) = the convolution of ch06/ch06.hpp (NCHW fp32, cross-correlation,
  //     zero padding, any stride and pad that check_conv_shape accepts) for this block's 128 output
  //     pixels (m = (n, p, q) from m0) x 64 output channels (from n0), summed over reduction slice
  //     blockIdx.z of gridDim.z (split-K: when gridDim.z > 1 the launcher has zeroed y and every
  //     slice adds its partial sums into it). Launch (fixed): 128 threads, grid (ceil(N P Q / 128),
  //     ceil(K / 64), slices); thread (tm, tn) computed above. Partial tiles:
  //     nothing written outside y, inputs outside x read as 0.
  //   Constraints: no im2col buffer in global memory (the GEMM's A operand is gathered from x on
  //     the fly, in the tiles you stage); shared-memory tiles and register blocking as in 6.1-6.2;
  //     FP32 FMA math (no tensor cores); no library call.
  //   Goal: BM_conv/implicit_gemm/3x3_64to64_56 >= 0.45x the speed of BM_conv_cudnn/3x3_64to64_56
  //     (cuDNN, FMA math); `scripts/lab check 6.4`.
  // STARTER: (void)a; (void)x; (void)w; (void)y; (void)pixels; (void)crs; (void)rs; (void)m0; (void)n0; (void)tm; (void)tn;
  constexpr int kPadB = 4;  // Bs row padding: conflict-free transposing stores, 16-byte rows
  __shared__ __align__(16) float As[2][CC::kBK][CC::kBM];          // (BK, BM) gathered x, 2 buffers
  __shared__ __align__(16) float Bs[2][CC::kBK][CC::kBN + kPadB];  // (BK, BN) filters, 2 buffers
  // This block's slice of the reduction (split-K over gridDim.z), in whole tiles.
  const int tiles = (crs + CC::kBK - 1) / CC::kBK;
  const int per_slice = (tiles + static_cast<int>(gridDim.z) - 1) / static_cast<int>(gridDim.z);
  const int k_begin = static_cast<int>(blockIdx.z) * per_slice * CC::kBK;
  const int k_end = min(crs, k_begin + per_slice * CC::kBK);

  // Gather (A tile): this thread's pixel gm is fixed; its reduction rows are kk = k_begin + t / BM
  // + kRowStep i. x offset = pix + c H W + r W + s with pix = the pixel's part (n C H W + h0 W +
  // w0), valid when 0 <= h0 + r < H and 0 <= w0 + s < W: decode the pixel once, then walk (c, r,
  // s).
  constexpr int kRowStep = CC::kThreads / CC::kBM;           // 1: a thread gathers whole columns
  constexpr int kLoadsA = CC::kBM * CC::kBK / CC::kThreads;  // 8 x values per thread per tile
  constexpr int kLoadsB = CC::kBK * CC::kBN / CC::kThreads;  // 4 filter values
  const int hw = a.h * a.w;
  const int gm = m0 + t % CC::kBM;
  const bool pixel_in = gm < pixels;
  int h0 = -(1 << 28), w0 = 0, pix = 0;  // a pixel past the end fails every bounds test: reads 0
  if (pixel_in) {
    const int pq = a.p * a.q, gn = gm / pq, gp = (gm % pq) / a.q, gq = gm % a.q;
    h0 = gp * a.stride - a.pad;
    w0 = gq * a.stride - a.pad;
    pix = gn * a.c * hw + h0 * a.w + w0;
  }
  int kk = k_begin + t / CC::kBM;  // the next reduction row this thread gathers, and its (c, r, s)
  int r_cur = (kk % rs) / a.s, s_cur = kk % a.s;
  int c_off = (kk / rs) * hw, r_off = r_cur * a.w;
  float a_ld[kLoadsA], b_ld[kLoadsB];  // the next tile, in flight in registers
  auto load_tiles = [&](int k0) {
#pragma unroll
    for (int l = 0; l < kLoadsA; ++l) {
      const bool ok = pixel_in && kk < k_end &&
                      static_cast<unsigned>(h0 + r_cur) < static_cast<unsigned>(a.h) &&
                      static_cast<unsigned>(w0 + s_cur) < static_cast<unsigned>(a.w);
      a_ld[l] = ok ? x[pix + c_off + r_off + s_cur] : 0.0f;  // padding and the C R S tail read 0
#pragma unroll
      for (int u = 0; u < kRowStep; ++u) {  // kk += 1: carry s -> r -> c, no division
        ++kk;
        if (++s_cur == a.s) {
          s_cur = 0;
          r_off += a.w;
          if (++r_cur == a.r) {
            r_cur = 0;
            r_off = 0;
            c_off += hw;
          }
        }
      }
    }
#pragma unroll
    for (int l = 0; l < kLoadsB; ++l) {  // w[ch][kk]: 8 consecutive threads read 32 B of a filter
      const int e = t + l * CC::kThreads, kl = e % CC::kBK, ch = n0 + e / CC::kBK;
      b_ld[l] =
          (ch < a.k && k0 + kl < k_end) ? w[static_cast<std::size_t>(ch) * crs + k0 + kl] : 0.0f;
    }
  };
  auto store_tiles = [&](int buf) {
#pragma unroll
    for (int l = 0; l < kLoadsA; ++l) As[buf][t / CC::kBM + l * kRowStep][t % CC::kBM] = a_ld[l];
#pragma unroll
    for (int l = 0; l < kLoadsB; ++l) {
      const int e = t + l * CC::kThreads;
      Bs[buf][e % CC::kBK][e / CC::kBK] = b_ld[l];
    }
  };
  float acc[CC::kTM][CC::kTN] = {};
  if (k_begin < k_end) {
    load_tiles(k_begin);
    store_tiles(0);
    __syncthreads();  // first tile complete
    int buf = 0;
    for (int k0 = k_begin; k0 < k_end; k0 += CC::kBK) {
      const bool more = k0 + CC::kBK < k_end;
      if (more) load_tiles(k0 + CC::kBK);  // global loads in flight during the FMAs below
#pragma unroll
      for (int k = 0; k < CC::kBK; ++k) {
        float av[CC::kTM], bv[CC::kTN];
        *reinterpret_cast<float4*>(&av[0]) = *reinterpret_cast<const float4*>(&As[buf][k][tm * 4]);
        *reinterpret_cast<float4*>(&av[4]) =
            *reinterpret_cast<const float4*>(&As[buf][k][CC::kBM / 2 + tm * 4]);
        *reinterpret_cast<float4*>(&bv[0]) = *reinterpret_cast<const float4*>(&Bs[buf][k][tn * 4]);
        *reinterpret_cast<float4*>(&bv[4]) =
            *reinterpret_cast<const float4*>(&Bs[buf][k][CC::kBN / 2 + tn * 4]);
#pragma unroll
        for (int i = 0; i < CC::kTM; ++i)
#pragma unroll
          for (int j = 0; j < CC::kTN; ++j) acc[i][j] += av[i] * bv[j];  // 64 FMAs, 4 shared loads
      }
      // The other buffer: every thread finished reading it before the barrier that ended the
      // previous iteration, so it can be refilled without a second barrier.
      if (more) store_tiles(buf ^ 1);
      __syncthreads();  // the next tile is complete, and this one is no longer read
      buf ^= 1;
    }
  }
  // Store y[n][k][p][q] = y[n K PQ + k PQ + pq]. Four consecutive pixels m (m % 4 == 0) lie in one
  // image when PQ % 4 == 0: one 16-byte store per channel. Split-K: atomicAdd into the zeroed y.
  const int pq = a.p * a.q;
  const bool split = gridDim.z > 1;
  const bool vec_y = !split && pq % 4 == 0 && reinterpret_cast<std::uintptr_t>(y) % 16 == 0;
#pragma unroll
  for (int half = 0; half < 2; ++half) {
    const int mb = m0 + half * (CC::kBM / 2) + tm * 4;
    if (mb >= pixels) continue;
    if (vec_y && mb + 3 < pixels) {
      const std::size_t base = static_cast<std::size_t>(mb / pq) * a.k * pq + mb % pq;
#pragma unroll
      for (int j = 0; j < CC::kTN; ++j) {
        const int ch = n0 + (j / 4) * (CC::kBN / 2) + tn * 4 + j % 4;
        if (ch < a.k)
          *reinterpret_cast<float4*>(y + base + static_cast<std::size_t>(ch) * pq) =
              make_float4(acc[half * 4 + 0][j], acc[half * 4 + 1][j], acc[half * 4 + 2][j],
                          acc[half * 4 + 3][j]);
      }
      continue;
    }
#pragma unroll
    for (int i = 0; i < 4; ++i) {
      const int m = mb + i;
      if (m >= pixels) break;
      const std::size_t base = static_cast<std::size_t>(m / pq) * a.k * pq + m % pq;
#pragma unroll
      for (int j = 0; j < CC::kTN; ++j) {
        const int ch = n0 + (j / 4) * (CC::kBN / 2) + tn * 4 + j % 4;
        if (ch >= a.k) continue;
        float* dst = y + base + static_cast<std::size_t>(ch) * pq;
        if (split)
          atomicAdd(dst, acc[half * 4 + i][j]);
        else
          *dst = acc[half * 4 + i][j];
      }
    }
  }
  // END EXERCISE
}

}  // namespace

void conv2d_implicit_gemm(const ConvShape& shape, const float* x, const float* w, float* y,
                          cudaStream_t stream) {
  check_conv_shape(shape);
  const ConvArgs a{shape.n, shape.c,      shape.h,   shape.w,   shape.k,  shape.r,
                   shape.s, shape.stride, shape.pad, shape.p(), shape.q()};
  require_device_pointer(x, static_cast<std::size_t>(a.n) * a.c * a.h * a.w, "x");
  require_device_pointer(w, static_cast<std::size_t>(a.k) * a.c * a.r * a.s, "w");
  require_device_pointer(y, static_cast<std::size_t>(a.n) * a.k * a.p * a.q, "y");
  dim3 grid(ceil_div(a.n * a.p * a.q, CC::kBM), ceil_div(a.k, CC::kBN));
  require(grid.y <= 65535, "shape.k", "too many output channels for grid.y (65535 * 64)");
  // Split-K when the grid cannot fill the GPU: deep layers have few pixels and a long reduction
  // (ResNet-50 3x3 512->512 at 7 x 7, batch 32: 13 x 8 = 104 blocks for 132 SMs, C R S = 4608).
  int device = 0, sms = 0;
  CUDALAB_CHECK(cudaGetDevice(&device));
  CUDALAB_CHECK(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, device));
  const long long blocks = static_cast<long long>(grid.x) * grid.y;
  const int tiles = ceil_div(a.c * a.r * a.s, CC::kBK);
  const long long want = static_cast<long long>(CC::kBlocksPerSm) * sms;
  const int splits =
      blocks >= want ? 1
                     : static_cast<int>(std::max<long long>(
                           1, std::min<long long>(want / blocks, tiles / CC::kMinTilesPerSplit)));
  grid.z = static_cast<unsigned>(splits);
  if (splits > 1)  // the slices add their partial sums into y
    CUDALAB_CHECK(cudaMemsetAsync(
        y, 0, sizeof(float) * static_cast<std::size_t>(a.n) * a.k * a.p * a.q, stream));
  conv2d_implicit_gemm_kernel<<<grid, CC::kThreads, 0, stream>>>(a, x, w, y);
  CUDALAB_CHECK_LAUNCH();
}

}  // namespace cudalab::ch06
