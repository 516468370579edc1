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
// The kernel is a template over its tiling (MmaConfig); the one the library launches (MmaDefault):
//   block tile (BM, BN, BK) = (128, 256, 32), 256 threads = 8 warps as 2 (M) x 4 (N), 1 block/SM
//   warp tile (64, 64) = 4 x 8 mma tiles of 16 x 8: 128 fp32 accumulators a thread
//   kStages = 4 shared stages of 24 KB (96 KB, dynamic): tiles t + 1 .. t + 3 are in flight while
//     the warps multiply tile t; one __syncthreads per K tile
// Why this shape: the warp tile sets the shared-memory bytes each MMA costs. Per k16 step a
// 64 x 64 warp tile reads 4 A fragments and 4 B fragment pairs (8 ldmatrix.x4, 4 KB) for 32 MMAs,
// 128 bytes an MMA, where a 64 x 32 warp tile reads 6 for 16 MMAs (192 bytes an MMA); a 128 x 256
// block also writes fewer shared bytes (cp.async) per MMA than a 128 x 128 one. The price is
// registers (128 accumulators plus two sets of fragments): about 230 a thread, hence one block of 8
// warps per SM and 4 stages to cover the global-memory latency.
//   fragments are double-buffered in registers: the ldmatrix of k16 step s + 1 are issued before
//     the MMAs of step s, and the next K tile's first fragments are loaded right after the barrier
//     that opens it, ahead of the current tile's last MMAs, so the tensor cores do not wait on
//     shared memory or on the barrier
//   shared rows are not padded but XOR-swizzled (see swizzle): the 8 rows an ldmatrix phase reads,
//     and the 16-byte chunks of a cp.async, land in 8 different 16-byte bank groups, so both are
//     conflict-free without wasting shared memory
//   blocks are visited in groups of kGroupM block rows, so the A rows and B columns that
//     concurrently running blocks read stay in L2
// Any shape: the 16-byte copies are used when K and N are multiples of 8 and A and B are 16-byte
// aligned (every chunk then lies wholly inside or wholly outside its matrix: src-size 16 or 0);
// otherwise a guarded element path loads the same tiles (correct, not fast). The epilogue stores
// only inside C and reads C only when beta != 0.
#include <cstdint>
#include <limits>

#include "ch06/tensor_core.hpp"
#include "cudalab/check.hpp"
#include "cudalab/cp_async.cuh"
#include "cudalab/launch.hpp"
#include "cudalab/math.hpp"
#include "cudalab/mma_sync.cuh"

namespace cudalab::ch06 {
namespace {

// One tiling: block tile BM x BN x BK, warps as kWarpsM x kWarpsN, kStages shared stages,
// kBlocksPerSm for __launch_bounds__ (which caps registers at 65536 / (threads * blocks)).
template <int BM, int BN, int BK, int WarpsM, int WarpsN, int Stages, int BlocksPerSm>
struct MmaConfig {
  static constexpr int kBM = BM, kBN = BN, kBK = BK;
  static constexpr int kWarpsM = WarpsM, kWarpsN = WarpsN;
  static constexpr int kWarpM = kBM / kWarpsM, kWarpN = kBN / kWarpsN;
  static constexpr int kMmaM = 16, kMmaN = 8, kMmaK = 16;                   // m16n8k16
  static constexpr int kTilesM = kWarpM / kMmaM, kTilesN = kWarpN / kMmaN;  // mma tiles per warp
  static constexpr int kSteps = kBK / kMmaK;                                // k16 steps a K tile
  static constexpr int kThreads = kWarpsM * kWarpsN * 32;
  static constexpr int kStages = Stages;
  static constexpr int kBlocksPerSm = BlocksPerSm;
  static constexpr int kGroupM = 8;  // block rows per group of the block order (L2 reuse)
  static constexpr int kChunk = 8;   // 16-bit elements per 16-byte chunk
  static constexpr int kChunkBytes = 16;
  static constexpr int kElemBytes = 2;
  static constexpr int kRowBytesA = kBK * kElemBytes, kRowBytesB = kBN * kElemBytes;
  static constexpr int kChunksRowA = kBK / kChunk, kChunksRowB = kBN / kChunk;
  static constexpr int kBytesA = kBM * kRowBytesA, kBytesB = kBK * kRowBytesB;
  static constexpr int kStageBytes = kBytesA + kBytesB;
  static constexpr int kSmemBytes = kStages * kStageBytes;
  // cp.async: each thread copies kCopies chunks of a tile, kRowsPerCopy rows apart.
  static constexpr int kCopiesA = kBM * kChunksRowA / kThreads;
  static constexpr int kCopiesB = kBK * kChunksRowB / kThreads;
  static constexpr int kRowsPerCopyA = kThreads / kChunksRowA,
                       kRowsPerCopyB = kThreads / kChunksRowB;

  static_assert(kWarpM % kMmaM == 0 && kWarpN % (2 * kMmaN) == 0, "ldmatrix.x4.trans: 2 n-tiles");
  static_assert(kSteps % 2 == 0, "fragment double buffer: an even number of k16 steps a K tile");
  static_assert(kThreads % kChunksRowA == 0 && kCopiesA * kThreads == kBM * kChunksRowA);
  static_assert(kThreads % kChunksRowB == 0 && kCopiesB * kThreads == kBK * kChunksRowB);
  static_assert((kChunksRowA == 4 || kChunksRowA % 8 == 0) && kChunksRowB % 8 == 0,
                "the swizzle below assumes these");
  static_assert(kStages >= 2);
};
// The library's tiling (see the top of the file). For comparison, 128 x 128 x 32 with 8 warps of
// 64 x 32 fits 2 blocks per SM (<= 128 registers) but reads 1.5x the shared bytes per MMA.
using MmaDefault = MmaConfig<128, 256, 32, 2, 4, 4, 1>;

// ---- Swizzle: byte offset of 16-byte chunk `chunk` of row `row` in a tile of kChunksRow chunks a
// row. Rows of 8 or more chunks (128 bytes or more: every row starts in bank 0): XOR-ing the
// chunk's low 3 bits with row % 8 puts the same chunk of 8 consecutive rows into 8 different bank
// groups. Rows of 4 chunks (64 bytes, two rows per 128-byte line of the 32 banks): an ldmatrix
// phase reads one chunk from each of 8 consecutive rows; XOR-ing the chunk with (row / 2) % 4
// spreads them over the 8 bank groups (row % 2 picks the half line, (row / 2) % 4 the chunk inside
// it). Either way the swizzle depends on row % 8 only: 8 rows further is the same pattern.
template <int kChunksRow>
__device__ __forceinline__ uint32_t swizzle(int row, int chunk) {
  constexpr int kRowBytes = kChunksRow * 16;
  if constexpr (kChunksRow == 4)
    return row * kRowBytes + ((chunk ^ ((row >> 1) & 3)) * 16);
  else
    return row * kRowBytes + ((chunk ^ (row & 7)) * 16);
}

// ---- PTX wrappers ------------------------------------------------------------------------------
// ldmatrix_x4, ldmatrix_x4_trans and mma_16816 (cudalab/mma_sync.cuh), cp_async_16,
// cp_async_commit, cp_async_wait and shared_address (cudalab/cp_async.cuh): the course's shared
// ones, each a single PTX instruction whose operands the header comment above explains.

// The fallback's loads: 8 consecutive 16-bit elements row[col .. col + 7] of a row with `limit`
// valid columns, as raw bits (zero bits are +0.0 in fp16 and bf16), element by element.
__device__ __forceinline__ uint4 load8_guarded(const unsigned short* row, int col, int limit) {
  auto get = [&](int i) -> unsigned { return col + i < limit ? row[col + i] : 0u; };
  return make_uint4(get(0) | get(1) << 16, get(2) | get(3) << 16, get(4) | get(5) << 16,
                    get(6) | get(7) << 16);
}

// Launch: a 1D grid of ceil(M / BM) * ceil(N / BN) blocks, MC::kThreads threads, MC::kSmemBytes
// of dynamic shared memory. kVec: K and N multiples of 8 and A, B 16-byte aligned (cp.async
// pipeline); otherwise guarded element loads into the same swizzled tiles (that path asks for 1
// block per SM: its unrolled element loads need registers).
template <class MC, class T, bool kVec>
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

  // This thread's chunks: copy l of A is row a_row + l * kRowsPerCopyA, chunk a_chunk of the tile;
  // copy l of B is row b_row + l * kRowsPerCopyB, chunk b_chunk.
  const int a_row = t / MC::kChunksRowA, a_chunk = t % MC::kChunksRowA;
  const int b_row = t / MC::kChunksRowB, b_chunk = t % MC::kChunksRowB;
  // One K tile (k0) of A and B into the stage at byte offset `stage` of smem.
  auto load_tile = [&](uint32_t stage, int k0) {
#pragma unroll
    for (int l = 0; l < MC::kCopiesA; ++l) {
      const int row = a_row + l * MC::kRowsPerCopyA;
      const int grow = bm + row, gcol = k0 + a_chunk * MC::kChunk;
      const T* src = A + static_cast<std::size_t>(grow < M ? grow : 0) * K;
      const uint32_t dst = stage + swizzle<MC::kChunksRowA>(row, a_chunk);
      if constexpr (kVec) {
        const bool valid = grow < M && gcol < K;
        cp_async_16(smem_base + dst, valid ? src + gcol : A, valid);
      } else {
        *reinterpret_cast<uint4*>(smem + dst) =
            load8_guarded(reinterpret_cast<const unsigned short*>(src), gcol, grow < M ? K : 0);
      }
    }
#pragma unroll
    for (int l = 0; l < MC::kCopiesB; ++l) {
      const int row = b_row + l * MC::kRowsPerCopyB;
      const int grow = k0 + row, gcol = bn + b_chunk * MC::kChunk;
      const T* src = B + static_cast<std::size_t>(grow < K ? grow : 0) * N;
      const uint32_t dst = stage + MC::kBytesA + swizzle<MC::kChunksRowB>(row, b_chunk);
      if constexpr (kVec) {
        const bool valid = grow < K && gcol < N;
        cp_async_16(smem_base + dst, valid ? src + gcol : B, valid);
      } else {
        *reinterpret_cast<uint4*>(smem + dst) =
            load8_guarded(reinterpret_cast<const unsigned short*>(src), gcol, grow < K ? N : 0);
      }
    }
  };

  // ldmatrix row addresses (byte offsets inside a stage), fixed for the whole loop. Lane l gives
  // row l % 16 and chunk l / 16 of a 16 x 16 block: matrices 0..3 = (rows 0-7, k 0-7),
  // (rows 8-15, k 0-7), (rows 0-7, k 8-15), (rows 8-15, k 8-15) = a0..a3 of the A fragment; for
  // the B block (k rows, n chunks) = b0, b1 of n-tile 0, then b0, b1 of n-tile 1. The swizzle
  // depends on row % 8 only, so m-tile i of A is 16 rows (i * kTileStrideA bytes) further on and
  // k16 step s of B 16 rows (s * kStepStrideB) further on; A's chunk changes with the step.
  uint32_t a_off[MC::kSteps], b_off[MC::kTilesN / 2];
#pragma unroll
  for (int s = 0; s < MC::kSteps; ++s)
    a_off[s] = swizzle<MC::kChunksRowA>(warp_m * MC::kWarpM + (lane & 15), s * 2 + (lane >> 4));
#pragma unroll
  for (int j = 0; j < MC::kTilesN / 2; ++j) {
    const int chunk = (warp_n * MC::kWarpN + j * 2 * MC::kMmaN) / MC::kChunk + (lane >> 4);
    b_off[j] = MC::kBytesA + swizzle<MC::kChunksRowB>(lane & 15, chunk);
  }
  constexpr uint32_t kTileStrideA = MC::kMmaM * MC::kRowBytesA;
  constexpr uint32_t kStepStrideB = MC::kMmaK * MC::kRowBytesB;

  // Two sets of fragments: step s multiplies set s % 2 while set (s + 1) % 2 is being loaded.
  uint32_t a[2][MC::kTilesM][4], b[2][MC::kTilesN / 2][4];
  auto load_fragments = [&](int set, uint32_t stage, int s) {
#pragma unroll
    for (int i = 0; i < MC::kTilesM; ++i)
      ldmatrix_x4(a[set][i], smem_base + stage + a_off[s] + i * kTileStrideA);
#pragma unroll
    for (int j = 0; j < MC::kTilesN / 2; ++j)
      ldmatrix_x4_trans(b[set][j], smem_base + stage + b_off[j] + s * kStepStrideB);
  };

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
    if (s < tiles) load_tile(s * MC::kStageBytes, s * MC::kBK);
    cp_async_commit();
  }
  // Opening tile t: wait until this thread's copies of tile t have landed (at most kStages - 2
  // younger groups in flight), then __syncthreads: everyone's have, and every warp is done with
  // tile t - 1's stage, which `refill` then loads with tile t + kStages - 1 (in flight during the
  // MMAs of tiles t .. t + kStages - 2).
  int read = 0, write = MC::kStages - 1;  // stage of tile t; stage of tile t - 1
  auto open_tile = [&] {
    cp_async_wait<MC::kStages - 2>();
    __syncthreads();
  };
  auto refill = [&](int tile) {
    if (tile + MC::kStages - 1 < tiles)
      load_tile(write * MC::kStageBytes, (tile + MC::kStages - 1) * MC::kBK);
    cp_async_commit();
    write = read;
  };
  open_tile();
  refill(0);
  if (tiles > 0) load_fragments(0, 0, 0);

  for (int tile = 0; tile < tiles; ++tile) {
    const bool more = tile + 1 < tiles;
#pragma unroll
    for (int s = 0; s < MC::kSteps; ++s) {
      if (s + 1 < MC::kSteps) {
        load_fragments((s + 1) % 2, read * MC::kStageBytes, s + 1);
      } else if (more) {
        // The last step's fragments are in registers: open the next tile now and load its first
        // fragments, so that their ldmatrix overlap this step's MMAs instead of following them.
        read = read + 1 == MC::kStages ? 0 : read + 1;
        open_tile();
        load_fragments(0, read * MC::kStageBytes, 0);
      }
#pragma unroll
      for (int i = 0; i < MC::kTilesM; ++i)
#pragma unroll
        for (int j = 0; j < MC::kTilesN; ++j)
          mma_16816(acc[i][j], a[s % 2][i], b[s % 2][j / 2][(j % 2) * 2],
                    b[s % 2][j / 2][(j % 2) * 2 + 1], T{});
    }
    // The copies' address arithmetic after the MMAs are issued: it overlaps them.
    if (more) refill(tile + 1);
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

template <class MC, class T, bool kVec>
void launch_kernel(int blocks, int M, int N, int K, float alpha, const T* A, const T* B, float beta,
                   float* C, bool c_vec2, cudaStream_t stream) {
  auto* kernel = mma_gemm_kernel<MC, T, kVec>;
  // More than the 48 KB default of dynamic shared memory: opt in (once per kernel and device).
  set_kernel_attribute_once(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, MC::kSmemBytes);
  kernel<<<blocks, MC::kThreads, MC::kSmemBytes, stream>>>(M, N, K, alpha, A, B, beta, C, c_vec2);
  CUDALAB_CHECK_LAUNCH();
}

template <class MC, class T>
void launch_mma(int M, int N, int K, float alpha, const T* A, const T* B, float beta, float* C,
                cudaStream_t stream) {
  require(M >= 0, "M", "must be >= 0");
  require(N >= 0, "N", "must be >= 0");
  require(K >= 0, "K", "must be >= 0");
  if (M == 0 || N == 0) return;
  const long long blocks = static_cast<long long>(ceil_div(M, MC::kBM)) * ceil_div(N, MC::kBN);
  require(blocks <= std::numeric_limits<int>::max(), "M",
          "ceil(M / BM) * ceil(N / BN) must fit the grid (2^31 - 1 blocks)");
  require_device_pointer(A, static_cast<std::size_t>(M) * K, "A");
  require_device_pointer(B, static_cast<std::size_t>(K) * N, "B");
  require_device_pointer(C, static_cast<std::size_t>(M) * N, "C");
  const bool vec = K % MC::kChunk == 0 && N % MC::kChunk == 0 && is_aligned(A, MC::kChunkBytes) &&
                   is_aligned(B, MC::kChunkBytes);
  const bool c_vec2 = N % 2 == 0 && is_aligned(C, sizeof(float2));
  if (vec)
    launch_kernel<MC, T, true>(static_cast<int>(blocks), M, N, K, alpha, A, B, beta, C, c_vec2,
                               stream);
  else
    launch_kernel<MC, T, false>(static_cast<int>(blocks), M, N, K, alpha, A, B, beta, C, c_vec2,
                                stream);
}

}  // namespace

void mma_gemm(int M, int N, int K, float alpha, const __half* A, const __half* B, float beta,
              float* C, cudaStream_t stream) {
  launch_mma<MmaDefault>(M, N, K, alpha, A, B, beta, C, stream);
}

void mma_gemm(int M, int N, int K, float alpha, const __nv_bfloat16* A, const __nv_bfloat16* B,
              float beta, float* C, cudaStream_t stream) {
  launch_mma<MmaDefault>(M, N, K, alpha, A, B, beta, C, stream);
}

}  // namespace cudalab::ch06
