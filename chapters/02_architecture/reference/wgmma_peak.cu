// Tensor cores through wgmma (worked example, sm_90a only): the Hopper issue path that reaches
// the sheet's tensor rows. Chapter 6's wgmma_gemm.cu feeds it from TMA; here the operands stay
// in shared memory, so the row measures the tensor cores alone.
//
// What it computes: every warpgroup (128 threads) zeroes 128 fp32 accumulators per thread (a
// 64 x 256 tile) and issues `iterations` x 4 wgmma.mma_async m64n256k16 (bf16) or m64n256k32
// (fp8 e4m3) reading A (64 x 64 bf16 / 64 x 128 fp8: 8 KiB) and B (256 rows: 32 KiB) from shared
// memory filled with 1.0, the four K steps of one 128-byte swizzled row (chapter 6's layout).
// Consecutive wgmma of one shape on the same accumulators need no fence between them (PTX ISA,
// wgmma.fence): the loop commits one group per iteration and keeps one in flight
// (wait_group 1), like a GEMM main loop. Each thread writes the sum of its accumulators.
// Launch shape: blocks x threads, threads a multiple of 128 (one warpgroup per 128), at most
// kMaxThreads; 41 KiB of dynamic shared memory per block.
#include <stdexcept>

#include "ch02/ch02.hpp"
#include "cudalab/check.hpp"
#include "cudalab/device.hpp"

namespace cudalab::ch02 {
namespace {

constexpr int kMaxThreads = 256;  // two warpgroups: 2 x 128 accumulator registers per thread
constexpr int kABytes = 64 * 128, kBBytes = 256 * 128;
constexpr int kSmemBytes = kABytes + kBBytes + 1024;  // + slack to align the tiles to 1024 B
constexpr int kKSteps = 4;                            // 128-byte row / 32 bytes per K step
static_assert(kSmemBytes <= 48 * 1024, "stays under the default dynamic shared memory limit");

#if defined(__CUDA_ARCH_FEAT_SM90_ALL)
__device__ __forceinline__ std::uint64_t smem_desc(std::uint32_t smem_addr) {
  // start >> 4, leading byte offset 16 (unused with swizzle), stride byte offset 1024 (8 rows x
  // 128 B), 128-byte swizzle (mode 1 in bits 62-63).
  auto enc = [](std::uint64_t x) { return (x & 0x3FFFF) >> 4; };
  return enc(smem_addr) | enc(16) << 16 | enc(1024) << 32 | std::uint64_t{1} << 62;
}

#define CUDALAB_CH02_ACC8(d, b)                                                             \
  "+f"(d[(b) + 0]), "+f"(d[(b) + 1]), "+f"(d[(b) + 2]), "+f"(d[(b) + 3]), "+f"(d[(b) + 4]), \
      "+f"(d[(b) + 5]), "+f"(d[(b) + 6]), "+f"(d[(b) + 7])
#define CUDALAB_CH02_ACC32(d, b)                                                                \
  CUDALAB_CH02_ACC8(d, (b) + 0), CUDALAB_CH02_ACC8(d, (b) + 8), CUDALAB_CH02_ACC8(d, (b) + 16), \
      CUDALAB_CH02_ACC8(d, (b) + 24)
#define CUDALAB_CH02_ACC128(d)                                                    \
  CUDALAB_CH02_ACC32(d, 0), CUDALAB_CH02_ACC32(d, 32), CUDALAB_CH02_ACC32(d, 64), \
      CUDALAB_CH02_ACC32(d, 96)
#define CUDALAB_CH02_REGS128                                                                   \
  "{%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, %16, %17, %18, "     \
  "%19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31, %32, %33, %34, %35, %36, " \
  "%37, %38, %39, %40, %41, %42, %43, %44, %45, %46, %47, %48, %49, %50, %51, %52, %53, %54, " \
  "%55, %56, %57, %58, %59, %60, %61, %62, %63, %64, %65, %66, %67, %68, %69, %70, %71, %72, " \
  "%73, %74, %75, %76, %77, %78, %79, %80, %81, %82, %83, %84, %85, %86, %87, %88, %89, %90, " \
  "%91, %92, %93, %94, %95, %96, %97, %98, %99, %100, %101, %102, %103, %104, %105, %106, "    \
  "%107, %108, %109, %110, %111, %112, %113, %114, %115, %116, %117, %118, %119, %120, %121, " \
  "%122, %123, %124, %125, %126, %127}"

template <WgmmaKind K>
__device__ __forceinline__ void wgmma(float (&d)[128], std::uint64_t a, std::uint64_t b) {
  if constexpr (K == WgmmaKind::bf16) {
    asm volatile(
        "{\n.reg .pred p;\nsetp.ne.b32 p, %130, 0;\n"
        "wgmma.mma_async.sync.aligned.m64n256k16.f32.bf16.bf16 " CUDALAB_CH02_REGS128
        ", %128, %129, p, 1, 1, 0, 0;\n}\n"
        : CUDALAB_CH02_ACC128(d)
        : "l"(a), "l"(b), "r"(1));
  } else {
    asm volatile(
        "{\n.reg .pred p;\nsetp.ne.b32 p, %130, 0;\n"
        "wgmma.mma_async.sync.aligned.m64n256k32.f32.e4m3.e4m3 " CUDALAB_CH02_REGS128
        ", %128, %129, p, 1, 1;\n}\n"
        : CUDALAB_CH02_ACC128(d)
        : "l"(a), "l"(b), "r"(1));
  }
}
#endif

template <WgmmaKind K>
__global__ void __launch_bounds__(kMaxThreads, 1)
    wgmma_kernel(float* __restrict__ out, int iterations, std::uint32_t one4) {
#if defined(__CUDA_ARCH_FEAT_SM90_ALL)
  extern __shared__ __align__(1024) unsigned char smem_raw[];
  const std::uint32_t raw = static_cast<std::uint32_t>(__cvta_generic_to_shared(smem_raw));
  const std::uint32_t a_addr = (raw + 1023) & ~1023u, b_addr = a_addr + kABytes;
  unsigned char* tiles = smem_raw + (a_addr - raw);
  // 1.0 everywhere (bf16 pairs or fp8 quadruples): the result does not depend on the layout.
  for (int i = threadIdx.x; i < (kABytes + kBBytes) / 4; i += blockDim.x)
    reinterpret_cast<std::uint32_t*>(tiles)[i] = one4;
  // Generic-proxy stores must be visible to the async proxy that wgmma reads shared memory with.
  asm volatile("fence.proxy.async.shared::cta;\n" ::: "memory");
  __syncthreads();  // every tile byte is written before any warpgroup issues a wgmma

  float d[128];
#pragma unroll
  for (int r = 0; r < 128; ++r) d[r] = 0.0f;
  const std::uint64_t da = smem_desc(a_addr), db = smem_desc(b_addr);
  asm volatile("wgmma.fence.sync.aligned;\n" ::: "memory");
  for (int i = 0; i < iterations; ++i) {
#pragma unroll
    for (int k = 0; k < kKSteps; ++k) wgmma<K>(d, da + 2 * k, db + 2 * k);  // +32 B per K step
    asm volatile("wgmma.commit_group.sync.aligned;\n" ::: "memory");
    asm volatile("wgmma.wait_group.sync.aligned 1;\n" ::: "memory");
  }
  asm volatile("wgmma.wait_group.sync.aligned 0;\n" ::: "memory");
  float s = 0.0f;
#pragma unroll
  for (int r = 0; r < 128; ++r) s += d[r];
  out[blockIdx.x * static_cast<std::size_t>(blockDim.x) + threadIdx.x] = s;
#else
  (void)out, (void)iterations, (void)one4;
  __trap();  // never launched: no sm_90a image, and the host checks the device first
#endif
}

}  // namespace

bool wgmma_supported() {
  return has_gpu() && current_cc() == 90;
}

void wgmma_throughput(WgmmaKind kind, float* out, int blocks, int threads, int iterations,
                      cudaStream_t stream) {
  require(out != nullptr, "out", "must not be null");
  require(blocks >= 1, "blocks", "must be >= 1");
  require(threads >= 128 && threads <= kMaxThreads && threads % 128 == 0, "threads",
          "must be 128 or 256 (whole warpgroups)");
  require(iterations >= 1 && iterations <= (1 << 16), "iterations",
          "must be in [1, 2^16] (the sums stay exact)");
  if (!wgmma_supported())
    throw std::runtime_error(
        "wgmma_throughput: wgmma needs a compute capability 9.0 GPU "
        "(sm_90a)");
  if (kind == WgmmaKind::bf16)
    wgmma_kernel<WgmmaKind::bf16>
        <<<blocks, threads, kSmemBytes, stream>>>(out, iterations, 0x3F803F80u);
  else
    wgmma_kernel<WgmmaKind::fp8>
        <<<blocks, threads, kSmemBytes, stream>>>(out, iterations, 0x38383838u);
  CUDALAB_CHECK_LAUNCH();
}

double wgmma_flops(WgmmaKind kind, int blocks, int threads, int iterations) {
  const double k = kind == WgmmaKind::bf16 ? 16 : 32;
  const double wgmmas = static_cast<double>(blocks) * (threads / 128) * iterations * kKSteps;
  return wgmmas * 2.0 * 64 * 256 * k;
}

double wgmma_expected(WgmmaKind kind, int iterations) {
  // 128 accumulators per thread, each gaining K (all ones) per wgmma.
  return 128.0 * iterations * kKSteps * (kind == WgmmaKind::bf16 ? 16 : 32);
}

}  // namespace cudalab::ch02
