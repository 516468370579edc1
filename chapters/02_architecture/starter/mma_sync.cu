// Starter track — write your code at the TODO marks; the tests of each exercise
// fail until you do. (Generated from chapters/02_architecture/reference/mma_sync.cu by scripts/variants.py.)
// Tensor cores through mma.sync (worked example): the tensor rows of the card per type, the way
// Ampere-style kernels (and chapter 6's WMMA GEMM) drive them, plus a 2:4 sparse row (mma.sp).
//
// What it computes: each warp issues `iterations` x kChains mma.sync on register operands that
// hold 1.0 (or 1) everywhere, into kChains independent accumulators (an mma's latency is ~30
// cycles: one chain would leave the tensor cores idle), then each thread writes the sum of its
// accumulator registers. No memory traffic: this is the issue rate of the instruction, the
// ceiling a register-fed mma.sync GEMM cannot beat. On Hopper it stays well under the sheet:
// the full rate needs wgmma (wgmma_peak.cu), which reads its operands from shared memory
// asynchronously.
// Shapes: m16n8k16 (fp16, bf16), m16n8k8 (tf32), m16n8k32 (int8, fp8 e4m3; sparse bf16 with the
// dense-equivalent K = 32: half the A values are stored, the metadata says which).
// Launch shape: blocks x threads (a multiple of 32). fp8 needs sm_89; the others sm_80.
#include <stdexcept>

#include "ch02/ch02.hpp"
#include "cudalab/check.hpp"
#include "cudalab/device.hpp"

namespace cudalab::ch02 {
namespace {

constexpr int kMaxThreads = 1024;
constexpr int kChains = 4;

// 1.0 in each type, packed in the 32-bit registers the instructions take.
constexpr std::uint32_t kOneF16x2 = 0x3C003C00u, kOneBf16x2 = 0x3F803F80u, kOneTf32 = 0x3F800000u,
                        kOneS8x4 = 0x01010101u, kOneE4m3x4 = 0x38383838u;
// 2:4 metadata: in every group of 4 K values, the stored two are positions 0 and 1 (2 bits each).
constexpr std::uint32_t kMeta01 = 0x44444444u;

template <MmaKind K>
__device__ __forceinline__ void mma(float (&d)[4], std::uint32_t a, std::uint32_t b) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
  if constexpr (K == MmaKind::fp16) {
    asm volatile(
        "mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, "
        "{%8,%9}, {%0,%1,%2,%3};"
        : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
        : "r"(a), "r"(a), "r"(a), "r"(a), "r"(b), "r"(b));
  } else if constexpr (K == MmaKind::bf16) {
    asm volatile(
        "mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, "
        "{%8,%9}, {%0,%1,%2,%3};"
        : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
        : "r"(a), "r"(a), "r"(a), "r"(a), "r"(b), "r"(b));
  } else if constexpr (K == MmaKind::tf32) {
    asm volatile(
        "mma.sync.aligned.m16n8k8.row.col.f32.tf32.tf32.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, "
        "{%8,%9}, {%0,%1,%2,%3};"
        : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
        : "r"(a), "r"(a), "r"(a), "r"(a), "r"(b), "r"(b));
  } else if constexpr (K == MmaKind::bf16_sparse) {
    asm volatile(
        "mma.sp.sync.aligned.m16n8k32.row.col.f32.bf16.bf16.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, "
        "{%8,%9,%10,%11}, {%0,%1,%2,%3}, %12, 0x0;"
        : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
        : "r"(a), "r"(a), "r"(a), "r"(a), "r"(b), "r"(b), "r"(b), "r"(b), "r"(kMeta01));
  } else if constexpr (K == MmaKind::fp8) {
#if __CUDA_ARCH__ >= 890
    asm volatile(
        "mma.sync.aligned.m16n8k32.row.col.f32.e4m3.e4m3.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, "
        "{%8,%9}, {%0,%1,%2,%3};"
        : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
        : "r"(a), "r"(a), "r"(a), "r"(a), "r"(b), "r"(b));
#else
    __trap();  // never launched: the host checks for sm_89 first
#endif
  }
#else
  (void)d, (void)a, (void)b;
  __trap();
#endif
}

template <MmaKind K>
__global__ void __launch_bounds__(kMaxThreads)
    mma_kernel(float* __restrict__ out, int iterations, std::uint32_t a, std::uint32_t b) {
  float sum = 0.0f;
  if constexpr (K == MmaKind::int8) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
    int d[kChains][4] = {};
    for (int i = 0; i < iterations; ++i) {
#pragma unroll
      for (int c = 0; c < kChains; ++c)
        asm volatile(
            "mma.sync.aligned.m16n8k32.row.col.s32.s8.s8.s32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, "
            "{%8,%9}, {%0,%1,%2,%3};"
            : "+r"(d[c][0]), "+r"(d[c][1]), "+r"(d[c][2]), "+r"(d[c][3])
            : "r"(a), "r"(a), "r"(a), "r"(a), "r"(b), "r"(b));
    }
#pragma unroll
    for (int c = 0; c < kChains; ++c)
      sum += static_cast<float>((d[c][0] + d[c][1]) + (d[c][2] + d[c][3]));
#else
    (void)iterations, (void)a, (void)b;
#endif
  } else {
    float d[kChains][4] = {};
    for (int i = 0; i < iterations; ++i) {
#pragma unroll
      for (int c = 0; c < kChains; ++c) mma<K>(d[c], a, b);
    }
#pragma unroll
    for (int c = 0; c < kChains; ++c) sum += (d[c][0] + d[c][1]) + (d[c][2] + d[c][3]);
  }
  out[blockIdx.x * static_cast<std::size_t>(blockDim.x) + threadIdx.x] = sum;
}

// (M, N, K) of one instruction, K dense-equivalent; and the K actually summed per output element
// (half of K for the sparse row: only the stored values are non-zero).
struct Shape {
  int m, n, k, k_summed;
};
Shape shape(MmaKind kind) {
  switch (kind) {
    case MmaKind::fp16:
    case MmaKind::bf16:
      return {16, 8, 16, 16};
    case MmaKind::tf32:
      return {16, 8, 8, 8};
    case MmaKind::int8:
    case MmaKind::fp8:
      return {16, 8, 32, 32};
    case MmaKind::bf16_sparse:
      return {16, 8, 32, 16};
  }
  throw std::invalid_argument("'kind': unknown MmaKind");
}

}  // namespace

bool mma_supported(MmaKind kind) {
  if (!has_gpu()) return false;
  const int cc = current_cc();
  return kind == MmaKind::fp8 ? cc >= 89 : cc >= 80;
}

void mma_throughput(MmaKind kind, float* out, int blocks, int threads, int iterations,
                    cudaStream_t stream) {
  require(out != nullptr, "out", "must not be null");
  require(blocks >= 1, "blocks", "must be >= 1");
  require(threads >= 32 && threads <= kMaxThreads && threads % 32 == 0, "threads",
          "must be a multiple of 32 in [32, 1024]");
  require(iterations >= 1 && iterations <= (1 << 16), "iterations",
          "must be in [1, 2^16] (the sums stay exact)");
  if (!mma_supported(kind))
    throw std::runtime_error(kind == MmaKind::fp8
                                 ? "mma_throughput: fp8 (e4m3) mma.sync needs sm_89 or newer"
                                 : "mma_throughput: mma.sync needs sm_80 or newer");
  switch (kind) {
    case MmaKind::fp16:
      mma_kernel<MmaKind::fp16>
          <<<blocks, threads, 0, stream>>>(out, iterations, kOneF16x2, kOneF16x2);
      break;
    case MmaKind::bf16:
      mma_kernel<MmaKind::bf16>
          <<<blocks, threads, 0, stream>>>(out, iterations, kOneBf16x2, kOneBf16x2);
      break;
    case MmaKind::tf32:
      mma_kernel<MmaKind::tf32>
          <<<blocks, threads, 0, stream>>>(out, iterations, kOneTf32, kOneTf32);
      break;
    case MmaKind::int8:
      mma_kernel<MmaKind::int8>
          <<<blocks, threads, 0, stream>>>(out, iterations, kOneS8x4, kOneS8x4);
      break;
    case MmaKind::fp8:
      mma_kernel<MmaKind::fp8>
          <<<blocks, threads, 0, stream>>>(out, iterations, kOneE4m3x4, kOneE4m3x4);
      break;
    case MmaKind::bf16_sparse:
      mma_kernel<MmaKind::bf16_sparse>
          <<<blocks, threads, 0, stream>>>(out, iterations, kOneBf16x2, kOneBf16x2);
      break;
  }
  CUDALAB_CHECK_LAUNCH();
}

double mma_flops(MmaKind kind, int blocks, int threads, int iterations) {
  const Shape s = shape(kind);
  const double mmas = static_cast<double>(blocks) * (threads / 32) * iterations * kChains;
  return mmas * 2.0 * s.m * s.n * s.k;
}

double mma_expected(MmaKind kind, int iterations) {
  // Each of a thread's 4 accumulator registers per chain gains k_summed per mma.
  return static_cast<double>(kChains) * 4 * iterations * shape(kind).k_summed;
}

}  // namespace cudalab::ch02
