// Hopper tensor cores through wgmma (worked example, sm_90a only): C (fp32) = A Bt^T, bf16 in.
//
// wgmma (PTX ISA, "warpgroup MMA") is what cuBLAS uses on an H200: a warpgroup of 128 threads
// issues one asynchronous m64nNk16 MMA whose operands are read straight from shared memory
// through 64-bit "matrix descriptors" (no ldmatrix, no fragments in registers for A and B); only
// the fp32 accumulator lives in registers. Layout rules this kernel follows:
//  * both operands K-major: A (M, K) row-major, and B given as Bt (N, K) row-major (the layout of a
//    PyTorch Linear weight: C = A W^T). Tiles of 64 bf16 = 128 bytes per row;
//  * 128-byte swizzle: the 16-byte chunk c of tile row r is stored at chunk c ^ (r % 8), so the
//    8 rows of a core matrix hit different banks; tiles start on 1024-byte boundaries;
//  * descriptor: start address >> 4, leading byte offset 16 (unused with swizzle), stride byte
//    offset 1024 (8 rows x 128 B between core-matrix groups), swizzle mode 1 (128 B) in bits 62-63;
//  * shared memory written by ordinary stores or cp.async (the generic proxy) must be fenced with
//    fence.proxy.async before wgmma (the async proxy) reads it.
// Block: one warpgroup, tile (BM, BN, BK) = (128, 128, 64) as two m64n128k16 MMAs per k16 step,
// 3-stage cp.async pipeline (96 KB of shared memory, 2 blocks per SM). It waits for its MMAs at the
// end of every K step; TMA loads, warp specialization and MMA/load overlap (the "Outperforming
// cuBLAS on H100" worklog) are the next steps, not done here.
// Precondition (checked): M % 128 == 0, N % 128 == 0, K % 64 == 0, K > 0, 16-byte aligned
// pointers, and a device of compute capability exactly 9.0.
#include <cstdint>
#include <stdexcept>

#include "ch06/ch06.hpp"
#include "cudalab/check.hpp"
#include "cudalab/launch.hpp"
#include "cudalab/device.hpp"

namespace cudalab::ch06 {
namespace {

struct WgmmaConfig {
  static constexpr int kBM = 128, kBN = 128, kBK = 64;  // kBK bf16 = 128 bytes: one swizzle row
  static constexpr int kStages = 3;
  static constexpr int kThreads = 128;                  // one warpgroup
  static constexpr int kTileBytes = kBM * kBK * 2;      // 16 KB per operand tile
  static constexpr int kStageBytes = 2 * kTileBytes;    // A and Bt
  static constexpr int kSmemBytes = kStages * kStageBytes + 1024;  // + alignment slack
  static constexpr int kChunksPerRow = kBK * 2 / 16;    // 8 chunks of 16 bytes
};
using GC = WgmmaConfig;
static_assert(GC::kBM == GC::kBN && GC::kBK * 2 == 128, "128-byte swizzle rows, square tiles");
static_assert(GC::kBM * GC::kChunksPerRow % GC::kThreads == 0);

#if defined(__CUDA_ARCH_FEAT_SM90_ALL)
__device__ __forceinline__ std::uint64_t smem_desc(std::uint32_t smem_addr) {
  auto enc = [](std::uint64_t x) { return (x & 0x3FFFF) >> 4; };
  return enc(smem_addr) | enc(16) << 16 | enc(1024) << 32 | std::uint64_t{1} << 62;
}

__device__ __forceinline__ void wgmma_m64n128k16(float (&d)[64], std::uint64_t desc_a, std::uint64_t desc_b) {
  asm volatile(
      "{\n.reg .pred p;\nsetp.ne.b32 p, %66, 0;\n"
      "wgmma.mma_async.sync.aligned.m64n128k16.f32.bf16.bf16 "
      "{%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, %16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31, %32, %33, %34, %35, %36, %37, %38, %39, %40, %41, %42, %43, %44, %45, %46, %47, %48, %49, %50, %51, %52, %53, %54, %55, %56, %57, %58, %59, %60, %61, %62, %63}, %64, %65, p, 1, 1, 0, 0;\n}\n"
      : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]), "+f"(d[6]), "+f"(d[7]), "+f"(d[8]), "+f"(d[9]), "+f"(d[10]), "+f"(d[11]), "+f"(d[12]), "+f"(d[13]), "+f"(d[14]), "+f"(d[15]), "+f"(d[16]), "+f"(d[17]), "+f"(d[18]), "+f"(d[19]), "+f"(d[20]), "+f"(d[21]), "+f"(d[22]), "+f"(d[23]), "+f"(d[24]), "+f"(d[25]), "+f"(d[26]), "+f"(d[27]), "+f"(d[28]), "+f"(d[29]), "+f"(d[30]), "+f"(d[31]), "+f"(d[32]), "+f"(d[33]), "+f"(d[34]), "+f"(d[35]), "+f"(d[36]), "+f"(d[37]), "+f"(d[38]), "+f"(d[39]), "+f"(d[40]), "+f"(d[41]), "+f"(d[42]), "+f"(d[43]), "+f"(d[44]), "+f"(d[45]), "+f"(d[46]), "+f"(d[47]), "+f"(d[48]), "+f"(d[49]), "+f"(d[50]), "+f"(d[51]), "+f"(d[52]), "+f"(d[53]), "+f"(d[54]), "+f"(d[55]), "+f"(d[56]), "+f"(d[57]), "+f"(d[58]), "+f"(d[59]), "+f"(d[60]), "+f"(d[61]), "+f"(d[62]), "+f"(d[63])
      : "l"(desc_a), "l"(desc_b), "r"(1));  // scale-d = 1: D += A B
}

__device__ __forceinline__ void cp_async_16(std::uint32_t dst, const void* src) {
  asm volatile("cp.async.cg.shared.global [%0], [%1], 16;\n" ::"r"(dst), "l"(src));
}
#endif

// Launch: grid (N / 128, M / 128), 128 threads, GC::kSmemBytes of dynamic shared memory.
__global__ void __launch_bounds__(GC::kThreads, 2)
wgmma_gemm_kernel(int M, int N, int K, const __nv_bfloat16* __restrict__ A,
                  const __nv_bfloat16* __restrict__ Bt, float* __restrict__ C) {
#if defined(__CUDA_ARCH_FEAT_SM90_ALL)
  extern __shared__ unsigned char smem_raw[];
  // Swizzled tiles must start on 1024-byte boundaries (the swizzle pattern repeats every 8 rows).
  const std::uint32_t raw = static_cast<std::uint32_t>(__cvta_generic_to_shared(smem_raw));
  const std::uint32_t base = (raw + 1023u) & ~1023u;
  const int t = threadIdx.x, warp = t / 32, lane = t % 32;
  const int bm = blockIdx.y * GC::kBM, bn = blockIdx.x * GC::kBN;
  const int tiles = K / GC::kBK;

  // Copies K tile `tile` of A and Bt into stage `stage`, 16 bytes per cp.async, swizzled.
  auto load_stage = [&](int tile, int stage) {
    const std::uint32_t sa = base + stage * GC::kStageBytes, sb = sa + GC::kTileBytes;
    const int k0 = tile * GC::kBK;
#pragma unroll
    for (int i = 0; i < GC::kBM * GC::kChunksPerRow / GC::kThreads; ++i) {
      const int c = t + i * GC::kThreads, r = c / GC::kChunksPerRow, ch = c % GC::kChunksPerRow;
      const std::uint32_t off = r * 128 + ((ch ^ (r % 8)) * 16);
      cp_async_16(sa + off, A + static_cast<std::size_t>(bm + r) * K + k0 + ch * 8);
      cp_async_16(sb + off, Bt + static_cast<std::size_t>(bn + r) * K + k0 + ch * 8);
    }
  };

  float d0[64], d1[64];  // rows 0-63 and 64-127 of the block tile
#pragma unroll
  for (int i = 0; i < 64; ++i) d0[i] = d1[i] = 0.0f;

#pragma unroll
  for (int s = 0; s < GC::kStages - 1; ++s) {
    if (s < tiles) load_stage(s, s);
    asm volatile("cp.async.commit_group;\n" ::);
  }
  for (int tile = 0; tile < tiles; ++tile) {
    asm volatile("cp.async.wait_group %0;\n" ::"n"(GC::kStages - 2));  // my copies of `tile` landed
    asm volatile("fence.proxy.async.shared::cta;\n" ::);              // visible to wgmma (async proxy)
    __syncthreads();  // everyone's copies landed; everyone's MMAs of tile - 1 finished
    const int next = tile + GC::kStages - 1;
    if (next < tiles) load_stage(next, next % GC::kStages);  // overwrites the stage of tile - 1
    asm volatile("cp.async.commit_group;\n" ::);

    const std::uint32_t sa = base + (tile % GC::kStages) * GC::kStageBytes, sb = sa + GC::kTileBytes;
    asm volatile("wgmma.fence.sync.aligned;\n" ::: "memory");
#pragma unroll
    for (int kk = 0; kk < GC::kBK / 16; ++kk) {  // a k16 step advances 32 bytes inside the swizzled rows
      const std::uint64_t db = smem_desc(sb + kk * 32);
      wgmma_m64n128k16(d0, smem_desc(sa + kk * 32), db);
      wgmma_m64n128k16(d1, smem_desc(sa + 64 * 128 + kk * 32), db);
    }
    asm volatile("wgmma.commit_group.sync.aligned;\n" ::: "memory");
    asm volatile("wgmma.wait_group.sync.aligned 0;\n" ::: "memory");
  }

  // Accumulator layout of m64nNk16: warp w of the warpgroup holds rows 16 w + lane / 4 (+ 8);
  // register 4 j + {0, 1} are columns 8 j + 2 (lane % 4) + {0, 1}, 4 j + {2, 3} the same 8 rows lower.
  const int row = bm + warp * 16 + lane / 4;
#pragma unroll
  for (int j = 0; j < 16; ++j) {
    const int col = bn + 8 * j + 2 * (lane % 4);
    float* c0 = C + static_cast<std::size_t>(row) * N + col;
    *reinterpret_cast<float2*>(c0) = make_float2(d0[4 * j], d0[4 * j + 1]);
    *reinterpret_cast<float2*>(c0 + 8 * static_cast<std::size_t>(N)) = make_float2(d0[4 * j + 2], d0[4 * j + 3]);
    float* c1 = c0 + 64 * static_cast<std::size_t>(N);
    *reinterpret_cast<float2*>(c1) = make_float2(d1[4 * j], d1[4 * j + 1]);
    *reinterpret_cast<float2*>(c1 + 8 * static_cast<std::size_t>(N)) = make_float2(d1[4 * j + 2], d1[4 * j + 3]);
  }
#else
  // Built for an architecture without wgmma: never launched (the host checks for cc 9.0).
  (void)M; (void)N; (void)K; (void)A; (void)Bt; (void)C;
  __trap();
#endif
}

}  // namespace

bool wgmma_supported() {
  if (!has_gpu()) return false;
  const auto info = device_info();
  return info.cc_major == 9 && info.cc_minor == 0;
}

void wgmma_gemm_bf16_tn(int M, int N, int K, const __nv_bfloat16* A, const __nv_bfloat16* Bt, float* C,
                        cudaStream_t stream) {
  require(M >= 0 && M % GC::kBM == 0, "M", "must be a multiple of 128 (wgmma path precondition)");
  require(N >= 0 && N % GC::kBN == 0, "N", "must be a multiple of 128 (wgmma path precondition)");
  require(K > 0 && K % GC::kBK == 0, "K", "must be a positive multiple of 64 (wgmma path precondition)");
  require(M / GC::kBM <= 65535, "M", "too large for grid.y");
  if (M == 0 || N == 0) return;
  require_device_pointer(A, static_cast<std::size_t>(M) * K, "A");
  require_device_pointer(Bt, static_cast<std::size_t>(N) * K, "Bt");
  require_device_pointer(C, static_cast<std::size_t>(M) * N, "C");
  auto aligned16 = [](const void* p) { return reinterpret_cast<std::uintptr_t>(p) % 16 == 0; };
  require(aligned16(A) && aligned16(Bt) && aligned16(C), "A, Bt, C", "must be 16-byte aligned");
  if (!wgmma_supported())
    throw std::runtime_error("wgmma_gemm_bf16_tn needs a GPU of compute capability 9.0 (sm_90a: H100/H200)");
  set_kernel_attribute_once(wgmma_gemm_kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, GC::kSmemBytes);
  wgmma_gemm_kernel<<<dim3(N / GC::kBN, M / GC::kBM), GC::kThreads, GC::kSmemBytes, stream>>>(M, N, K, A, Bt, C);
  CUDALAB_CHECK_LAUNCH();
}

}  // namespace cudalab::ch06
