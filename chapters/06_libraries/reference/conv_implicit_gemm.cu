// Exercise 6.4 — convolution as an implicit GEMM (Chetlur et al., "cuDNN", 2014).
//
// A convolution is a GEMM in disguise: rows m = (n, p, q) are output pixels (N P Q of them),
// columns are output channels k (K), and the reduction index kk = (c, r, s) runs over C R S:
//
//   Y[m][k] = sum_kk X_col[m][kk] * W[kk][k],   X_col[m][kk] = x[n][c][p*stride - pad + r][q*stride - pad + s]
//
// im2col would write X_col to memory (R S times the input); the implicit GEMM computes each
// X_col element on the fly while loading the A tile, so the GEMM tiling of exercises 6.1/6.2
// applies unchanged. Tile: 64 pixels x 64 channels x 16 reduction steps, 256 threads, each
// thread 4 pixels x 4 channels. FLOPs: 2 N K P Q C R S (ResNet-50 3x3 64->64 at 56, batch 32:
// 7.4 GFLOP). NCHW, fp32, any shape that check_conv_shape accepts.
#include "ch06/conv.hpp"
#include "cudalab/check.hpp"
#include "cudalab/math.hpp"

namespace cudalab::ch06 {
namespace {

struct ConvConfig {
  static constexpr int kBM = 64;   // output pixels per block
  static constexpr int kBN = 64;   // output channels per block
  static constexpr int kBK = 16;   // reduction (c, r, s) steps per tile
  static constexpr int kTM = 4, kTN = 4;
  static constexpr int kThreads = (kBM / kTM) * (kBN / kTN);  // 256
};
using CC = ConvConfig;
static_assert(CC::kThreads == 256);
static_assert(CC::kThreads % CC::kBM == 0 && CC::kBM * CC::kBK % CC::kThreads == 0,
              "each thread gathers a fixed pixel for kBM * kBK / kThreads reduction steps");
static_assert(CC::kBK * CC::kBN % CC::kThreads == 0);

struct ConvArgs {
  int n, c, h, w, k, r, s, stride, pad, p, q;
};

// Launch: grid (ceil(N P Q / 64), ceil(K / 64)), 256 threads. Thread (tm = t % 16, tn = t / 16)
// owns pixels m0 + tm + 16 i and channels n0 + 4 tn + j (i, j < 4): 16 consecutive threads write
// 16 consecutive output pixels (coalesced along q).
__global__ void __launch_bounds__(CC::kThreads)
conv2d_implicit_gemm_kernel(ConvArgs a, const float* __restrict__ x, const float* __restrict__ w,
                            float* __restrict__ y) {
  const int t = threadIdx.x;
  const int pixels = a.n * a.p * a.q;
  const int crs = a.c * a.r * a.s, rs = a.r * a.s;
  const int m0 = blockIdx.x * CC::kBM, n0 = blockIdx.y * CC::kBN;
  const int tm = t % (CC::kBM / CC::kTM), tn = t / (CC::kBM / CC::kTM);
  // BEGIN EXERCISE 6.4
  // TODO(6.4): conv2d_implicit_gemm_kernel, a convolution as an implicit GEMM.
  //   Contract: y (N, K, P, Q) = the convolution of ch06/ch06.hpp (NCHW fp32, cross-correlation,
  //     zero padding, any stride and pad that check_conv_shape accepts) for this block's 64 output
  //     pixels (m = (n, p, q) from m0) x 64 output channels (from n0). Launch (fixed): 256 threads,
  //     grid (ceil(N P Q / 64), ceil(K / 64)); thread (tm, tn) computed above. Partial tiles:
  //     nothing written outside y, inputs outside x read as 0.
  //   Constraints: no im2col buffer in global memory (the GEMM's A operand is gathered from x on
  //     the fly, in the tiles you stage); shared-memory tiles and register blocking as in 6.1-6.2;
  //     FP32 FMA math (no tensor cores); no library call.
  //   Goal: BM_conv/implicit_gemm/3x3_64to64_56 >= 0.45x the speed of BM_conv_cudnn/3x3_64to64_56
  //     (cuDNN, FMA math; reference 0.57x); `scripts/lab check 6.4`.
  // STARTER: (void)a; (void)x; (void)w; (void)y; (void)pixels; (void)crs; (void)rs; (void)m0; (void)n0; (void)tm; (void)tn;
  __shared__ float As[CC::kBK][CC::kBM];      // (BK, BM): gathered input, pixel-contiguous
  __shared__ float Bs[CC::kBK][CC::kBN + 1];  // (BK, BN): filters; +1 breaks the 16-way store conflict
  // The pixel this thread gathers, decoded once (its kk rows change per tile, its pixel never).
  const int gm = m0 + t % CC::kBM;
  const bool pixel_in = gm < pixels;
  const int gq = pixel_in ? gm % a.q : 0, gp = pixel_in ? (gm / a.q) % a.p : 0;
  const int gn = pixel_in ? gm / (a.p * a.q) : 0;
  const int h0 = gp * a.stride - a.pad, w0 = gq * a.stride - a.pad;
  const float* x_n = x + static_cast<std::size_t>(gn) * a.c * a.h * a.w;
  float acc[CC::kTM][CC::kTN] = {};
  for (int k0 = 0; k0 < crs; k0 += CC::kBK) {
#pragma unroll
    for (int l = 0; l < CC::kBM * CC::kBK / CC::kThreads; ++l) {
      const int kk_local = t / CC::kBM + l * (CC::kThreads / CC::kBM);
      const int kk = k0 + kk_local;
      float v = 0.0f;
      if (pixel_in && kk < crs) {
        const int c = kk / rs, r = (kk % rs) / a.s, s = kk % a.s;
        const int hi = h0 + r, wi = w0 + s;
        if (hi >= 0 && hi < a.h && wi >= 0 && wi < a.w) v = x_n[(c * a.h + hi) * a.w + wi];  // padding: 0
      }
      As[kk_local][t % CC::kBM] = v;  // consecutive threads, consecutive pixels: coalesced along q
    }
#pragma unroll
    for (int l = 0; l < CC::kBK * CC::kBN / CC::kThreads; ++l) {
      const int e = t + l * CC::kThreads;
      const int kk_local = e % CC::kBK, ch = n0 + e / CC::kBK;
      // w[ch][kk]: consecutive threads read consecutive kk of one filter (coalesced)
      Bs[kk_local][e / CC::kBK] = (ch < a.k && k0 + kk_local < crs) ? w[static_cast<std::size_t>(ch) * crs + k0 + kk_local] : 0.0f;
    }
    __syncthreads();  // tiles complete
#pragma unroll
    for (int k = 0; k < CC::kBK; ++k) {
      float av[CC::kTM], bv[CC::kTN];
#pragma unroll
      for (int i = 0; i < CC::kTM; ++i) av[i] = As[k][tm + i * (CC::kBM / CC::kTM)];
#pragma unroll
      for (int j = 0; j < CC::kTN; ++j) bv[j] = Bs[k][tn * CC::kTN + j];
#pragma unroll
      for (int i = 0; i < CC::kTM; ++i)
#pragma unroll
        for (int j = 0; j < CC::kTN; ++j) acc[i][j] += av[i] * bv[j];
    }
    __syncthreads();  // reads done before the next gather overwrites the tiles
  }
#pragma unroll
  for (int i = 0; i < CC::kTM; ++i) {
    const int m = m0 + tm + i * (CC::kBM / CC::kTM);
    if (m >= pixels) continue;
    const int q = m % a.q, p = (m / a.q) % a.p, n = m / (a.p * a.q);
#pragma unroll
    for (int j = 0; j < CC::kTN; ++j) {
      const int k = n0 + tn * CC::kTN + j;
      if (k < a.k) y[((static_cast<std::size_t>(n) * a.k + k) * a.p + p) * a.q + q] = acc[i][j];
    }
  }
  // END EXERCISE
}

}  // namespace

void conv2d_implicit_gemm(const ConvShape& shape, const float* x, const float* w, float* y,
                          cudaStream_t stream) {
  check_conv_shape(shape);
  const ConvArgs a{shape.n, shape.c, shape.h, shape.w, shape.k, shape.r, shape.s,
                   shape.stride, shape.pad, shape.p(), shape.q()};
  require_device_pointer(x, static_cast<std::size_t>(a.n) * a.c * a.h * a.w, "x");
  require_device_pointer(w, static_cast<std::size_t>(a.k) * a.c * a.r * a.s, "w");
  require_device_pointer(y, static_cast<std::size_t>(a.n) * a.k * a.p * a.q, "y");
  const dim3 grid(ceil_div(a.n * a.p * a.q, CC::kBM), ceil_div(a.k, CC::kBN));
  require(grid.y <= 65535, "shape.k", "too many output channels for grid.y (65535 * 64)");
  conv2d_implicit_gemm_kernel<<<grid, CC::kThreads, 0, stream>>>(a, x, w, y);
  CUDALAB_CHECK_LAUNCH();
}

}  // namespace cudalab::ch06
