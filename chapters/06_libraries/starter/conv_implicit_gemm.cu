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
  (void)a; (void)x; (void)w; (void)y; (void)pixels; (void)crs; (void)rs; (void)m0; (void)n0; (void)tm; (void)tn;
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
