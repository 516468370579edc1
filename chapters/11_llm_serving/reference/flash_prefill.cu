// Prefill on tensor cores (worked example) — prefill_attention's causal attention, FlashAttention-2
// style: the same inputs, layout and result, the two matrix products on mma.sync instead of fp32
// CUDA cores.
//
// q, out: [batch][len][q_heads][head_dim]; k, v: [batch][len][kv_heads][head_dim], fp16 or bf16,
// fp32 accumulation; query head h reads KV head h / (q_heads / kv_heads); token i attends to
// tokens 0..i of its own sequence. Any len (the tiles are masked at the end of the sequence).
//
// The work of one block: 64 query rows (kBr) of one head, 4 warps of 16 rows each (kMTiles = 1;
// kMTiles = 2 gives FlashAttention-2's 128-row block, see "Shared-memory traffic" below; the
// launcher takes it at head_dim 64 on grids of several waves: plan_flash_rows_per_warp). The block
// walks the key/value tiles of 64 tokens (kBc) from token 0 up to its diagonal; causal tiles above
// the diagonal are never loaded. Per key tile, each warp:
//   1. S = Q K^T (16 x 64 scores a warp): Q's A fragments were loaded from shared memory once and
//      stay in registers; K's B fragments come from shared memory by ldmatrix. K is stored as it
//      is in memory, [key][dim], which is exactly the "col" layout mma.sync wants for B = K^T
//      (the reduction dimension, dim, contiguous): no transpose.
//   2. masks S (-inf) on the diagonal tile (key > query) and past the end of the sequence — only
//      the tiles that need it take that path.
//   3. online softmax in registers: a lane holds 2 rows (g and g + 8 of its m16 tile); the row max
//      is reduced across the 4 lanes of a quad (two shuffles), the running max m grows, the output
//      accumulator and the running sum l are rescaled by 2^(m_old - m_new). Scores are scaled by
//      scale * log2(e) inside one FMA, so exp is a single ex2 instruction. l is kept per lane (a
//      partial sum over the lane's own columns) and reduced across the quad once, at the end.
//   4. P = 2^(S - m), rounded to 16 bits in registers, is the A operand of O += P V with no trip
//      through shared memory: the m16n8k16 accumulator layout (lane holds row g / g + 8, columns
//      2t, 2t + 1 of each n8 tile) is the A-fragment layout of a 16 x 16 tile made of two
//      neighbouring n8 tiles. V's B fragments come by ldmatrix.trans (V is [key][dim]: the
//      reduction dimension, key, is the strided one).
// At the end, O / l is rounded to 16 bits, staged in the block's Q tile (swizzled) and written out
// in 16-byte stores.
//
// Memory pipeline: K and V tiles are copied by cp.async (16 bytes a thread, zero-filled past the
// end of the sequence, so padded keys are 0, never garbage) into two shared stages: while the warps
// multiply tile j, tile j + 1 is in flight. One __syncthreads per tile, which both publishes tile
// j and frees tile j - 1's stage for tile j + 1.
//
// Shared layout: rows of head_dim 16-bit elements (128 or 256 bytes) without padding, the 16-byte
// chunk c of row r stored at chunk c ^ (r % 8). An ldmatrix phase reads the same logical chunk of
// 8 consecutive rows, which this XOR spreads over the 8 bank groups (no conflicts); a cp.async row
// of consecutive chunks stays conflict-free too. Because the XOR only touches the chunk bits, a
// lane's ldmatrix address for k-step s is its base offset XOR (2 s) << 4: one instruction.
//
// Shared-memory traffic, the limit of this design: every warp reads the whole K and V tile
// (ldmatrix), 32 KB per 64 keys at head_dim 128, for 16 query rows of work. On an SM that is one
// ldmatrix.x4 (512 bytes, 4 cycles of the 128 B/cycle shared memory) per two mma.sync (4096 FLOPs
// each), which caps the kernel near half the tensor cores' dense peak. Rows per warp are the lever:
// kMTiles = 2 (32 rows a warp, 128 a block) reuses each K and V fragment for two m16 tiles, at the
// price of twice the accumulator registers (Q is then re-read from shared memory per k-step at
// head_dim 128, to stay under 255 registers).
//
// Block order: grid.x is the query head (heads that share a KV head run side by side and share its
// K and V in L2), grid.y the query tile in reverse, so the longest causal rows start first and the
// short ones fill the tail of the last wave.
#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include <cmath>
#include <cstddef>
#include <cstdint>
#include <type_traits>

#include "ch11/ch11.hpp"
#include "ch11/prefill_plan.hpp"
#include "cudalab/check.hpp"
#include "cudalab/cp_async.cuh"
#include "cudalab/device.hpp"
#include "cudalab/launch.hpp"
#include "cudalab/math.hpp"
#include "cudalab/mma_sync.cuh"
#include "vec8.cuh"

namespace cudalab::ch11 {

namespace {

template <int D, int kMTiles>
struct FlashConfig {
  static constexpr int kWarps = 4, kThreads = kWarps * 32;
  static constexpr int kWarpRows = 16 * kMTiles;             // query rows a warp owns
  static constexpr int kBr = kWarps * kWarpRows;             // query rows a block owns: 64 or 128
  static constexpr int kBc = 64;                             // keys a tile
  static constexpr int kRowBytes = D * 2;                    // one 16-bit row in shared memory
  static constexpr int kChunksRow = D / 8;                   // 16-byte chunks a row
  static constexpr int kQBytes = kBr * kRowBytes;            // the Q tile (then the output tile)
  static constexpr int kKvBytes = kBc * kRowBytes;           // one K or one V stage
  static constexpr int kSmemBytes = kQBytes + 4 * kKvBytes;  // Q, 2 K stages, 2 V stages
  static constexpr int kDSteps = D / 16;                     // k16 steps of S = Q K^T
  static constexpr int kKeySteps = kBc / 16;                 // k16 steps of O += P V
  static constexpr int kSTiles = kBc / 8;                    // n8 tiles of S (a row of 64 keys)
  static constexpr int kOTiles = D / 8;                      // n8 tiles of O (a row of head_dim)
  // Q's A fragments in registers for the whole kernel when they are few (4 a k-step and m-tile).
  static constexpr bool kQInRegs = kMTiles * D <= 128;
  static_assert(D % 16 == 0 && kRowBytes % 128 == 0, "the swizzle wants rows of 128-byte lines");
};

// ---- PTX wrappers: ldmatrix_x4(_trans) and mma_16816 (cudalab/mma_sync.cuh, chapter 6's mma.sync
// GEMM explains their fragment layouts), the cp.async ones (cudalab/cp_async.cuh), exp2_ftz (the
// chapter's one-instruction 2^x, vec8.cuh), and: ------------------------------------------------
using detail::exp2_ftz;
// Two floats rounded to a 16-bit pair, lo in the low half (the lower column / element index).
template <class T>
__device__ __forceinline__ uint32_t pack2(float lo, float hi) {
  if constexpr (std::is_same_v<T, __half>) {
    const __half2 h = __floats2half2_rn(lo, hi);
    return *reinterpret_cast<const uint32_t*>(&h);
  } else {
    const __nv_bfloat162 h = __floats2bfloat162_rn(lo, hi);
    return *reinterpret_cast<const uint32_t*>(&h);
  }
}

// Byte offset of chunk `chunk` of row `row` in a tile of D-element rows (the XOR swizzle above).
template <int D>
__device__ __forceinline__ uint32_t swizzle(int row, int chunk) {
  return static_cast<uint32_t>(row * FlashConfig<D, 1>::kRowBytes + ((chunk ^ (row & 7)) << 4));
}

// kRows rows of D elements, global rows row0 .. row0 + kRows - 1 (`stride` elements apart from
// `base`), into the swizzled tile at shared address dst; rows at or past len are zero-filled.
template <int kRows, int D, int kThreads, class T>
__device__ __forceinline__ void load_rows(uint32_t dst, const T* base, std::size_t stride, int row0,
                                          int len) {
  constexpr int kChunksRow = D / 8, kCopies = kRows * kChunksRow / kThreads;
  static_assert(kCopies * kThreads == kRows * kChunksRow);
#pragma unroll
  for (int i = 0; i < kCopies; ++i) {
    const int c = static_cast<int>(threadIdx.x) + i * kThreads;
    const int r = c / kChunksRow, ch = c % kChunksRow;
    const bool in = row0 + r < len;
    const T* src = in ? base + static_cast<std::size_t>(row0 + r) * stride + ch * 8 : base;
    cp_async_16(dst + swizzle<D>(r, ch), src, in);
  }
}

// q_sign: 0, or 0x80008000 to negate Q's 16-bit pairs when the caller's scale is negative
// (scale_log2 is then |scale| log2 e): the row max below is taken on unscaled scores and assumes
// a non-negative scale. Exact (a sign flip), and free (applied where Q's fragments are loaded).
template <class T, int D, int kMTiles>
__global__ void __launch_bounds__(FlashConfig<D, kMTiles>::kThreads, kFlashBlocksPerSm)
    flash_prefill_kernel(const T* __restrict__ q, const T* __restrict__ k, const T* __restrict__ v,
                         T* __restrict__ out, int len, int q_heads, int kv_heads, float scale_log2,
                         uint32_t q_sign) {
  using C = FlashConfig<D, kMTiles>;
  extern __shared__ __align__(128) unsigned char smem[];
  const uint32_t s_q = shared_address(smem);
  const uint32_t s_k = s_q + C::kQBytes, s_v = s_k + 2 * C::kKvBytes;  // + stage * kKvBytes

  const int h = static_cast<int>(blockIdx.x), b = static_cast<int>(blockIdx.z);
  const int q0 = (static_cast<int>(gridDim.y - 1 - blockIdx.y)) * C::kBr;  // longest rows first
  const int kh = h / (q_heads / kv_heads);
  const std::size_t q_stride = static_cast<std::size_t>(q_heads) * D,
                    kv_stride = static_cast<std::size_t>(kv_heads) * D;
  // Sequence b's first token, in tokens: past 2^31 elements once b len q_heads D is (64-bit).
  const std::size_t seq0 = static_cast<std::size_t>(b) * static_cast<std::size_t>(len);
  const T* qb = q + seq0 * q_stride + static_cast<std::size_t>(h) * D;
  const T* kb = k + seq0 * kv_stride + static_cast<std::size_t>(kh) * D;
  const T* vb = v + seq0 * kv_stride + static_cast<std::size_t>(kh) * D;

  const int warp = static_cast<int>(threadIdx.x) / 32, lane = static_cast<int>(threadIdx.x) % 32;
  const int g = lane / 4, t4 = lane % 4;   // accumulator layout: rows g, g + 8; columns 2 t4, + 1
  const int w_row0 = warp * C::kWarpRows;  // the warp's first row inside the block's tile
  const int n_tiles = ceil_div(min(q0 + C::kBr, len), C::kBc);  // key tiles up to the diagonal

  // Prologue: Q and key tile 0 in one commit group.
  load_rows<C::kBr, D, C::kThreads>(s_q, qb, q_stride, q0, len);
  load_rows<C::kBc, D, C::kThreads>(s_k, kb, kv_stride, 0, len);
  load_rows<C::kBc, D, C::kThreads>(s_v, vb, kv_stride, 0, len);
  cp_async_commit();

  // Per-lane ldmatrix offsets (bytes inside a tile); see the swizzle note at the top: row % 8 is
  // lane % 8 in all three, and the k-step s (or the dim pair) is XOR-ed in as (2 s) << 4.
  //   Q (A, x4): matrices (rows 0-7, k 0-7), (rows 8-15, k 0-7), (rows 0-7, k 8-15), (rows 8-15,
  //     k 8-15) = a0..a3: row lane % 16, chunk lane / 16.
  //   K (B of S, x4): (keys 0-7, d 0-7), (keys 0-7, d 8-15), (keys 8-15, d 0-7), (keys 8-15,
  //     d 8-15) = b0, b1 of key tile n8 0, then of n8 1: key lane % 8 + 8 (lane / 16), chunk
  //     (lane / 8) % 2.
  //   V (B of O, x4.trans): (keys 0-7, d 0-7), (keys 8-15, d 0-7), (keys 0-7, d 8-15), (keys 8-15,
  //     d 8-15) = b0, b1 of dim tile n8 0, then of n8 1: key lane % 16, chunk lane / 16.
  const uint32_t q_off = static_cast<uint32_t>((w_row0 + (lane & 15)) * C::kRowBytes +
                                               (((lane >> 4) ^ (lane & 7)) << 4));
  const uint32_t k_off = static_cast<uint32_t>(((lane & 7) + ((lane >> 4) << 3)) * C::kRowBytes +
                                               ((((lane >> 3) & 1) ^ (lane & 7)) << 4));
  const uint32_t v_off =
      static_cast<uint32_t>((lane & 15) * C::kRowBytes + (((lane >> 4) ^ (lane & 7)) << 4));
  constexpr uint32_t kTile16 = 16 * C::kRowBytes;  // 16 rows further on (swizzle unchanged)

  auto load_q = [&](uint32_t(&a)[4], int i, int s) {
    ldmatrix_x4(a, s_q + ((q_off + i * kTile16) ^ static_cast<uint32_t>(s << 5)));
#pragma unroll
    for (int e = 0; e < 4; ++e) a[e] ^= q_sign;
  };

  uint32_t qf[C::kQInRegs ? kMTiles : 1][C::kQInRegs ? C::kDSteps : 1][4];
  float o[kMTiles][C::kOTiles][4];
  float m[kMTiles][2], l[kMTiles][2];  // per row (g, g + 8): running max (scaled), partial sum
#pragma unroll
  for (int i = 0; i < kMTiles; ++i) {
#pragma unroll
    for (int n = 0; n < C::kOTiles; ++n)
#pragma unroll
      for (int e = 0; e < 4; ++e) o[i][n][e] = 0.0f;
#pragma unroll
    for (int r = 0; r < 2; ++r) {
      m[i][r] = -INFINITY;
      l[i][r] = 0.0f;
    }
  }

  // One key tile k0 for this warp's rows, from stage (sk, sv). kMasked: the diagonal tile and the
  // tile past the end of the sequence (a compile-time branch, so the common tiles carry no mask).
  auto tile_step = [&](auto masked, int k0, uint32_t sk, uint32_t sv) {
    constexpr bool kMasked = decltype(masked)::value;
    // 1. S = Q K^T.
    float s[kMTiles][C::kSTiles][4];
#pragma unroll
    for (int i = 0; i < kMTiles; ++i)
#pragma unroll
      for (int n = 0; n < C::kSTiles; ++n)
#pragma unroll
        for (int e = 0; e < 4; ++e) s[i][n][e] = 0.0f;
          // (Fully unrolled when Q is in registers: its fragments are indexed by ds. Otherwise two
          // k-steps at a time, which keeps the 128-row block at head_dim 128 from hoisting every K
          // fragment of the tile into registers and spilling.)
#pragma unroll(C::kQInRegs ? C::kDSteps : 2)
    for (int ds = 0; ds < C::kDSteps; ++ds) {
      uint32_t a[kMTiles][4];
#pragma unroll
      for (int i = 0; i < kMTiles; ++i) {
        if constexpr (C::kQInRegs) {
#pragma unroll
          for (int e = 0; e < 4; ++e) a[i][e] = qf[i][ds][e];
        } else {
          load_q(a[i], i, ds);
        }
      }
#pragma unroll
      for (int kp = 0; kp < C::kSTiles / 2; ++kp) {
        uint32_t bk[4];
        ldmatrix_x4(bk, sk + ((k_off + kp * kTile16) ^ static_cast<uint32_t>(ds << 5)));
#pragma unroll
        for (int i = 0; i < kMTiles; ++i) {
          mma_16816(s[i][2 * kp], a[i], bk[0], bk[1], T{});
          mma_16816(s[i][2 * kp + 1], a[i], bk[2], bk[3], T{});
        }
      }
    }
    // 2. Mask: key past the query (causal) or past the end of the sequence.
    if constexpr (kMasked) {
#pragma unroll
      for (int i = 0; i < kMTiles; ++i)
#pragma unroll
        for (int n = 0; n < C::kSTiles; ++n)
#pragma unroll
          for (int e = 0; e < 4; ++e) {
            const int row = q0 + w_row0 + i * 16 + g + (e / 2) * 8;
            const int key = k0 + n * 8 + 2 * t4 + (e % 2);
            if (key > row || key >= len) s[i][n][e] = -INFINITY;
          }
    }
    // 3. Online softmax, and 4. P (16-bit) as the A operand of O += P V.
    uint32_t p[kMTiles][C::kKeySteps][4];
#pragma unroll
    for (int i = 0; i < kMTiles; ++i) {
#pragma unroll
      for (int r = 0; r < 2; ++r) {  // row g (elements 0, 1) and row g + 8 (elements 2, 3)
        float mx = -INFINITY;
#pragma unroll
        for (int n = 0; n < C::kSTiles; ++n)
          mx = fmaxf(mx, fmaxf(s[i][n][2 * r], s[i][n][2 * r + 1]));
        mx = fmaxf(mx, __shfl_xor_sync(0xffffffffu, mx, 1));  // the quad shares the row
        mx = fmaxf(mx, __shfl_xor_sync(0xffffffffu, mx, 2));
        const float m_new = fmaxf(m[i][r], mx * scale_log2);
        // Every row sees at least one key of every tile it visits (key k0 <= its own index), so
        // m_new is finite; the guard keeps 2^(s - m) finite if that ever changes.
        const float m_use = m_new == -INFINITY ? 0.0f : m_new;
        const float alpha = exp2_ftz(m[i][r] - m_use);  // 0 on the first tile (m = -inf)
        m[i][r] = m_new;
        l[i][r] *= alpha;
#pragma unroll
        for (int n = 0; n < C::kOTiles; ++n) {
          o[i][n][2 * r] *= alpha;
          o[i][n][2 * r + 1] *= alpha;
        }
#pragma unroll
        for (int n = 0; n < C::kSTiles; ++n)
#pragma unroll
          for (int e = 2 * r; e < 2 * r + 2; ++e) {
            float pe = exp2_ftz(fmaf(s[i][n][e], scale_log2, -m_use));
            if constexpr (kMasked) pe = s[i][n][e] == -INFINITY ? 0.0f : pe;  // also scale 0
            s[i][n][e] = pe;
            l[i][r] += pe;
          }
      }
      // Two neighbouring n8 tiles of P are one 16 x 16 A fragment: (row g, keys 2t..) = n8 tile
      // 2 ks elements 0-1, (row g + 8) = its elements 2-3, then the same of n8 tile 2 ks + 1.
#pragma unroll
      for (int ks = 0; ks < C::kKeySteps; ++ks) {
        p[i][ks][0] = pack2<T>(s[i][2 * ks][0], s[i][2 * ks][1]);
        p[i][ks][1] = pack2<T>(s[i][2 * ks][2], s[i][2 * ks][3]);
        p[i][ks][2] = pack2<T>(s[i][2 * ks + 1][0], s[i][2 * ks + 1][1]);
        p[i][ks][3] = pack2<T>(s[i][2 * ks + 1][2], s[i][2 * ks + 1][3]);
      }
    }
    // 5. O += P V.
#pragma unroll
    for (int ks = 0; ks < C::kKeySteps; ++ks) {
#pragma unroll
      for (int dp = 0; dp < C::kOTiles / 2; ++dp) {
        uint32_t bv[4];
        ldmatrix_x4_trans(bv, sv + ((v_off + ks * kTile16) ^ static_cast<uint32_t>(dp << 5)));
#pragma unroll
        for (int i = 0; i < kMTiles; ++i) {
          mma_16816(o[i][2 * dp], p[i][ks], bv[0], bv[1], T{});
          mma_16816(o[i][2 * dp + 1], p[i][ks], bv[2], bv[3], T{});
        }
      }
    }
  };

  const int w_first = q0 + w_row0, w_last = w_first + C::kWarpRows - 1;  // the warp's rows
  for (int j = 0; j < n_tiles; ++j) {
    cp_async_wait<0>();  // this thread's copies of tile j (and Q, the first time) have landed
    __syncthreads();     // everyone's have, and every warp is done with tile j - 1's stage
    if (j + 1 < n_tiles) {
      const uint32_t next = static_cast<uint32_t>(((j + 1) & 1) * C::kKvBytes);
      load_rows<C::kBc, D, C::kThreads>(s_k + next, kb, kv_stride, (j + 1) * C::kBc, len);
      load_rows<C::kBc, D, C::kThreads>(s_v + next, vb, kv_stride, (j + 1) * C::kBc, len);
    }
    cp_async_commit();
    if constexpr (C::kQInRegs) {
      if (j == 0) {
#pragma unroll
        for (int i = 0; i < kMTiles; ++i)
#pragma unroll
          for (int ds = 0; ds < C::kDSteps; ++ds) load_q(qf[i][ds], i, ds);
      }
    }
    const int k0 = j * C::kBc;
    // A tile wholly above this warp's diagonal (the block's last tile for the first warps of a
    // 128-row block) has nothing for it; the warp still joins the loads and barriers.
    if (k0 > w_last) continue;
    const uint32_t stage = static_cast<uint32_t>((j & 1) * C::kKvBytes);
    if (k0 + C::kBc - 1 > w_first || k0 + C::kBc > len)
      tile_step(std::true_type{}, k0, s_k + stage, s_v + stage);
    else
      tile_step(std::false_type{}, k0, s_k + stage, s_v + stage);
  }
  cp_async_wait<0>();  // only an empty group is left; leave none behind

  // Epilogue: O / l rounded to T into this warp's own rows of the Q tile (no other warp reads
  // them, so a __syncwarp suffices), then 16-byte coalesced stores of the rows inside len.
  __syncwarp();
#pragma unroll
  for (int i = 0; i < kMTiles; ++i) {
#pragma unroll
    for (int r = 0; r < 2; ++r) {
      float sum = l[i][r];
      sum += __shfl_xor_sync(0xffffffffu, sum, 1);
      sum += __shfl_xor_sync(0xffffffffu, sum, 2);
      const float inv = sum > 0.0f ? 1.0f / sum : 0.0f;
      const int row = w_row0 + i * 16 + g + 8 * r;
#pragma unroll
      for (int n = 0; n < C::kOTiles; ++n) {
        const uint32_t at = swizzle<D>(row, n) + 4 * t4;
        *reinterpret_cast<uint32_t*>(smem + at) =
            pack2<T>(o[i][n][2 * r] * inv, o[i][n][2 * r + 1] * inv);
      }
    }
  }
  __syncwarp();
  T* ob = out + seq0 * q_stride + static_cast<std::size_t>(h) * D;
#pragma unroll
  for (int c = lane; c < C::kWarpRows * C::kChunksRow; c += 32) {
    const int r = w_row0 + c / C::kChunksRow, ch = c % C::kChunksRow;
    if (q0 + r < len)
      *reinterpret_cast<uint4*>(ob + static_cast<std::size_t>(q0 + r) * q_stride + ch * 8) =
          *reinterpret_cast<const uint4*>(smem + swizzle<D>(r, ch));
  }
}

template <class T, int D, int kMTiles>
void launch_flash(const void* q, const void* k, const void* v, void* out, const DecodeShape& s,
                  int len, cudaStream_t st) {
  using C = FlashConfig<D, kMTiles>;
  auto* kernel = flash_prefill_kernel<T, D, kMTiles>;
  // Past the 48 KB default at head_dim 128: opt in (once per kernel and device).
  set_kernel_attribute_once(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, C::kSmemBytes);
  const dim3 grid(static_cast<unsigned>(s.q_heads), static_cast<unsigned>(ceil_div(len, C::kBr)),
                  static_cast<unsigned>(s.batch));
  const float scale_log2 = std::fabs(s.scale) * 1.4426950408889634f;
  const uint32_t q_sign = std::signbit(s.scale) ? 0x80008000u : 0u;
  kernel<<<grid, C::kThreads, C::kSmemBytes, st>>>(
      static_cast<const T*>(q), static_cast<const T*>(k), static_cast<const T*>(v),
      static_cast<T*>(out), len, s.q_heads, s.kv_heads, scale_log2, q_sign);
  CUDALAB_CHECK_LAUNCH();
}

// The two warp shapes of one type and head_dim: 16 rows a warp (kMTiles 1, 64-row blocks) or 32
// (kMTiles 2, 128-row blocks), chosen per call by plan_flash_rows_per_warp (prefill_plan.hpp).
template <class T, int D>
void launch_flash_planned(const void* q, const void* k, const void* v, void* out,
                          const DecodeShape& s, int len, cudaStream_t st) {
  if (plan_flash_rows_per_warp(s.batch, s.q_heads, D, len, current_sm_count()) == 32)
    launch_flash<T, D, 2>(q, k, v, out, s, len, st);
  else
    launch_flash<T, D, 1>(q, k, v, out, s, len, st);
}

}  // namespace

void flash_prefill_attention(const void* q, const void* k, const void* v, void* out,
                             const DecodeShape& s, int len, DType dtype, cudaStream_t stream) {
  constexpr int kBr = FlashConfig<64, 1>::kBr;  // the smaller block: the larger grid.y
  require(len < 0 || ceil_div(static_cast<long long>(len), static_cast<long long>(kBr)) <= 65535,
          "len", "must fit 65535 query tiles (grid.y)");
  if (!check_prefill_args(q, k, v, out, s, len)) return;
  require(is_aligned(q, 16), "q", "must be 16-byte aligned (cp.async)");
  require(is_aligned(k, 16), "k", "must be 16-byte aligned (cp.async)");
  require(is_aligned(v, 16), "v", "must be 16-byte aligned (cp.async)");
  require(is_aligned(out, 16), "out", "must be 16-byte aligned (16-byte stores)");
  const bool f16 = dtype == DType::kF16;
  if (s.head_dim == 64) {
    if (f16)
      launch_flash_planned<__half, 64>(q, k, v, out, s, len, stream);
    else
      launch_flash_planned<__nv_bfloat16, 64>(q, k, v, out, s, len, stream);
  } else {
    if (f16)
      launch_flash<__half, 128, 1>(q, k, v, out, s, len, stream);
    else
      launch_flash<__nv_bfloat16, 128, 1>(q, k, v, out, s, len, stream);
  }
}

}  // namespace cudalab::ch11
