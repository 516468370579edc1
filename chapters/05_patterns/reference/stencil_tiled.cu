// Exercise 5.5: the tiled 2D convolution. A block loads its input tile plus the r-pixel halo into
// shared memory once, then reads all (2r + 1)^2 taps of its outputs from there. Cost model,
// naive kernel and dispatch: stencil.cu. conv2d_tiled_kernel runs every shape for which
// conv2d_strip_applies() is false (in the starter: all of them); the stretch is a second kernel
// of your design for r = 3, conv2d_strip_kernel, on a larger tile (StripConfig), with the shapes
// it takes (conv2d_strip_applies). The reference's design of both: its solution notes
// (`scripts/lab hint 5.5 solution`).
#include <cstddef>
#include <cstdint>

#include "ch05/stencil.hpp"
#include "cudalab/check.hpp"
#include "cudalab/cp_async.cuh"
#include "cudalab/device.hpp"
#include "cudalab/launch.hpp"
#include "cudalab/math.hpp"
#include "stencil_internal.hpp"

namespace cudalab::ch05::detail {
namespace {

// Tiled: a block computes a kTileY x kTileX (32 x 128) output tile from a shared copy of its input
// tile plus the halo. Launch: (32, 8) threads, grid (ceil(width / 128), ceil(height / 32)). R ==
// radius: one instantiation per radius (launch_conv2d_tiled switches), so the taps unroll.
// kConvTiledBlocksPerSm: the register cap that keeps 4 blocks (1024 threads) resident per SM.
template <int R>
__global__ void __launch_bounds__(ConvConfig::kThreads, kConvTiledBlocksPerSm)
    conv2d_tiled_kernel(const float* __restrict__ in, float* __restrict__ out, int width,
                        int height, const float* __restrict__ filter, int radius) {
  // BEGIN EXERCISE 5.5
  // TODO(5.5): conv2d_tiled_kernel, the tiled 2D convolution.
  //   Contract: the same outputs as conv2d_naive_kernel (stencil.cu), within the test's float
  //     tolerance: for every pixel (x, y) of this block's kTileY x kTileX output tile that lies
  //     inside the image, out(y, x) is the filter-weighted sum of the (2r + 1)^2 neighbourhood of
  //     (x, y) (filter row-major, centred), with pixels outside the image reading as 0. Any width
  //     and height (1 x 1, one row, not multiples of the tile), 0 <= radius <= kConvMaxRadius.
  //     Launch (fixed): ConvConfig::kThreads = 32 x 8 threads per block, one block per output tile.
  //   Constraints: every input pixel the block needs is read from global memory once per block,
  //     into shared memory (at most the ConvConfig::kInY x kInX floats it is sized for); the taps
  //     are read from shared memory; coalesced global loads; race-free.
  //   Goal: BM_stencil/tiled/r3 >= 3.0x faster than BM_stencil/naive/r3, and the
  //     r = 1 pair no slower; `scripts/lab check 5.5`.
  // STARTER: (void)in; (void)out; (void)width; (void)height; (void)filter; (void)radius;
  // The input tile (its first kTileY + 2R rows at this radius): row `row` is image row y0 + row,
  // column `col` image column x0 + col, with kHaloX = 4 halo columns each side whatever R (>= R,
  // and every tile row starts 16-byte aligned).
  __shared__ __align__(16) float tile[ConvConfig::kInY][ConvConfig::kInX];
  (void)radius;  // == R
  constexpr int k = 2 * R + 1;
  // The k x k taps in registers, loaded once: with every loop below unrolled, each FMA names its
  // tap at compile time (no filter load per tap, no loop counters, no k * dy index arithmetic).
  float f[k * k];
#pragma unroll
  for (int i = 0; i < k * k; ++i) f[i] = filter[i];
  const int tid = threadIdx.y * ConvConfig::kThreadsX + threadIdx.x;
  constexpr int in_w = ConvConfig::kInX, in_h = ConvConfig::kTileY + 2 * R;
  constexpr int quads = in_w / 4;  // float4s per tile row
  // Image coordinates of tile[0][0]; negative on the first row/column of tiles (signed on purpose).
  const int x0 = static_cast<int>(blockIdx.x) * ConvConfig::kTileX - ConvConfig::kHaloX;
  const int y0 = static_cast<int>(blockIdx.y) * ConvConfig::kTileY - R;
  // float4 loads and stores when every image row starts 16-byte aligned: width % 4 == 0 and both
  // pointers aligned (a view one float in is not); else one float at a time. The same for the
  // whole grid, so no divergence.
  const bool vec =
      width % 4 == 0 &&
      (reinterpret_cast<std::uintptr_t>(in) | reinterpret_cast<std::uintptr_t>(out)) % 16 == 0;
  // Whether tile pixel (row, col) is loaded from the image; outside it, the tile holds 0 (zero
  // padding). One test for both load paths: a float4 has col % 4 == 0 and, with width % 4 == 0,
  // lies wholly inside or wholly outside the image.
  const auto inside = [&](int row, int col) {
    const int gx = x0 + col, gy = y0 + row;
    // BEGIN PITFALL stencil_missing_halo EXERCISES 5.5
    // The tile is loaded without its halo. Each thread loads only the pixels of its own output tile
    // into shared memory and the border around it is left at 0, as if every tile edge were the
    // image edge. Outputs in the interior of a tile are right; every output within r pixels of a
    // tile edge (but not of the image edge) misses the neighbour tile's pixels. With a 128 x 32
    // tile and r = 2, about one pixel in seven is wrong, and nothing crashes. The halo is the whole
    // difficulty of tiling a stencil: the input tile is larger than the output tile.
    // Caught by: Conv2dGpu.MatchesOracle (every shape larger than one tile, radius >= 1). The fix:
    // load the whole (kTileY + 2r) x (kTileX + 2r) input tile.
    return gx >= 0 && gx < width && gy >= 0 && gy < height;
    // BUG: const bool halo = row < R || row >= R + ConvConfig::kTileY || col < ConvConfig::kHaloX ||
    // BUG:                   col >= ConvConfig::kHaloX + ConvConfig::kTileX;
    // BUG: return !halo && gx >= 0 && gx < width && gy >= 0 && gy < height;
    // END PITFALL
  };
  if (vec) {
#pragma unroll 4
    for (int e = tid; e < in_h * quads; e += ConvConfig::kThreads) {
      const int row = e / quads, col = 4 * (e % quads);  // consecutive e: consecutive float4s
      float4 v = make_float4(0.0f, 0.0f, 0.0f, 0.0f);
      if (inside(row, col))
        v = *reinterpret_cast<const float4*>(in + static_cast<std::size_t>(y0 + row) * width +
                                             (x0 + col));
      *reinterpret_cast<float4*>(&tile[row][col]) = v;
    }
  } else {
#pragma unroll 4
    for (int e = tid; e < in_h * in_w; e += ConvConfig::kThreads) {
      const int row = e / in_w, col = e % in_w;  // consecutive e: consecutive columns of one row
      tile[row][col] =
          inside(row, col) ? in[static_cast<std::size_t>(y0 + row) * width + (x0 + col)] : 0.0f;
    }
  }
  __syncthreads();  // the tile (halo included) is complete before anyone reads a neighbour's pixel

  // This thread: kColsPerThread = 4 adjacent output columns from lx0 and kRowsPerThread = 4
  // CONSECUTIVE output rows from ly0. Its window of a tile row, tile columns lx0 .. lx0 + 11, is 3
  // 16-byte shared loads (a warp: 512 consecutive bytes, no conflict) and covers every tap of its 4
  // columns (output column lx0 + c, tap dx: tile column lx0 + c + kHaloX - R + dx). Input row
  // ly0 + i feeds output rows ly0 + i - dy for every dy in 0..2R, so each window is loaded once
  // and used for up to k x 4 outputs from registers: (4 + 2R) x 3 shared loads for 16 k^2 FMAs.
  constexpr int kWin = ConvConfig::kColsPerThread + 2 * ConvConfig::kHaloX;  // 12 floats
  static_assert(kWin % 4 == 0 && ConvConfig::kHaloX >= R, "the window covers every tap");
  const int lx0 = ConvConfig::kColsPerThread * threadIdx.x;
  const int ly0 = ConvConfig::kRowsPerThread * threadIdx.y;
  float acc[ConvConfig::kRowsPerThread][ConvConfig::kColsPerThread];
#pragma unroll
  for (int j = 0; j < ConvConfig::kRowsPerThread; ++j)
#pragma unroll
    for (int c = 0; c < ConvConfig::kColsPerThread; ++c) acc[j][c] = 0.0f;
#pragma unroll
  for (int i = 0; i < ConvConfig::kRowsPerThread + 2 * R; ++i) {
    float w[kWin];
#pragma unroll
    for (int q = 0; q < kWin / 4; ++q) {
      const float4 t = *reinterpret_cast<const float4*>(&tile[ly0 + i][lx0 + 4 * q]);
      w[4 * q] = t.x, w[4 * q + 1] = t.y, w[4 * q + 2] = t.z, w[4 * q + 3] = t.w;
    }
#pragma unroll
    for (int dy = 0; dy < k; ++dy) {
      const int j = i - dy;  // a compile-time constant once unrolled: the test costs nothing
      if (j < 0 || j >= ConvConfig::kRowsPerThread) continue;
#pragma unroll
      for (int dx = 0; dx < k; ++dx)
#pragma unroll
        for (int c = 0; c < ConvConfig::kColsPerThread; ++c)  // per output: dy, then dx (naive's)
          acc[j][c] += f[dy * k + dx] * w[c + ConvConfig::kHaloX - R + dx];
    }
  }
  const int x = static_cast<int>(blockIdx.x) * ConvConfig::kTileX + lx0;
#pragma unroll
  for (int j = 0; j < ConvConfig::kRowsPerThread; ++j) {
    const int y = static_cast<int>(blockIdx.y) * ConvConfig::kTileY + ly0 + j;
    if (y >= height) break;  // edge tiles: outputs past the image are not stored
    const std::size_t o = static_cast<std::size_t>(y) * width + x;
    if (vec) {
      if (x < width)  // width % 4 == 0: all 4 columns are inside
        *reinterpret_cast<float4*>(out + o) =
            make_float4(acc[j][0], acc[j][1], acc[j][2], acc[j][3]);
    } else {
#pragma unroll
      for (int c = 0; c < ConvConfig::kColsPerThread; ++c)
        if (x + c < width) out[o + c] = acc[j][c];
    }
  }
  // END EXERCISE
}

// The strip kernel (exercise 5.5's stretch; the reference's kernel at r = 3 on the shapes
// conv2d_strip_applies gives it): a block of kThreads threads computes a kTileY x kTileX output
// tile with kSmemBytes of dynamic shared memory; __launch_bounds__ asks for kBlocksPerSm blocks
// per SM (at most 128 registers a thread), which the shared memory allows on sm_90 (228 KB an SM;
// sm_80's 164 KB and sm_86 / sm_89's 100 KB hold one). The tile's sizes are the reference's choice
// (its solution notes say why); its shared memory holds kSmemRows input rows of the tile's width
// plus kHaloX columns each side, far fewer than the kTileY + 2r rows the tile needs.
struct StripConfig {
  static constexpr int kRadius = 3;  // the one radius it is built for: the speed goal's
  static constexpr int kThreads = 256;
  static constexpr int kTileX = 1024;  // 4 output columns a thread
  static constexpr int kTileY = 253;
  static constexpr int kHaloX = ConvConfig::kHaloX;  // 4: rows stay 16-byte aligned
  static constexpr int kInX = kTileX + 2 * kHaloX;   // 1032 floats
  static constexpr int kSmemRows = 21;               // input rows of kInX floats
  static constexpr int kSmemBytes = kSmemRows * kInX * static_cast<int>(sizeof(float));  // 84.7 KB
  static constexpr int kBlocksPerSm = 2;
};
// More than the 48 KB a kernel gets without asking (the launcher opts in), within the 99 KB a block
// may opt in to on every cc >= 8.0 GPU (sm_86 and sm_89 allow the least).
static_assert(StripConfig::kSmemBytes > 48 * 1024 && StripConfig::kSmemBytes <= 99 * 1024);
static_assert(StripConfig::kTileX == 4 * StripConfig::kThreads && StripConfig::kHaloX % 4 == 0 &&
              StripConfig::kHaloX >= StripConfig::kRadius);

// Launch: StripConfig::kThreads threads, grid (ceil(width / kTileX), ceil(height / kTileY)),
// kSmemBytes of dynamic shared memory. R == StripConfig::kRadius.
template <int R>
__global__ void __launch_bounds__(StripConfig::kThreads, StripConfig::kBlocksPerSm)
    conv2d_strip_kernel(const float* __restrict__ in, float* __restrict__ out, int width,
                        int height, const float* __restrict__ filter) {
  extern __shared__ __align__(16) float smem[];
  // BEGIN EXERCISE 5.5
  // TODO(5.5): (stretch) conv2d_strip_kernel, a second kernel of your design for the r = 3 shapes
  //   conv2d_strip_applies() gives it (the starter's gives it none).
  //   Contract: conv2d_tiled_kernel's outputs, for this block's StripConfig::kTileY x kTileX output
  //     tile (rows from blockIdx.y * kTileY, columns from blockIdx.x * kTileX; partial tiles at the
  //     right and bottom edges, zero padding), on every shape conv2d_strip_applies() accepts.
  //     Launch (fixed): StripConfig::kThreads threads, one block per output tile, `smem` of
  //     StripConfig::kSmemBytes; at most 128 registers a thread (kBlocksPerSm blocks per SM).
  //   Constraints: conv2d_tiled_kernel's (every input pixel the block needs read from global
  //     memory once per block into shared memory, coalesced, race-free), within kSmemBytes.
  //   Target (not graded): BM_stencil/tiled/r3 nearer the copy ceiling (BM_unroll_memcpy) than
  //     conv2d_tiled_kernel alone reaches.
  // STARTER: (void)in; (void)out; (void)width; (void)height; (void)filter; (void)smem;
  constexpr int K = 2 * R + 1;
  // The reference's design (solutions/5.5.md): the block walks DOWN its tile one input row at a
  // time. Thread t owns output columns x .. x + 3 (x = x0 + 4t); input row i (image row y0 - R + i)
  // feeds outputs i - 2R .. i (tap row dy = i - output), so each input row is read once from
  // global memory, once from shared memory (3 16-byte loads a thread) and feeds 4 K^2 FMAs from
  // registers. The K outputs in progress live in acc[K][4], output o in slot o mod K; output
  // i - 2R is complete after row i: it is stored, and its slot starts output i + 1.
  // Rows arrive through a ring of kGroups groups of G rows (G: the multiple of K >= 6, 7 at r = 3)
  // by 16-byte cp.async, one commit group per group: one barrier per G rows, group g + 2 in flight
  // while group g is computed. The loops over a group's rows are unrolled and G % K == 0, so every
  // ring row and accumulator slot is a compile-time constant.
  constexpr int G = K * ((6 + 2 * R) / K), kGroups = 3, kRow = StripConfig::kInX;
  constexpr int kHalo = StripConfig::kHaloX;
  static_assert(
      R == StripConfig::kRadius && G % K == 0 && G >= 6 && kGroups * G <= StripConfig::kSmemRows,
      "whole accumulator cycles per group; the ring fits kSmemBytes");
  // The K x K taps in registers, loaded once (as conv2d_tiled_kernel).
  float f[K * K];
#pragma unroll
  for (int i = 0; i < K * K; ++i) f[i] = filter[i];
  const int t = static_cast<int>(threadIdx.x);
  const int x0 = static_cast<int>(blockIdx.x) * StripConfig::kTileX;
  const int y0 = static_cast<int>(blockIdx.y) * StripConfig::kTileY;
  const int rows_out = min(StripConfig::kTileY, height - y0);  // >= 1
  const int rows_in = rows_out + 2 * R;                        // input rows the tile needs
  // Image rows y0 - R .. gy_end - 1 are copied; rows above the image or from gy_end on (below the
  // image, or past the tile's bottom halo) are zeros. One unsigned test covers both ends.
  const unsigned gy_end = static_cast<unsigned>(min(height, y0 + rows_out + R));
  const int x = x0 + 4 * t;
  const bool cols_ok = x < width;  // width % 4 == 0 (conv2d_strip_applies): all 4 or none
  // The halo float4s: thread 0 loads the kHalo columns left of the tile, the last thread those
  // right of it (halo = -1 / +1: the same offset, in floats, from its own float4 in the image and
  // in the ring row).
  const int halo = t == 0 ? -1 : (t == StripConfig::kThreads - 1 ? 1 : 0);
  const int hx = x + kHalo * halo;
  const bool halo_ok = halo != 0 && hx >= 0 && hx < width;
  const std::uint32_t dst = shared_address(smem + kHalo + 4 * t);  // ring row 0, this float4
  // The next row to copy: image row gy, element index e at column x. e is an index, not a
  // pointer: above the image it is negative, and a pointer is formed only for a row in the image.
  int gy = y0 - R;
  long long e = static_cast<long long>(gy) * width + x;
  const auto copy_group = [&](int slot) {  // the next G rows -> ring group `slot`
#pragma unroll
    for (int u = 0; u < G; ++u) {
      const bool row_ok = static_cast<unsigned>(gy) < gy_end;
      const std::uint32_t row = dst + 4u * static_cast<std::uint32_t>((slot * G + u) * kRow);
      const bool ok = row_ok && cols_ok;
      cp_async_16(row, ok ? in + e : in, ok);  // out of range: 16 zero bytes
      if (halo != 0) {
        const bool hok = row_ok && halo_ok;
        cp_async_16(row + 4 * kHalo * halo, hok ? in + (e + kHalo * halo) : in, hok);
      }
      ++gy;
      e += width;
    }
    cp_async_commit();
  };
  copy_group(0);
  copy_group(1);
  float acc[K][4] = {};
  long long eo = static_cast<long long>(y0 - 2 * R) * width + x;  // output row i - 2R, column x
  int slot = 0;                                                   // ring group of group g: g % 3
  for (int base = 0; base < rows_in; base += G) {
    cp_async_wait<1>();  // this thread's copies of group g have landed (g + 1 may be in flight)
    __syncthreads();     // ... everyone's; and everyone is done with group g - 1's ring slot
    copy_group(slot == 0 ? kGroups - 1 : slot - 1);  // group g + 2 -> slot (g + 2) % 3
    const float* ring = smem + slot * G * kRow + 4 * t;
#pragma unroll
    for (int u = 0; u < G; ++u) {
      // Ring columns 4t .. 4t + 11 of input row base + u: image columns x - kHalo .. x + 7.
      const float4* rp = reinterpret_cast<const float4*>(ring + u * kRow);
      const float4 a = rp[0], b = rp[1], c2 = rp[2];
      const float w[12] = {a.x, a.y, a.z, a.w, b.x, b.y, b.z, b.w, c2.x, c2.y, c2.z, c2.w};
#pragma unroll
      for (int dy = 0; dy < K; ++dy) {
        const int s = ((u - dy) % K + K) % K;  // slot of output base + u - dy (base % K == 0)
#pragma unroll
        for (int dx = 0; dx < K; ++dx)
#pragma unroll
          for (int c = 0; c < 4; ++c) {  // per output: dy, then dx (the naive kernel's order)
            const float v = w[c + kHalo - R + dx];
            acc[s][c] = dy == 0 && dx == 0 ? f[0] * v : fmaf(f[dy * K + dx], v, acc[s][c]);
          }
      }
      const int o = base + u - 2 * R;  // complete now
      const int so = (u + 1) % K;      // its slot: (u - 2R) mod K
      if (cols_ok && static_cast<unsigned>(o) < static_cast<unsigned>(rows_out))
        __stcs(reinterpret_cast<float4*>(out + eo),  // evict-first: no output is read again
               make_float4(acc[so][0], acc[so][1], acc[so][2], acc[so][3]));
      eo += width;
    }
    slot = slot == kGroups - 1 ? 0 : slot + 1;
  }
  cp_async_wait<0>();  // no copy (the zeros past the end) outlives the block's shared memory
  // END EXERCISE
}

// Whether conv2d_strip_kernel runs this r = 3 call.
bool conv2d_strip_applies(const float* in, const float* out, int width, int height) {
  // BEGIN EXERCISE 5.5
  // TODO(5.5): (stretch) true for the shapes your conv2d_strip_kernel should run at r = 3 (it must
  //   be right on every shape it is given); the starter's: none.
  // STARTER: (void)in; (void)out; (void)width; (void)height;
  // STARTER: return false;
  const long long blocks = static_cast<long long>(ceil_div(width, StripConfig::kTileX)) *
                           ceil_div(height, StripConfig::kTileY);
  // The reference's: the 16-byte path only (width % 4 == 0 and both pointers 16-byte aligned,
  // conv2d_tiled_kernel's float4 rule; its scalar path runs the rest), and only where the grid
  // gives every SM a block: a 1024 x 253 tile walks its rows one after the other, so on a small
  // image a few blocks would leave most SMs idle where conv2d_tiled_kernel's 128 x 32 tiles
  // spread out (this threshold is a reasoned one, not a measured crossover).
  return width % 4 == 0 && is_aligned(in, 16) && is_aligned(out, 16) &&
         blocks >= current_sm_count();
  // END EXERCISE
}

void launch_conv2d_strip(const float* in, float* out, int width, int height, const float* filter,
                         cudaStream_t stream) {
  constexpr auto kernel = conv2d_strip_kernel<StripConfig::kRadius>;
  // More than the 48 KB default of dynamic shared memory: opt in (once per kernel and device).
  set_kernel_attribute_once(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize,
                            StripConfig::kSmemBytes);
  const dim3 grid(ceil_div(width, StripConfig::kTileX), ceil_div(height, StripConfig::kTileY));
  kernel<<<grid, StripConfig::kThreads, StripConfig::kSmemBytes, stream>>>(in, out, width, height,
                                                                           filter);
  CUDALAB_CHECK_LAUNCH();
}

}  // namespace

void launch_conv2d_tiled(dim3 grid, const float* in, float* out, int width, int height,
                         const float* filter, int radius, cudaStream_t stream) {
  if (radius == StripConfig::kRadius && conv2d_strip_applies(in, out, width, height)) {
    launch_conv2d_strip(in, out, width, height, filter, stream);  // its own grid
    return;
  }
  const dim3 block(ConvConfig::kThreadsX, ConvConfig::kThreadsY);  // (32, 8), as the naive kernel
  switch (radius) {  // conv2d checked 0 <= radius <= kConvMaxRadius
    case 0:
      conv2d_tiled_kernel<0><<<grid, block, 0, stream>>>(in, out, width, height, filter, radius);
      break;
    case 1:
      conv2d_tiled_kernel<1><<<grid, block, 0, stream>>>(in, out, width, height, filter, radius);
      break;
    case 2:
      conv2d_tiled_kernel<2><<<grid, block, 0, stream>>>(in, out, width, height, filter, radius);
      break;
    case 3:
      conv2d_tiled_kernel<3><<<grid, block, 0, stream>>>(in, out, width, height, filter, radius);
      break;
    default:
      conv2d_tiled_kernel<4><<<grid, block, 0, stream>>>(in, out, width, height, filter, radius);
      break;
  }
  static_assert(kConvMaxRadius == 4, "one case per radius");
  CUDALAB_CHECK_LAUNCH();
}

}  // namespace cudalab::ch05::detail
