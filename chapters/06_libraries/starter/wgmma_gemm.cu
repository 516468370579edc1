// Starter track — write your code at the TODO marks; the tests of each exercise
// fail until you do. (Generated from chapters/06_libraries/reference/wgmma_gemm.cu by scripts/variants.py.)
// Hopper tensor cores through wgmma and TMA (worked example, sm_90a only): C (fp32) = A Bt^T, bf16
// in.
//
// This is how cuBLAS drives an H200, in ~250 lines. Three Hopper features work together:
//  * TMA (the Tensor Memory Accelerator): one thread asks the copy engine for a whole 2D box of a
//    matrix (cp.async.bulk.tensor), described once on the host by a CUtensorMap (base, sizes,
//    strides, box, swizzle). No thread computes an address or moves a byte.
//  * mbarrier: a shared-memory barrier that counts arrivals AND bytes. The producer announces how
//    many bytes a stage will receive (arrive.expect_tx); the TMA unit "completes" them as they
//    land; the phase flips when both are in, and consumers waiting on that phase parity wake up.
//  * wgmma (warpgroup MMA): a warpgroup of 128 threads issues one asynchronous m64nNk16 MMA whose
//    A and B operands are read straight from shared memory through 64-bit matrix descriptors; only
//    the fp32 accumulator lives in registers.
// Warp specialization: warpgroup 0 is the producer (one thread issues the TMA copies, and the group
// gives registers back with setmaxnreg); warpgroups 1 and 2 are consumers, each computing 64 rows
// of the block tile. A ring of kStages shared-memory stages with two mbarriers per stage decouples
// them: full[s] (the copies of stage s landed) and empty[s] (both consumers finished reading it).
// Consumers keep one K step of MMAs in flight (wgmma.wait_group 1) and release a stage only when
// the MMAs that read it are done, so the tensor cores never wait for a barrier round trip.
//
// Layout rules (PTX ISA, "Shared memory matrix layout"; TMA writes exactly this layout):
//  * both operands K-major: A (M, K) row-major and B given as Bt (N, K) row-major (a PyTorch Linear
//    weight: C = A W^T). A box row is 64 bf16 = 128 bytes;
//  * 128-byte swizzle: the 16-byte chunk c of box row r lands at chunk c ^ (r % 8), so the 8 rows
//  of
//    a core matrix hit different banks; stages start on 1024-byte boundaries;
//  * descriptor: start address >> 4, leading byte offset 16 (unused with swizzle), stride byte
//    offset 1024 (8 rows x 128 B between core-matrix groups), swizzle mode 1 (128 B) in bits 62-63;
//    a k16 step advances the start address by 32 bytes inside the swizzled rows.
// Block tile (BM, BN, BK) = (128, 256, 64) when N % 256 == 0 (4 stages of 48 KB), else (128, 128,
// 64) (6 stages of 32 KB); 384 threads, one block per SM. Blocks walk the grid in groups of 8 block
// rows so the blocks resident together share A and Bt tiles in L2.
// Precondition (checked): M % 128 == 0, N % 128 == 0, K % 64 == 0, K > 0, 16-byte aligned
// pointers, and a device of compute capability exactly 9.0.
#include <cuda.h>  // CUtensorMap and its enums (types only: the driver function is fetched at run time)
#include <cudaTypedefs.h>

#include <cstdint>
#include <stdexcept>

#include "ch06/tensor_core.hpp"
#include "cudalab/check.hpp"
#include "cudalab/device.hpp"
#include "cudalab/launch.hpp"
#include "cudalab/math.hpp"

namespace cudalab::ch06 {
namespace {

template <int BN>
struct WgmmaConfig {
  static constexpr int kBM = 128, kBK = 64;                // kBK bf16 = 128 bytes: one swizzle row
  static constexpr int kConsumers = 2;                     // consumer warpgroups, 64 rows each
  static constexpr int kThreads = 128 * (1 + kConsumers);  // + the producer warpgroup
  static constexpr int kStages = BN == 256 ? 4 : 6;
  static constexpr int kABytes = kBM * kBK * 2, kBBytes = BN * kBK * 2;
  static constexpr int kStageBytes = kABytes + kBBytes;
  static constexpr int kSmemBytes = kStages * kStageBytes + 1024;  // + slack to align to 1024
};
static_assert(WgmmaConfig<256>::kSmemBytes <= 227 * 1024 &&
                  WgmmaConfig<128>::kSmemBytes <= 227 * 1024,
              "the stage ring must fit in an SM's shared memory");
static_assert(WgmmaConfig<256>::kStageBytes % 1024 == 0 &&
                  WgmmaConfig<128>::kStageBytes % 1024 == 0,
              "every stage (and its Bt tile) must start on a 1024-byte boundary");

#if defined(__CUDA_ARCH_FEAT_SM90_ALL)
__device__ __forceinline__ std::uint64_t smem_desc(std::uint32_t smem_addr) {
  auto enc = [](std::uint64_t x) { return (x & 0x3FFFF) >> 4; };
  return enc(smem_addr) | enc(16) << 16 | enc(1024) << 32 | std::uint64_t{1} << 62;
}

// The accumulator operands of one wgmma, in register order: "+f"(d[0]), "+f"(d[1]), ... (asm
// operand lists cannot come from a template; the PTX is the same as with the list written out).
#define CUDALAB_WGMMA_D8(d, b)                                                              \
  "+f"(d[(b) + 0]), "+f"(d[(b) + 1]), "+f"(d[(b) + 2]), "+f"(d[(b) + 3]), "+f"(d[(b) + 4]), \
      "+f"(d[(b) + 5]), "+f"(d[(b) + 6]), "+f"(d[(b) + 7])
#define CUDALAB_WGMMA_D64(d)                                                     \
  CUDALAB_WGMMA_D8(d, 0), CUDALAB_WGMMA_D8(d, 8), CUDALAB_WGMMA_D8(d, 16),       \
      CUDALAB_WGMMA_D8(d, 24), CUDALAB_WGMMA_D8(d, 32), CUDALAB_WGMMA_D8(d, 40), \
      CUDALAB_WGMMA_D8(d, 48), CUDALAB_WGMMA_D8(d, 56)
#define CUDALAB_WGMMA_D128(d)                                                                      \
  CUDALAB_WGMMA_D64(d), CUDALAB_WGMMA_D8(d, 64), CUDALAB_WGMMA_D8(d, 72), CUDALAB_WGMMA_D8(d, 80), \
      CUDALAB_WGMMA_D8(d, 88), CUDALAB_WGMMA_D8(d, 96), CUDALAB_WGMMA_D8(d, 104),                  \
      CUDALAB_WGMMA_D8(d, 112), CUDALAB_WGMMA_D8(d, 120)

// D (64 x 128 per warpgroup) += A B: 64 fp32 registers per thread.
__device__ __forceinline__ void wgmma_bf16(float (&d)[64], std::uint64_t desc_a,
                                           std::uint64_t desc_b) {
  asm volatile(
      "{\n.reg .pred p;\nsetp.ne.b32 p, %66, 0;\n"
      "wgmma.mma_async.sync.aligned.m64n128k16.f32.bf16.bf16 "
      "{%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, %16, %17, %18, %19, "
      "%20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31, %32, %33, %34, %35, %36, %37, "
      "%38, %39, %40, %41, %42, %43, %44, %45, %46, %47, %48, %49, %50, %51, %52, %53, %54, %55, "
      "%56, %57, %58, %59, %60, %61, %62, %63}, %64, %65, p, 1, 1, 0, 0;\n}\n"
      : CUDALAB_WGMMA_D64(d)
      : "l"(desc_a), "l"(desc_b), "r"(1));  // scale-d = 1: D += A B
}

// D (64 x 256 per warpgroup) += A B: 128 fp32 registers per thread.
__device__ __forceinline__ void wgmma_bf16(float (&d)[128], std::uint64_t desc_a,
                                           std::uint64_t desc_b) {
  asm volatile(
      "{\n.reg .pred p;\nsetp.ne.b32 p, %130, 0;\n"
      "wgmma.mma_async.sync.aligned.m64n256k16.f32.bf16.bf16 "
      "{%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, %16, %17, %18, %19, "
      "%20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31, %32, %33, %34, %35, %36, %37, "
      "%38, %39, %40, %41, %42, %43, %44, %45, %46, %47, %48, %49, %50, %51, %52, %53, %54, %55, "
      "%56, %57, %58, %59, %60, %61, %62, %63, %64, %65, %66, %67, %68, %69, %70, %71, %72, %73, "
      "%74, %75, %76, %77, %78, %79, %80, %81, %82, %83, %84, %85, %86, %87, %88, %89, %90, %91, "
      "%92, %93, %94, %95, %96, %97, %98, %99, %100, %101, %102, %103, %104, %105, %106, %107, "
      "%108, %109, %110, %111, %112, %113, %114, %115, %116, %117, %118, %119, %120, %121, %122, "
      "%123, %124, %125, %126, %127}, %128, %129, p, 1, 1, 0, 0;\n}\n"
      : CUDALAB_WGMMA_D128(d)
      : "l"(desc_a), "l"(desc_b), "r"(1));
}

__device__ __forceinline__ void mbar_init(std::uint32_t bar, int count) {
  asm volatile("mbarrier.init.shared::cta.b64 [%0], %1;\n" ::"r"(bar), "r"(count));
}
// Producer: one arrival, and `bytes` more to come from the TMA unit before the phase can flip.
__device__ __forceinline__ void mbar_arrive_expect_tx(std::uint32_t bar, std::uint32_t bytes) {
  asm volatile("mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], %1;\n" ::"r"(bar), "r"(bytes)
               : "memory");
}
__device__ __forceinline__ void mbar_arrive(std::uint32_t bar) {
  asm volatile("mbarrier.arrive.shared::cta.b64 _, [%0];\n" ::"r"(bar) : "memory");
}
// Spins until the phase of parity `parity` has completed.
__device__ __forceinline__ void mbar_wait(std::uint32_t bar, int parity) {
  asm volatile(
      "{\n.reg .pred done;\n"
      "WAIT:\n"
      "mbarrier.try_wait.parity.shared::cta.b64 done, [%0], %1;\n"
      "@!done bra WAIT;\n}\n" ::"r"(bar),
      "r"(parity)
      : "memory");
}
// TMA: the box at (inner = x, outer = y) of the tensor map lands in shared memory at dst; its bytes
// are counted on mbarrier `bar`.
__device__ __forceinline__ void tma_load_2d(std::uint32_t dst, const CUtensorMap* map, int x, int y,
                                            std::uint32_t bar) {
  asm volatile(
      "cp.async.bulk.tensor.2d.shared::cluster.global.tile.mbarrier::complete_tx::bytes [%0], [%1, "
      "{%2, %3}], [%4];\n" ::"r"(dst),
      "l"(reinterpret_cast<std::uint64_t>(map)), "r"(x), "r"(y), "r"(bar)
      : "memory");
}
#endif

// Launch: grid (N / BN * M / 128), 384 threads, kSmemBytes of dynamic shared memory; tm_a boxes
// (64, 128) of A, tm_b boxes (64, BN) of Bt, both 128-byte swizzled.
template <int BN>
__global__ void __launch_bounds__(WgmmaConfig<BN>::kThreads, 1)
    wgmma_gemm_kernel(const __grid_constant__ CUtensorMap tm_a,
                      const __grid_constant__ CUtensorMap tm_b, int M, int N, int K,
                      float* __restrict__ C) {
#if defined(__CUDA_ARCH_FEAT_SM90_ALL)
  using G = WgmmaConfig<BN>;
  constexpr int kAccRegs = 64 * BN / 128;  // the m64nBN fp32 accumulator: registers per thread
  constexpr int kGroupM = 8;               // block rows per L2 group
  extern __shared__ unsigned char smem_raw[];
  __shared__ __align__(8) std::uint64_t full[G::kStages], empty[G::kStages];
  // Swizzled tiles must start on 1024-byte boundaries (the swizzle pattern repeats every 8 rows).
  const std::uint32_t raw = static_cast<std::uint32_t>(__cvta_generic_to_shared(smem_raw));
  const std::uint32_t base = (raw + 1023u) & ~1023u;
  auto stage_a = [&](int s) { return base + s * G::kStageBytes; };
  auto stage_b = [&](int s) { return base + s * G::kStageBytes + G::kABytes; };
  auto bar = [](std::uint64_t* b, int s) {
    return static_cast<std::uint32_t>(__cvta_generic_to_shared(b + s));
  };

  // Grouped order: consecutive blocks walk down kGroupM block rows, then move one column right.
  const int grid_n = N / BN, grid_m = M / G::kBM;
  const int pid = blockIdx.x, per_group = kGroupM * grid_n;
  const int first_m = (pid / per_group) * kGroupM;
  const int group_rows = min(grid_m - first_m, kGroupM);
  const int bm = (first_m + (pid % per_group) % group_rows) * G::kBM;
  const int bn = ((pid % per_group) / group_rows) * BN;
  const int tiles = K / G::kBK;
  const int wg = threadIdx.x / 128, tid = threadIdx.x % 128;

  if (threadIdx.x == 0) {
    for (int s = 0; s < G::kStages; ++s) {
      mbar_init(bar(full, s), 1);               // the producer's arrive.expect_tx (+ the bytes)
      mbar_init(bar(empty, s), G::kConsumers);  // one arrival per consumer warpgroup
    }
    asm volatile("fence.mbarrier_init.release.cluster;\n" ::: "memory");  // visible to the TMA unit
  }
  __syncthreads();  // barriers initialized before anyone uses them; no block-wide barrier after
                    // this

  if (wg == 0) {
    // Producer: it needs few registers; give them to the consumers (the 128-register accumulators).
    asm volatile("setmaxnreg.dec.sync.aligned.u32 40;\n");
    if (tid == 0) {
      for (int t = 0; t < tiles; ++t) {
        const int s = t % G::kStages;
        // Use u = t / kStages of stage s must wait for the consumers' release of use u - 1.
        if (t >= G::kStages) mbar_wait(bar(empty, s), (t / G::kStages - 1) & 1);
        mbar_arrive_expect_tx(bar(full, s), G::kStageBytes);
        tma_load_2d(stage_a(s), &tm_a, t * G::kBK, bm, bar(full, s));
        tma_load_2d(stage_b(s), &tm_b, t * G::kBK, bn, bar(full, s));
      }
    }
    return;
  }

  asm volatile("setmaxnreg.inc.sync.aligned.u32 232;\n");
  const int c = wg - 1;  // this consumer's rows: bm + 64 c .. bm + 64 c + 63
  float d[kAccRegs];
#pragma unroll
  for (int i = 0; i < kAccRegs; ++i) d[i] = 0.0f;
  for (int t = 0; t < tiles; ++t) {
    const int s = t % G::kStages;
    mbar_wait(bar(full, s),
              (t / G::kStages) & 1);  // the copies of stage s (use t / kStages) landed
    asm volatile("wgmma.fence.sync.aligned;\n" ::: "memory");
#pragma unroll
    for (int kk = 0; kk < G::kBK / 16;
         ++kk)  // a k16 step: 32 bytes further inside the swizzled rows
      wgmma_bf16(d, smem_desc(stage_a(s) + c * 64 * 128 + kk * 32),
                 smem_desc(stage_b(s) + kk * 32));
    asm volatile("wgmma.commit_group.sync.aligned;\n" ::: "memory");
    // At most one group (this K step's) still in flight: the MMAs of step t - 1 are done, so the
    // stage they read can be handed back to the producer.
    asm volatile("wgmma.wait_group.sync.aligned 1;\n" ::: "memory");
    if (t > 0 && tid == 0) mbar_arrive(bar(empty, (t - 1) % G::kStages));
  }
  asm volatile("wgmma.wait_group.sync.aligned 0;\n" ::: "memory");

  // Accumulator layout of m64nNk16: warp w of the warpgroup holds rows 16 w + lane / 4 (+ 8);
  // register 4 j + {0, 1} are columns 8 j + 2 (lane % 4) + {0, 1}, 4 j + {2, 3} the same 8 rows
  // lower.
  const int warp = tid / 32, lane = tid % 32;
  const int row = bm + c * 64 + warp * 16 + lane / 4;
#pragma unroll
  for (int j = 0; j < BN / 8; ++j) {
    float* c0 = C + static_cast<std::size_t>(row) * N + bn + 8 * j + 2 * (lane % 4);
    *reinterpret_cast<float2*>(c0) = make_float2(d[4 * j], d[4 * j + 1]);
    *reinterpret_cast<float2*>(c0 + 8 * static_cast<std::size_t>(N)) =
        make_float2(d[4 * j + 2], d[4 * j + 3]);
  }
#else
  // Built for an architecture without wgmma: never launched (the host checks for cc 9.0).
  (void)tm_a;
  (void)tm_b;
  (void)M;
  (void)N;
  (void)K;
  (void)C;
  __trap();
#endif
}

// cuTensorMapEncodeTiled is a driver API function. Fetched through the runtime so that nothing
// links libcuda (the test programs must start on machines without a GPU driver).
PFN_cuTensorMapEncodeTiled_v12000 tensor_map_encoder() {
  static const auto fn = [] {
    void* p = nullptr;
    cudaDriverEntryPointQueryResult found{};
    CUDALAB_CHECK(cudaGetDriverEntryPointByVersion("cuTensorMapEncodeTiled", &p, 12000,
                                                   cudaEnableDefault, &found));
    if (found != cudaDriverEntryPointSuccess || p == nullptr)
      throw std::runtime_error(
          "the CUDA driver has no cuTensorMapEncodeTiled (a driver for CUDA 12.0+ is needed)");
    return reinterpret_cast<PFN_cuTensorMapEncodeTiled_v12000>(p);
  }();
  return fn;
}

// A (rows, K) row-major bf16 matrix, read in boxes of (64 along K, box_rows), 128-byte swizzled.
CUtensorMap k_major_tensor_map(const __nv_bfloat16* p, int rows, int K, int box_rows) {
  CUtensorMap map;
  const cuuint64_t dims[2] = {static_cast<cuuint64_t>(K),
                              static_cast<cuuint64_t>(rows)};  // innermost first
  const cuuint64_t strides[1] = {static_cast<cuuint64_t>(K) *
                                 sizeof(__nv_bfloat16)};  // bytes, dims 1..
  const cuuint32_t box[2] = {64, static_cast<cuuint32_t>(box_rows)};
  const cuuint32_t element_strides[2] = {1, 1};
  const CUresult r = tensor_map_encoder()(
      &map, CU_TENSOR_MAP_DATA_TYPE_BFLOAT16, 2, const_cast<__nv_bfloat16*>(p), dims, strides, box,
      element_strides, CU_TENSOR_MAP_INTERLEAVE_NONE, CU_TENSOR_MAP_SWIZZLE_128B,
      CU_TENSOR_MAP_L2_PROMOTION_L2_256B, CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE);
  if (r != CUDA_SUCCESS)
    throw LibraryError("CUDA driver", static_cast<long>(r), "cuTensorMapEncodeTiled failed",
                       "k_major_tensor_map", __FILE__, __LINE__);
  return map;
}

template <int BN>
void launch_wgmma(int M, int N, int K, const __nv_bfloat16* A, const __nv_bfloat16* Bt, float* C,
                  cudaStream_t stream) {
  using G = WgmmaConfig<BN>;
  const CUtensorMap tm_a = k_major_tensor_map(A, M, K, G::kBM);
  const CUtensorMap tm_b = k_major_tensor_map(Bt, N, K, BN);
  set_kernel_attribute_once(wgmma_gemm_kernel<BN>, cudaFuncAttributeMaxDynamicSharedMemorySize,
                            G::kSmemBytes);
  const unsigned blocks = static_cast<unsigned>(M / G::kBM) * static_cast<unsigned>(N / BN);
  wgmma_gemm_kernel<BN><<<blocks, G::kThreads, G::kSmemBytes, stream>>>(tm_a, tm_b, M, N, K, C);
  CUDALAB_CHECK_LAUNCH();
}

}  // namespace

bool wgmma_supported() {
  return has_gpu() && current_cc() == 90;
}  // cheap: checked on every call

void wgmma_gemm_bf16_tn(int M, int N, int K, const __nv_bfloat16* A, const __nv_bfloat16* Bt,
                        float* C, cudaStream_t stream) {
  require(M >= 0 && M % 128 == 0, "M", "must be a multiple of 128 (wgmma path precondition)");
  require(N >= 0 && N % 128 == 0, "N", "must be a multiple of 128 (wgmma path precondition)");
  require(K > 0 && K % 64 == 0, "K", "must be a positive multiple of 64 (wgmma path precondition)");
  require(static_cast<long long>(M / 128) * (N / 128) <= 0x7FFFFFFF, "M, N",
          "too large for one grid (2^31 - 1 blocks)");
  if (M == 0 || N == 0) return;
  require_device_pointer(A, static_cast<std::size_t>(M) * K, "A");
  require_device_pointer(Bt, static_cast<std::size_t>(N) * K, "Bt");
  require_device_pointer(C, static_cast<std::size_t>(M) * N, "C");
  require(is_aligned(A, 16) && is_aligned(Bt, 16) && is_aligned(C, 16), "A, Bt, C",
          "must be 16-byte aligned");
  if (!wgmma_supported())
    throw std::runtime_error(
        "wgmma_gemm_bf16_tn needs a GPU of compute capability 9.0 (sm_90a: H100/H200)");
  if (N % 256 == 0) return launch_wgmma<256>(M, N, K, A, Bt, C, stream);
  launch_wgmma<128>(M, N, K, A, Bt, C, stream);
}

}  // namespace cudalab::ch06
