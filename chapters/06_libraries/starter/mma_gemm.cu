// Starter track — write your code at the TODO marks; the tests of each exercise
// fail until you do. (Generated from chapters/06_libraries/reference/mma_gemm.cu by scripts/variants.py.)
// Tensor cores through mma.sync PTX (worked example, the step between WMMA and wgmma): C (fp32) =
// alpha A B + beta C, A (M, K) and B (K, N) row-major fp16 or bf16, fp32 accumulation.
//
// What WMMA hides, written out (PTX ISA, "Warp-level matrix instructions"):
//   mma.sync.aligned.m16n8k16.row.col.f32.{f16,bf16}: one warp, a 16x16 A fragment (4 registers of
//     2 elements a lane), a 16x8 B fragment (2 registers), a 16x8 fp32 accumulator (4 registers).
//     The element-to-lane mapping is documented, so the epilogue stores straight from registers.
//   ldmatrix.sync.aligned.m8n8.x4(.trans).shared.b16: a warp reads four 8x8 matrices of 16-bit
//     elements from shared memory, each lane giving the address of one 16-byte row; lane l receives
//     row l / 4, elements 2 (l % 4) and 2 (l % 4) + 1 of each matrix: exactly an A fragment (x4) or
//     two B fragments. B is row-major (K, N) here while the instruction wants it column-major
//     ("col": K-contiguous per column), so B goes through .trans, which hands each lane the
//     transposed pair.
//   cp.async.cg.shared.global 16 bytes: a copy global -> shared that bypasses registers (and L1),
//     grouped by commit_group; wait_group n waits until at most n groups of this thread are in
//     flight. A src-size of 0 writes 16 zero bytes (the edges of M, N and K).
//
//   block tile (BM, BN, BK) = (128, 128, 32), 256 threads = 8 warps as 2 (M) x 4 (N)
//   warp tile (64, 32) = 4 x 4 mma tiles of 16 x 8: 64 fp32 accumulators a thread
//   kStages = 4 shared stages of 16 KB (64 KB, dynamic): tiles t + 1 .. t + 3 are in flight while
//     the warps multiply tile t; one __syncthreads per K tile
//   shared rows are not padded but XOR-swizzled (see swizzle_a / swizzle_b): the 8 rows an
//     ldmatrix phase reads, and the 16-byte chunks of a cp.async, land in 8 different 16-byte bank
//     groups, so both are conflict-free without wasting shared memory
//   blocks are visited in groups of kGroupM block rows, so the A rows and B columns that
//     concurrently running blocks read stay in L2
// Any shape: the 16-byte copies are used when K and N are multiples of 8 and A and B are 16-byte
// aligned (every chunk then lies wholly inside or wholly outside its matrix: src-size 16 or 0);
// otherwise a guarded element path loads the same tiles (correct, not fast). The epilogue stores
// only inside C and reads C only when beta != 0.
#include <cstdint>
#include <limits>

#include "ch06/tensor_core.hpp"
#include "cp_async.cuh"
#include "cudalab/check.hpp"
#include "cudalab/math.hpp"

namespace cudalab::ch06 {
namespace {

struct MmaConfig {
  static constexpr int kBM = 128, kBN = 128, kBK = 32;
  static constexpr int kWarpsM = 2, kWarpsN = 4;
  static constexpr int kWarpM = kBM / kWarpsM, kWarpN = kBN / kWarpsN;      // 64 x 32
  static constexpr int kMmaM = 16, kMmaN = 8, kMmaK = 16;                   // m16n8k16
  static constexpr int kTilesM = kWarpM / kMmaM, kTilesN = kWarpN / kMmaN;  // 4 x 4 per warp
  static constexpr int kThreads = kWarpsM * kWarpsN * 32;                   // 256
  static constexpr int kStages = 4;
  static constexpr int kGroupM = 8;  // block rows per group of the block order (L2 reuse)
  static constexpr int kChunk = 8;   // 16-bit elements per 16-byte chunk
  static constexpr int kChunkBytes = 16;
  static constexpr int kElemBytes = 2;
  static constexpr int kRowBytesA = kBK * kElemBytes, kRowBytesB = kBN * kElemBytes;  // 64, 256
  static constexpr int kChunksRowA = kBK / kChunk, kChunksRowB = kBN / kChunk;        // 4, 16
  static constexpr int kBytesA = kBM * kRowBytesA, kBytesB = kBK * kRowBytesB;        // 8 KB each
  static constexpr int kStageBytes = kBytesA + kBytesB;
  static constexpr int kSmemBytes = kStages * kStageBytes;       // 64 KB
  static constexpr int kCopiesA = kBM * kChunksRowA / kThreads;  // 2 chunks a thread
  static constexpr int kCopiesB = kBK * kChunksRowB / kThreads;  // 2 chunks a thread
  static constexpr int kBlocksPerSm = 2;                         // <= 128 registers a thread
};
using MC = MmaConfig;
static_assert(MC::kCopiesA * MC::kThreads == MC::kBM * MC::kChunksRowA);
static_assert(MC::kCopiesB * MC::kThreads == MC::kBK * MC::kChunksRowB);
static_assert(MC::kBK % MC::kMmaK == 0 && MC::kTilesN % 2 == 0, "ldmatrix.x4.trans: 2 n-tiles");
static_assert(MC::kChunksRowA == 4 && MC::kChunksRowB % 8 == 0, "the swizzles below assume these");
static_assert(MC::kStages >= 2);

// ---- Swizzles: byte offset of 16-byte chunk `chunk` of row `row` inside a stage's tile ---------
// A tile: 128 rows of 64 bytes, two rows per 128-byte line (the 32 banks). An ldmatrix phase reads
// one chunk from each of 8 consecutive rows; XOR-ing the chunk with (row / 2) % 4 spreads them over
// the 8 bank groups (row % 2 picks the half line, (row / 2) % 4 the chunk inside it).
__device__ __forceinline__ uint32_t swizzle_a(int row, int chunk) {
  return row * MC::kRowBytesA + ((chunk ^ ((row >> 1) & 3)) * MC::kChunkBytes);
}
// B tile: 32 rows of 256 bytes, every row starting in bank 0. XOR-ing the chunk's low 3 bits with
// row % 8 puts the same chunk of 8 consecutive rows into 8 different bank groups.
__device__ __forceinline__ uint32_t swizzle_b(int row, int chunk) {
  return row * MC::kRowBytesB + ((chunk ^ (row & 7)) * MC::kChunkBytes);
}

// ---- PTX wrappers ------------------------------------------------------------------------------
// The cp.async ones are SGEMM step 8's (cp_async.cuh).
using detail::cp_async_16;
using detail::cp_async_commit;
using detail::cp_async_wait;
using detail::shared_address;

// Four 8x8 matrices of 16-bit elements; lanes 8i .. 8i + 7 address the rows of matrix i.
__device__ __forceinline__ void ldmatrix_x4(uint32_t (&r)[4], uint32_t addr) {
  asm volatile("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0, %1, %2, %3}, [%4];\n"
               : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
               : "r"(addr)
               : "memory");
}
// The same, each matrix transposed on the way (row-major B -> the "col" B fragment).
__device__ __forceinline__ void ldmatrix_x4_trans(uint32_t (&r)[4], uint32_t addr) {
  asm volatile("ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16 {%0, %1, %2, %3}, [%4];\n"
               : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
               : "r"(addr)
               : "memory");
}

// d += a b for one 16x8x16 tile, fp32 accumulation.
__device__ __forceinline__ void mma_16816(float (&d)[4], const uint32_t (&a)[4], uint32_t b0,
                                          uint32_t b1, __half /*type tag*/) {
  asm("mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32 {%0, %1, %2, %3}, {%4, %5, %6, %7}, "
      "{%8, %9}, {%0, %1, %2, %3};\n"
      : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
      : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b0), "r"(b1));
}
__device__ __forceinline__ void mma_16816(float (&d)[4], const uint32_t (&a)[4], uint32_t b0,
                                          uint32_t b1, __nv_bfloat16 /*type tag*/) {
  asm("mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 {%0, %1, %2, %3}, {%4, %5, %6, %7}, "
      "{%8, %9}, {%0, %1, %2, %3};\n"
      : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
      : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b0), "r"(b1));
}

// The fallback's loads: 8 consecutive 16-bit elements row[col .. col + 7] of a row with `limit`
// valid columns, as raw bits (zero bits are +0.0 in fp16 and bf16), element by element.
__device__ __forceinline__ uint4 load8_guarded(const unsigned short* row, int col, int limit) {
  auto get = [&](int i) -> unsigned { return col + i < limit ? row[col + i] : 0u; };
  return make_uint4(get(0) | get(1) << 16, get(2) | get(3) << 16, get(4) | get(5) << 16,
                    get(6) | get(7) << 16);
}

// Launch: a 1D grid of ceil(M / 128) * ceil(N / 128) blocks, 256 threads, MC::kSmemBytes of
// dynamic shared memory, 2 blocks per SM. kVec: K and N multiples of 8 and A, B 16-byte aligned
// (cp.async pipeline); otherwise guarded element loads into the same swizzled tiles (that path
// asks for 1 block per SM: its unrolled element loads would spill under the 128-register cap).
template <class T, bool kVec>
__global__ void __launch_bounds__(MC::kThreads, kVec ? MC::kBlocksPerSm : 1)
    mma_gemm_kernel(int M, int N, int K, float alpha, const T* __restrict__ A,
                    const T* __restrict__ B, float beta, float* __restrict__ C, bool c_vec2) {
  extern __shared__ __align__(128) unsigned char smem[];
  const uint32_t smem_base = shared_address(smem);

  // Grouped block order: kGroupM block rows walk the block columns together.
  const int grid_m = ceil_div(M, MC::kBM), grid_n = ceil_div(N, MC::kBN);
  const int per_group = MC::kGroupM * grid_n;
  const int block = static_cast<int>(blockIdx.x);
  const int first_m = (block / per_group) * MC::kGroupM;
  const int group_rows = min(grid_m - first_m, MC::kGroupM);
  const int in_group = block % per_group;
  const int bm = (first_m + in_group % group_rows) * MC::kBM;
  const int bn = (in_group / group_rows) * MC::kBN;

  const int t = threadIdx.x, warp = t / 32, lane = t % 32;
  const int warp_m = warp / MC::kWarpsN, warp_n = warp % MC::kWarpsN;

  // One K tile (k0) of A and B into stage `stage`.
  auto load_tile = [&](int stage, int k0) {
    const uint32_t a_dst = smem_base + stage * MC::kStageBytes;
    const uint32_t b_dst = a_dst + MC::kBytesA;
#pragma unroll
    for (int l = 0; l < MC::kCopiesA; ++l) {
      const int c = t + l * MC::kThreads, row = c / MC::kChunksRowA, chunk = c % MC::kChunksRowA;
      const int grow = bm + row, gcol = k0 + chunk * MC::kChunk;
      const T* src = A + static_cast<std::size_t>(grow < M ? grow : 0) * K;
      if constexpr (kVec) {
        const bool valid = grow < M && gcol < K;
        cp_async_16(a_dst + swizzle_a(row, chunk), valid ? src + gcol : A, valid);
      } else {
        const uint4 v =
            load8_guarded(reinterpret_cast<const unsigned short*>(src), gcol, grow < M ? K : 0);
        *reinterpret_cast<uint4*>(smem + (a_dst - smem_base) + swizzle_a(row, chunk)) = v;
      }
    }
#pragma unroll
    for (int l = 0; l < MC::kCopiesB; ++l) {
      const int c = t + l * MC::kThreads, row = c / MC::kChunksRowB, chunk = c % MC::kChunksRowB;
      const int grow = k0 + row, gcol = bn + chunk * MC::kChunk;
      const T* src = B + static_cast<std::size_t>(grow < K ? grow : 0) * N;
      if constexpr (kVec) {
        const bool valid = grow < K && gcol < N;
        cp_async_16(b_dst + swizzle_b(row, chunk), valid ? src + gcol : B, valid);
      } else {
        const uint4 v =
            load8_guarded(reinterpret_cast<const unsigned short*>(src), gcol, grow < K ? N : 0);
        *reinterpret_cast<uint4*>(smem + (b_dst - smem_base) + swizzle_b(row, chunk)) = v;
      }
    }
  };

  // ldmatrix row addresses (byte offsets inside a stage), fixed for the whole loop. Lane l gives
  // row l % 16 and chunk l / 16 of a 16 x 16 block: matrices 0..3 = (rows 0-7, k 0-7),
  // (rows 8-15, k 0-7), (rows 0-7, k 8-15), (rows 8-15, k 8-15) = a0..a3 of the A fragment; for
  // the B block (k rows, n chunks) = b0, b1 of n-tile 0, then b0, b1 of n-tile 1.
  constexpr int kSteps = MC::kBK / MC::kMmaK;  // 2 k16 steps a K tile
  uint32_t a_off[kSteps], b_off[kSteps][MC::kTilesN / 2];
#pragma unroll
  for (int s = 0; s < kSteps; ++s) {
    a_off[s] = swizzle_a(warp_m * MC::kWarpM + (lane & 15), s * 2 + (lane >> 4));
#pragma unroll
    for (int j = 0; j < MC::kTilesN / 2; ++j)
      b_off[s][j] = MC::kBytesA +
                    swizzle_b(s * MC::kMmaK + (lane & 15),
                              (warp_n * MC::kWarpN + j * 2 * MC::kMmaN) / MC::kChunk + (lane >> 4));
  }
  // The A swizzle depends on row % 8 only, so m-tile i is 16 rows (i * 1 KB) further on.
  constexpr uint32_t kTileStrideA = MC::kMmaM * MC::kRowBytesA;

  float acc[MC::kTilesM][MC::kTilesN][4];
#pragma unroll
  for (int i = 0; i < MC::kTilesM; ++i)
#pragma unroll
    for (int j = 0; j < MC::kTilesN; ++j)
#pragma unroll
      for (int e = 0; e < 4; ++e) acc[i][j][e] = 0.0f;

  const int tiles = ceil_div(K, MC::kBK);
  // Prologue: tiles 0 .. kStages - 2 in flight, one commit group each (empty past the last tile,
  // so that "group t" is always tile t).
#pragma unroll
  for (int s = 0; s < MC::kStages - 1; ++s) {
    if (s < tiles) load_tile(s, s * MC::kBK);
    cp_async_commit();
  }

  for (int tile = 0; tile < tiles; ++tile) {
    cp_async_wait<MC::kStages - 2>();  // this thread's copies of tile `tile` have landed
    __syncthreads();  // everyone's have; and every warp is done with tile - 1's stage
    // Refill the stage tile - 1 used with tile + kStages - 1: in flight during these MMAs.
    const int next = tile + MC::kStages - 1;
    if (next < tiles) load_tile(next % MC::kStages, next * MC::kBK);
    cp_async_commit();

    const uint32_t stage = smem_base + (tile % MC::kStages) * MC::kStageBytes;
#pragma unroll
    for (int s = 0; s < kSteps; ++s) {
      uint32_t a[MC::kTilesM][4], b[MC::kTilesN / 2][4];
#pragma unroll
      for (int i = 0; i < MC::kTilesM; ++i) ldmatrix_x4(a[i], stage + a_off[s] + i * kTileStrideA);
#pragma unroll
      for (int j = 0; j < MC::kTilesN / 2; ++j) ldmatrix_x4_trans(b[j], stage + b_off[s][j]);
#pragma unroll
      for (int i = 0; i < MC::kTilesM; ++i)
#pragma unroll
        for (int j = 0; j < MC::kTilesN; ++j)
          mma_16816(acc[i][j], a[i], b[j / 2][(j % 2) * 2], b[j / 2][(j % 2) * 2 + 1], T{});
    }
  }
  cp_async_wait<0>();  // only empty groups remain; leave none behind

  // Epilogue straight from the accumulators: lane l holds rows l / 4 and l / 4 + 8, columns
  // 2 (l % 4) and 2 (l % 4) + 1 of each 16 x 8 tile; a quad writes 32 contiguous bytes of a row.
  const int g = lane / 4, q = lane % 4;
#pragma unroll
  for (int i = 0; i < MC::kTilesM; ++i) {
#pragma unroll
    for (int j = 0; j < MC::kTilesN; ++j) {
      const int col = bn + warp_n * MC::kWarpN + j * MC::kMmaN + 2 * q;
#pragma unroll
      for (int h = 0; h < 2; ++h) {
        const int row = bm + warp_m * MC::kWarpM + i * MC::kMmaM + g + h * 8;
        if (row >= M || col >= N) continue;
        float* out = C + static_cast<std::size_t>(row) * N + col;
        const float v0 = alpha * acc[i][j][2 * h], v1 = alpha * acc[i][j][2 * h + 1];
        if (c_vec2) {  // N even and C 8-byte aligned: col + 1 < N too
          float2 r = make_float2(v0, v1);
          if (beta != 0.0f) {
            const float2 old = *reinterpret_cast<const float2*>(out);
            r.x += beta * old.x;
            r.y += beta * old.y;
          }
          *reinterpret_cast<float2*>(out) = r;
        } else {
          out[0] = beta != 0.0f ? v0 + beta * out[0] : v0;
          if (col + 1 < N) out[1] = beta != 0.0f ? v1 + beta * out[1] : v1;
        }
      }
    }
  }
}

template <class T, bool kVec>
void launch_kernel(int blocks, int M, int N, int K, float alpha, const T* A, const T* B, float beta,
                   float* C, bool c_vec2, cudaStream_t stream) {
  auto* kernel = mma_gemm_kernel<T, kVec>;
  // 64 KB of dynamic shared memory is past the 48 KB default: opt in (per device, so every call).
  CUDALAB_CHECK(
      cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, MC::kSmemBytes));
  kernel<<<blocks, MC::kThreads, MC::kSmemBytes, stream>>>(M, N, K, alpha, A, B, beta, C, c_vec2);
  CUDALAB_CHECK_LAUNCH();
}

template <class T>
void launch_mma(int M, int N, int K, float alpha, const T* A, const T* B, float beta, float* C,
                cudaStream_t stream) {
  require(M >= 0, "M", "must be >= 0");
  require(N >= 0, "N", "must be >= 0");
  require(K >= 0, "K", "must be >= 0");
  if (M == 0 || N == 0) return;
  const long long blocks = static_cast<long long>(ceil_div(M, MC::kBM)) * ceil_div(N, MC::kBN);
  require(blocks <= std::numeric_limits<int>::max(), "M",
          "ceil(M / 128) * ceil(N / 128) must fit the grid (2^31 - 1 blocks)");
  require_device_pointer(A, static_cast<std::size_t>(M) * K, "A");
  require_device_pointer(B, static_cast<std::size_t>(K) * N, "B");
  require_device_pointer(C, static_cast<std::size_t>(M) * N, "C");
  const bool vec = K % MC::kChunk == 0 && N % MC::kChunk == 0 && is_aligned(A, MC::kChunkBytes) &&
                   is_aligned(B, MC::kChunkBytes);
  const bool c_vec2 = N % 2 == 0 && is_aligned(C, sizeof(float2));
  if (vec)
    launch_kernel<T, true>(static_cast<int>(blocks), M, N, K, alpha, A, B, beta, C, c_vec2, stream);
  else
    launch_kernel<T, false>(static_cast<int>(blocks), M, N, K, alpha, A, B, beta, C, c_vec2,
                            stream);
}

}  // namespace

void mma_gemm(int M, int N, int K, float alpha, const __half* A, const __half* B, float beta,
              float* C, cudaStream_t stream) {
  launch_mma(M, N, K, alpha, A, B, beta, C, stream);
}

void mma_gemm(int M, int N, int K, float alpha, const __nv_bfloat16* A, const __nv_bfloat16* B,
              float beta, float* C, cudaStream_t stream) {
  launch_mma(M, N, K, alpha, A, B, beta, C, stream);
}

}  // namespace cudalab::ch06
