// Exercise 6.5 — tensor cores through WMMA: C (fp32) = alpha A B + beta C, A and B fp16 or bf16.
//
// A warp-wide mma_sync multiplies 16x16x16 fragments: 8192 FLOPs in one instruction family
// (HMMA), against 64 for a warp-wide FP32 FMA. Tiling as in the SGEMM ladder, one level up:
//
//   block tile (BM, BN, BK) = (128, 128, 32), 256 threads = 8 warps as 2 (M) x 4 (N)
//   warp tile (64, 32) = 4 x 2 accumulator fragments of 16 x 16 (fp32, in registers)
//   shared tiles padded by 8 elements per row (16 bytes): load_matrix_sync's rows then start in
//   different banks; rows stay 16-byte aligned for the vector copies and fragments 32-byte aligned.
//   Double-buffered like the warp-tiled SGEMM: the next tile is fetched into registers during
//   the MMAs, one __syncthreads per K step.
// Edges: 8-element (16-byte) copies where the whole chunk is inside and rows are aligned
// (K % 8 == 0 for A, N % 8 == 0 for B), guarded element copies with zero-fill elsewhere; the
// epilogue goes through a per-warp staging tile in shared memory and stores only inside C.
// Ceiling: cuBLAS GemmEx uses Hopper's wgmma (asynchronous, operands from shared memory) and
// gets most of the dense fp16/bf16 peak (~990 TFLOP/s, NVIDIA's H200 datasheet; its measured
// rate: the BM_tc_gemm_cublas rows); mma.sync-class instructions cannot reach that on Hopper,
// so this kernel's honest target is a fraction of cuBLAS (see the README).
#include <mma.h>

#include <cstdint>

#include "ch06/tensor_core.hpp"
#include "cudalab/check.hpp"
#include "cudalab/math.hpp"

namespace cudalab::ch06 {
namespace {

namespace wmma = nvcuda::wmma;

struct WmmaConfig {
  static constexpr int kBM = 128, kBN = 128, kBK = 32;
  static constexpr int kWarpsM = 2, kWarpsN = 4;
  static constexpr int kWarpM = kBM / kWarpsM, kWarpN = kBN / kWarpsN;  // 64 x 32
  static constexpr int kFrag = 16;
  static constexpr int kFragsM = kWarpM / kFrag, kFragsN = kWarpN / kFrag;  // 4 x 2
  static constexpr int kThreads = kWarpsM * kWarpsN * 32;                   // 256
  static constexpr int kPad = 8;                                            // elements (16 bytes)
  static constexpr int kLdA = kBK + kPad, kLdB = kBN + kPad;                // 40, 136
  static constexpr int kLdStage = kFrag + 4;                                // fp32 staging rows
  static constexpr int kChunk = 8;                                // 16-bit elements per 16 bytes
  static constexpr int kChunksA = kBM * kBK / kChunk / kThreads;  // 2 per thread
  static constexpr int kChunksB = kBK * kBN / kChunk / kThreads;  // 2 per thread
};
using WM = WmmaConfig;
static_assert(WM::kBK % WM::kFrag == 0 &&
              WM::kChunksA * WM::kChunk * WM::kThreads == WM::kBM * WM::kBK);
static_assert(WM::kChunksB * WM::kChunk * WM::kThreads == WM::kBK * WM::kBN);
static_assert(WM::kLdA % 8 == 0 && WM::kLdB % 8 == 0, "wmma: ldm a multiple of 16 bytes");
static_assert(WM::kLdStage % 4 == 0, "wmma: fp32 ldm a multiple of 4");

// 8 consecutive 16-bit elements row[col .. col + 7] of a row with `limit` valid columns, as raw
// bits (zero bits are +0.0 in fp16 and bf16). One 16-byte load when the chunk is whole and aligned.
__device__ __forceinline__ uint4 load8(const unsigned short* row, int col, int limit, bool vec_ok) {
  if (vec_ok && col + WM::kChunk - 1 < limit) return *reinterpret_cast<const uint4*>(row + col);
  // Guarded element loads, packed two per 32-bit word (little-endian: element 2i in the low half).
  auto get = [&](int i) -> unsigned { return col + i < limit ? row[col + i] : 0u; };
  return make_uint4(get(0) | get(1) << 16, get(2) | get(3) << 16, get(4) | get(5) << 16,
                    get(6) | get(7) << 16);
}

// Launch: grid (ceil(N / 128), ceil(M / 128)), 256 threads, 47 KB of static shared memory, 2 blocks
// per SM (<= 128 registers a thread; 1 block per SM would leave 8 warps to hide latency).
template <class T>
__global__ void __launch_bounds__(WM::kThreads, 2)
    wmma_gemm_kernel(int M, int N, int K, float alpha, const T* __restrict__ A,
                     const T* __restrict__ B, float beta, float* __restrict__ C, bool vec_a,
                     bool vec_b) {
  __shared__ __align__(128) T As[2][WM::kBM][WM::kLdA];  // (2 buffers, BM, BK + pad)
  __shared__ __align__(128) T Bs[2][WM::kBK][WM::kLdB];  // (2 buffers, BK, BN + pad)
  __shared__ __align__(
      128) float stage[WM::kThreads / 32][WM::kFrag][WM::kLdStage];  // per-warp epilogue
  const int bm = blockIdx.y * WM::kBM, bn = blockIdx.x * WM::kBN;
  const int t = threadIdx.x, warp = t / 32, lane = t % 32;
  const int warp_m = warp / WM::kWarpsN, warp_n = warp % WM::kWarpsN;
  const auto* a_bits = reinterpret_cast<const unsigned short*>(A);
  const auto* b_bits = reinterpret_cast<const unsigned short*>(B);

  uint4 a_reg[WM::kChunksA], b_reg[WM::kChunksB];
  auto fetch = [&](int k0) {  // global -> registers
#pragma unroll
    for (int l = 0; l < WM::kChunksA; ++l) {
      const int c = t + l * WM::kThreads, r = c / (WM::kBK / WM::kChunk),
                col = (c % (WM::kBK / WM::kChunk)) * WM::kChunk;
      const bool in = bm + r < M;
      a_reg[l] = load8(a_bits + static_cast<std::size_t>(in ? bm + r : 0) * K, k0 + col, in ? K : 0,
                       vec_a);
    }
#pragma unroll
    for (int l = 0; l < WM::kChunksB; ++l) {
      const int c = t + l * WM::kThreads, r = c / (WM::kBN / WM::kChunk),
                col = (c % (WM::kBN / WM::kChunk)) * WM::kChunk;
      const bool in = k0 + r < K;
      b_reg[l] = load8(b_bits + static_cast<std::size_t>(in ? k0 + r : 0) * N + bn, col,
                       in ? N - bn : 0, vec_b);
    }
  };
  auto stash = [&](int buf) {  // registers -> shared
#pragma unroll
    for (int l = 0; l < WM::kChunksA; ++l) {
      const int c = t + l * WM::kThreads, r = c / (WM::kBK / WM::kChunk),
                col = (c % (WM::kBK / WM::kChunk)) * WM::kChunk;
      *reinterpret_cast<uint4*>(&As[buf][r][col]) = a_reg[l];
    }
#pragma unroll
    for (int l = 0; l < WM::kChunksB; ++l) {
      const int c = t + l * WM::kThreads, r = c / (WM::kBN / WM::kChunk),
                col = (c % (WM::kBN / WM::kChunk)) * WM::kChunk;
      *reinterpret_cast<uint4*>(&Bs[buf][r][col]) = b_reg[l];
    }
  };

  wmma::fragment<wmma::accumulator, WM::kFrag, WM::kFrag, WM::kFrag, float> acc[WM::kFragsM]
                                                                               [WM::kFragsN];
#pragma unroll
  for (int i = 0; i < WM::kFragsM; ++i)
#pragma unroll
    for (int j = 0; j < WM::kFragsN; ++j) wmma::fill_fragment(acc[i][j], 0.0f);

  const int tiles = ceil_div(K, WM::kBK);
  if (tiles > 0) {
    fetch(0);
    stash(0);
  }
  __syncthreads();  // buffer 0 complete
  for (int tile = 0; tile < tiles; ++tile) {
    const int cur = tile & 1;
    const bool has_next = tile + 1 < tiles;
    if (has_next) fetch((tile + 1) * WM::kBK);  // in flight during the MMAs below
                                                // BEGIN EXERCISE 6.5
      // TODO(6.5): the tensor-core inner loop of wmma_gemm_kernel.
      //   Contract: on entry As[cur] (128 x 32) and Bs[cur] (32 x 128) hold this block's current K
      //     tile (zero-filled past A and B) and every thread is past the barrier that completed
      //     them; on exit acc[i][j], this warp's 4 x 2 fp32 accumulator fragments of 16 x 16 (its
      //     64 x 32 warp tile at rows warp_m * 64, columns warp_n * 32 of the block tile), have
      //     accumulated this tile's products. Do not touch the other buffer (it is being filled).
      //   Constraints: the WMMA API only (nvcuda::wmma fragments of 16 x 16 x 16), T = half or
      //     bfloat16 inputs with fp32 accumulation; the shared tiles are padded (ldm kLdA, kLdB).
      //   Goal: BM_tc_gemm/wmma_fp16/8192 >= 0.26x BM_tc_gemm_cublas/fp16/8192;
      //     `scripts/lab check 6.5`.
#pragma unroll
    for (int kk = 0; kk < WM::kBK; kk += WM::kFrag) {
      wmma::fragment<wmma::matrix_a, WM::kFrag, WM::kFrag, WM::kFrag, T, wmma::row_major>
          a_frag[WM::kFragsM];
      wmma::fragment<wmma::matrix_b, WM::kFrag, WM::kFrag, WM::kFrag, T, wmma::row_major>
          b_frag[WM::kFragsN];
#pragma unroll
      for (int i = 0; i < WM::kFragsM; ++i)
        wmma::load_matrix_sync(a_frag[i], &As[cur][warp_m * WM::kWarpM + i * WM::kFrag][kk],
                               WM::kLdA);
#pragma unroll
      for (int j = 0; j < WM::kFragsN; ++j)
        wmma::load_matrix_sync(b_frag[j], &Bs[cur][kk][warp_n * WM::kWarpN + j * WM::kFrag],
                               WM::kLdB);
#pragma unroll
      for (int i = 0; i < WM::kFragsM; ++i)
#pragma unroll
        for (int j = 0; j < WM::kFragsN; ++j)
          wmma::mma_sync(acc[i][j], a_frag[i], b_frag[j], acc[i][j]);
    }
    // END EXERCISE
    if (has_next) stash(cur ^ 1);  // cur ^ 1 was last read before the previous barrier
    __syncthreads();               // next buffer complete; nobody reads `cur` any more
  }

  // BEGIN EXERCISE 6.5
  // TODO(6.5): the epilogue. C = alpha acc + beta C for the warp's 64 x 32 tile (4 x 2 fragments),
  //   only inside M x N (partial tiles at the edges), C not read when beta == 0 (it may hold NaN).
  //   Constraints: a fragment's element-to-lane mapping is unspecified, so go through the warp's
  //     own staging tile stage[warp] (fp32, ldm kLdStage); coalesced
  //     stores to C; warp-level synchronization only (no __syncthreads here).
  // STARTER: (void)stage; (void)lane; (void)warp_m; (void)warp_n; (void)alpha; (void)beta; (void)C;
  float* st = &stage[warp][0][0];
#pragma unroll
  for (int i = 0; i < WM::kFragsM; ++i) {
#pragma unroll
    for (int j = 0; j < WM::kFragsN; ++j) {
      wmma::store_matrix_sync(st, acc[i][j], WM::kLdStage, wmma::mem_row_major);
      __syncwarp();  // the staging tile is complete before lanes read other lanes' values
      const int row0 = bm + warp_m * WM::kWarpM + i * WM::kFrag,
                col0 = bn + warp_n * WM::kWarpN + j * WM::kFrag;
      for (int e = lane; e < WM::kFrag * WM::kFrag; e += 32) {
        const int r = e / WM::kFrag, c = e % WM::kFrag;
        if (row0 + r < M && col0 + c < N) {
          float* out = C + static_cast<std::size_t>(row0 + r) * N + col0 + c;
          const float v = alpha * st[r * WM::kLdStage + c];
          *out = beta != 0.0f ? v + beta * *out : v;
        }
      }
      __syncwarp();  // all lanes are done reading before the next fragment overwrites the tile
    }
  }
  // END EXERCISE
}

template <class T>
void launch_wmma(int M, int N, int K, float alpha, const T* A, const T* B, float beta, float* C,
                 cudaStream_t stream) {
  require(M >= 0 && M <= 65535 * WM::kBM, "M", "must be in [0, 65535 * 128] (grid.y limit)");
  require(N >= 0, "N", "must be >= 0");
  require(K >= 0, "K", "must be >= 0");
  if (M == 0 || N == 0) return;
  require_device_pointer(A, static_cast<std::size_t>(M) * K, "A");
  require_device_pointer(B, static_cast<std::size_t>(K) * N, "B");
  require_device_pointer(C, static_cast<std::size_t>(M) * N, "C");
  const dim3 grid(ceil_div(N, WM::kBN), ceil_div(M, WM::kBM));
  wmma_gemm_kernel<T><<<grid, WM::kThreads, 0, stream>>>(M, N, K, alpha, A, B, beta, C,
                                                         K % WM::kChunk == 0 && is_aligned(A, 16),
                                                         N % WM::kChunk == 0 && is_aligned(B, 16));
  CUDALAB_CHECK_LAUNCH();
}

}  // namespace

void wmma_gemm(int M, int N, int K, float alpha, const __half* A, const __half* B, float beta,
               float* C, cudaStream_t stream) {
  launch_wmma(M, N, K, alpha, A, B, beta, C, stream);
}

void wmma_gemm(int M, int N, int K, float alpha, const __nv_bfloat16* A, const __nv_bfloat16* B,
               float beta, float* C, cudaStream_t stream) {
  launch_wmma(M, N, K, alpha, A, B, beta, C, stream);
}

}  // namespace cudalab::ch06
