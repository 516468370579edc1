// The Hopper prefill (worked example, the chapter's tensor-core stretch): the contract of
// flash_prefill_attention (ch11.hpp: causal, q/out [batch][len][q_heads][head_dim], k/v
// [batch][len][kv_heads][head_dim], bf16 or fp16, head_dim 64 or 128, GQA, any len) on sm_90a, in
// FlashAttention-3's design (Shah et al., 2024): TMA loads, wgmma, and warp specialization.
//
//   CTA: 384 threads = 3 warpgroups, one per (128-row query tile, query head, sequence); grid
//   (batch * q_heads, query tiles), blockIdx.y reversed so the heaviest tiles start first.
//   Warpgroup 0, the producer, gives up registers (setmaxnreg 24); one of its threads issues every
//   TMA load: the Q tile once, then K and V tiles of 128 keys into two 2-stage rings. Warpgroups 1
//   and 2, the consumers (setmaxnreg 240), own 64 query rows each.
//   Shared memory: Q 32 KiB, K and V 2 x 32 KiB each, an output staging tile, the mbarriers (195
//   KiB at head_dim 128, 99 KiB at 64); every tile 128-byte swizzled, 1024-byte aligned.
//   Synchronization: each stage has a "full" mbarrier (the producer's expect_tx, the TMA's
//   complete_tx) and an "empty" one (one arrive per consumer warp once its wgmma reading the stage
//   has completed); stage g % 2, phase (g / 2) & 1 for K/V tile g.
//   S = Q K^T: wgmma m64n128k16, both operands K-major from shared memory (descriptors of the
//   128-byte swizzle). Online softmax in registers on the accumulator layout (row max and sum over
//   the 4 lanes of a quad; exp2 with scale * log2(e) folded in, so scale must be positive). P is
//   packed to bf16/fp16 in registers: the accumulator fragment of 16 columns is exactly the A
//   register fragment of the next wgmma, so O += P V takes P from registers and V from shared
//   memory as an MN-major (transposed) B operand.
//   Overlap: a consumer issues S(n) and P(n-1) V(n-1) together and runs softmax(n) while the second
//   is on the tensor cores; the two consumers take turns issuing (named barriers 1 and 2), so one
//   warpgroup's softmax also overlaps the other's GEMMs.
//   Edges: the tensor maps are 4-D (head_dim, heads, tokens, sequences): a box past the last token
//   reads zeros, never the next sequence or head; keys past the diagonal or past len are masked to
//   -inf on the tiles that cross them; rows past len are not stored.
// The design was first written and checked in a side harness (33 odd shapes x 4 variants against a
// naive reference, on an H100); its variants without the overlap, with one consumer, or persistent
// are not kept here. Measured beside cuDNN's SDPA: the chapter README's results block
// (BM_prefill_wgmma/* and BM_prefill_cudnn/*).
#include <cuda.h>  // CUtensorMap and its enums (types only: the driver function is fetched at run time)
#include <cudaTypedefs.h>
#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include <cmath>
#include <cstddef>
#include <cstdint>
#include <stdexcept>

#include "ch11/ch11.hpp"
#include "cudalab/check.hpp"
#include "cudalab/device.hpp"
#include "cudalab/launch.hpp"
#include "cudalab/math.hpp"

namespace cudalab::ch11 {
namespace {

// ---------------------------------------------------------------------------------------------
// Device helpers: mbarrier, TMA, wgmma, named barriers, setmaxnreg
// ---------------------------------------------------------------------------------------------
__device__ __forceinline__ uint32_t smem_u32(const void* p) {
  return static_cast<uint32_t>(__cvta_generic_to_shared(p));
}
__device__ __forceinline__ void mbar_init(uint32_t bar, uint32_t count) {
  asm volatile("mbarrier.init.shared::cta.b64 [%0], %1;\n" ::"r"(bar), "r"(count) : "memory");
}
__device__ __forceinline__ void fence_barrier_init() {
  asm volatile("fence.mbarrier_init.release.cluster;\n" ::: "memory");
  asm volatile("fence.proxy.async.shared::cta;\n" ::: "memory");
}
__device__ __forceinline__ void mbar_expect_tx(uint32_t bar, uint32_t bytes) {
  asm volatile("mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], %1;\n" ::"r"(bar), "r"(bytes)
               : "memory");
}
__device__ __forceinline__ void mbar_arrive(uint32_t bar) {
  asm volatile("{\n.reg .b64 st;\nmbarrier.arrive.shared::cta.b64 st, [%0];\n}\n" ::"r"(bar)
               : "memory");
}
__device__ __forceinline__ bool mbar_try_wait(uint32_t bar, uint32_t parity) {
  uint32_t ok;
  asm volatile(
      "{\n.reg .pred p;\nmbarrier.try_wait.parity.shared::cta.b64 p, [%1], %2;\nselp.u32 %0, 1, 0, "
      "p;\n}\n"
      : "=r"(ok)
      : "r"(bar), "r"(parity)
      : "memory");
  return ok != 0;
}
// Wait until the phase with the given parity has completed.
__device__ __forceinline__ void mbar_wait(uint32_t bar, uint32_t parity) {
  while (!mbar_try_wait(bar, parity)) {
  }
}
// 4D tiled TMA load global -> shared, completion signalled on an mbarrier (complete_tx::bytes).
__device__ __forceinline__ void tma_load_4d(uint32_t dst, const CUtensorMap* map, uint32_t bar,
                                            int c0, int c1, int c2, int c3) {
  asm volatile(
      "cp.async.bulk.tensor.4d.shared::cluster.global.tile.mbarrier::complete_tx::bytes"
      " [%0], [%1, {%3, %4, %5, %6}], [%2];\n" ::"r"(dst),
      "l"(reinterpret_cast<uint64_t>(map)), "r"(bar), "r"(c0), "r"(c1), "r"(c2), "r"(c3)
      : "memory");
}
__device__ __forceinline__ void prefetch_tmap(const CUtensorMap* map) {
  asm volatile("prefetch.tensormap [%0];\n" ::"l"(reinterpret_cast<uint64_t>(map)) : "memory");
}
__device__ __forceinline__ void named_bar_sync(int id, int n) {
  asm volatile("bar.sync %0, %1;\n" ::"r"(id), "r"(n) : "memory");
}
__device__ __forceinline__ void named_bar_arrive(int id, int n) {
  asm volatile("bar.arrive %0, %1;\n" ::"r"(id), "r"(n) : "memory");
}
template <int R>
__device__ __forceinline__ void setmaxnreg_dec() {
  asm volatile("setmaxnreg.dec.sync.aligned.u32 %0;\n" ::"n"(R));
}
template <int R>
__device__ __forceinline__ void setmaxnreg_inc() {
  asm volatile("setmaxnreg.inc.sync.aligned.u32 %0;\n" ::"n"(R));
}
__device__ __forceinline__ void wg_fence() {
  asm volatile("wgmma.fence.sync.aligned;\n" ::: "memory");
}
__device__ __forceinline__ void wg_commit() {
  asm volatile("wgmma.commit_group.sync.aligned;\n" ::: "memory");
}
template <int N>
__device__ __forceinline__ void wg_wait() {
  asm volatile("wgmma.wait_group.sync.aligned %0;\n" ::"n"(N) : "memory");
}
// Pin the ordering of register reads/writes relative to the (volatile) wgmma asm statements.
template <int N>
__device__ __forceinline__ void fence_regs(float (&r)[N]) {
#pragma unroll
  for (int i = 0; i < N; ++i) asm volatile("" : "+f"(r[i])::"memory");
}
template <int N>
__device__ __forceinline__ void fence_regs(uint32_t (&r)[N][4]) {
#pragma unroll
  for (int i = 0; i < N; ++i)
#pragma unroll
    for (int j = 0; j < 4; ++j) asm volatile("" : "+r"(r[i][j])::"memory");
}
__device__ __forceinline__ float ex2(float x) {
  float y;
  asm("ex2.approx.ftz.f32 %0, %1;\n" : "=f"(y) : "f"(x));
  return y;
}
template <bool BF16>
__device__ __forceinline__ uint32_t pack2(float lo, float hi) {
  if constexpr (BF16) {
    __nv_bfloat162 v = __floats2bfloat162_rn(lo, hi);  // .x (low 16 bits) = lo
    return *reinterpret_cast<uint32_t*>(&v);
  } else {
    __half2 v = __floats2half2_rn(lo, hi);
    return *reinterpret_cast<uint32_t*>(&v);
  }
}
// wgmma shared-memory matrix descriptor, 128-byte swizzle. Bits 0-13: start address >> 4,
// 16-29: leading-dimension byte offset >> 4, 32-45: stride byte offset >> 4 (1024 B = one
// 8-row x 128 B swizzle atom), 62-63: layout type 1 = SWIZZLE_128B; base offset 0 (all tiles
// are 1024-byte aligned; k-steps inside an atom only move the start address by 32/64/96 B).
__device__ __forceinline__ uint64_t sw128_desc(uint32_t saddr, uint32_t lbo_bytes) {
  return static_cast<uint64_t>((saddr & 0x3FFFFu) >> 4) |
         (static_cast<uint64_t>((lbo_bytes & 0x3FFFFu) >> 4) << 16) |
         (static_cast<uint64_t>(1024u >> 4) << 32) | (1ull << 62);
}

// wgmma.mma_async wrappers (generated): m64nNk16, f32 accumulate.
//   wgmma_ss: A and B from smem descriptors, both K-major (tnspA = tnspB = 0), scale_d runtime
//             (N = 128 only: the S tile is 128 keys wide).
//   wgmma_rs: A from 4 registers (bf16x2/f16x2), B from smem descriptor with tnspB = 1 (MN-major),
//             always accumulates.
template <int N, bool BF16>
__device__ __forceinline__ void wgmma_ss(float (&d)[N / 2], uint64_t da, uint64_t db, int scale_d);
template <int N, bool BF16>
__device__ __forceinline__ void wgmma_rs(float (&d)[N / 2], const uint32_t (&a)[4], uint64_t db);
template <>
__device__ __forceinline__ void wgmma_rs<64, true>(float (&d)[32], const uint32_t (&a)[4],
                                                   uint64_t db) {
  asm volatile(
      "{\n.reg .pred p;\nsetp.ne.b32 p, %37, 0;\n"
      "wgmma.mma_async.sync.aligned.m64n64k16.f32.bf16.bf16 {%0, %1, %2, %3, %4, %5, %6, %7, %8, "
      "%9, %10, %11, %12, %13, %14, %15, %16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, "
      "%27, %28, %29, %30, %31}, {%32, %33, %34, %35}, %36, p, 1, 1, 1;\n}\n"
      : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]), "+f"(d[6]),
        "+f"(d[7]), "+f"(d[8]), "+f"(d[9]), "+f"(d[10]), "+f"(d[11]), "+f"(d[12]), "+f"(d[13]),
        "+f"(d[14]), "+f"(d[15]), "+f"(d[16]), "+f"(d[17]), "+f"(d[18]), "+f"(d[19]), "+f"(d[20]),
        "+f"(d[21]), "+f"(d[22]), "+f"(d[23]), "+f"(d[24]), "+f"(d[25]), "+f"(d[26]), "+f"(d[27]),
        "+f"(d[28]), "+f"(d[29]), "+f"(d[30]), "+f"(d[31])
      : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "l"(db), "r"(1));
}
template <>
__device__ __forceinline__ void wgmma_rs<64, false>(float (&d)[32], const uint32_t (&a)[4],
                                                    uint64_t db) {
  asm volatile(
      "{\n.reg .pred p;\nsetp.ne.b32 p, %37, 0;\n"
      "wgmma.mma_async.sync.aligned.m64n64k16.f32.f16.f16 {%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, "
      "%10, %11, %12, %13, %14, %15, %16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, "
      "%28, %29, %30, %31}, {%32, %33, %34, %35}, %36, p, 1, 1, 1;\n}\n"
      : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]), "+f"(d[6]),
        "+f"(d[7]), "+f"(d[8]), "+f"(d[9]), "+f"(d[10]), "+f"(d[11]), "+f"(d[12]), "+f"(d[13]),
        "+f"(d[14]), "+f"(d[15]), "+f"(d[16]), "+f"(d[17]), "+f"(d[18]), "+f"(d[19]), "+f"(d[20]),
        "+f"(d[21]), "+f"(d[22]), "+f"(d[23]), "+f"(d[24]), "+f"(d[25]), "+f"(d[26]), "+f"(d[27]),
        "+f"(d[28]), "+f"(d[29]), "+f"(d[30]), "+f"(d[31])
      : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "l"(db), "r"(1));
}
template <>
__device__ __forceinline__ void wgmma_ss<128, true>(float (&d)[64], uint64_t da, uint64_t db,
                                                    int scale_d) {
  asm volatile(
      "{\n.reg .pred p;\nsetp.ne.b32 p, %66, 0;\n"
      "wgmma.mma_async.sync.aligned.m64n128k16.f32.bf16.bf16 {%0, %1, %2, %3, %4, %5, %6, %7, %8, "
      "%9, %10, %11, %12, %13, %14, %15, %16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, "
      "%27, %28, %29, %30, %31, %32, %33, %34, %35, %36, %37, %38, %39, %40, %41, %42, %43, %44, "
      "%45, %46, %47, %48, %49, %50, %51, %52, %53, %54, %55, %56, %57, %58, %59, %60, %61, %62, "
      "%63}, %64, %65, p, 1, 1, 0, 0;\n}\n"
      : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]), "+f"(d[6]),
        "+f"(d[7]), "+f"(d[8]), "+f"(d[9]), "+f"(d[10]), "+f"(d[11]), "+f"(d[12]), "+f"(d[13]),
        "+f"(d[14]), "+f"(d[15]), "+f"(d[16]), "+f"(d[17]), "+f"(d[18]), "+f"(d[19]), "+f"(d[20]),
        "+f"(d[21]), "+f"(d[22]), "+f"(d[23]), "+f"(d[24]), "+f"(d[25]), "+f"(d[26]), "+f"(d[27]),
        "+f"(d[28]), "+f"(d[29]), "+f"(d[30]), "+f"(d[31]), "+f"(d[32]), "+f"(d[33]), "+f"(d[34]),
        "+f"(d[35]), "+f"(d[36]), "+f"(d[37]), "+f"(d[38]), "+f"(d[39]), "+f"(d[40]), "+f"(d[41]),
        "+f"(d[42]), "+f"(d[43]), "+f"(d[44]), "+f"(d[45]), "+f"(d[46]), "+f"(d[47]), "+f"(d[48]),
        "+f"(d[49]), "+f"(d[50]), "+f"(d[51]), "+f"(d[52]), "+f"(d[53]), "+f"(d[54]), "+f"(d[55]),
        "+f"(d[56]), "+f"(d[57]), "+f"(d[58]), "+f"(d[59]), "+f"(d[60]), "+f"(d[61]), "+f"(d[62]),
        "+f"(d[63])
      : "l"(da), "l"(db), "r"(scale_d));
}
template <>
__device__ __forceinline__ void wgmma_rs<128, true>(float (&d)[64], const uint32_t (&a)[4],
                                                    uint64_t db) {
  asm volatile(
      "{\n.reg .pred p;\nsetp.ne.b32 p, %69, 0;\n"
      "wgmma.mma_async.sync.aligned.m64n128k16.f32.bf16.bf16 {%0, %1, %2, %3, %4, %5, %6, %7, %8, "
      "%9, %10, %11, %12, %13, %14, %15, %16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, "
      "%27, %28, %29, %30, %31, %32, %33, %34, %35, %36, %37, %38, %39, %40, %41, %42, %43, %44, "
      "%45, %46, %47, %48, %49, %50, %51, %52, %53, %54, %55, %56, %57, %58, %59, %60, %61, %62, "
      "%63}, {%64, %65, %66, %67}, %68, p, 1, 1, 1;\n}\n"
      : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]), "+f"(d[6]),
        "+f"(d[7]), "+f"(d[8]), "+f"(d[9]), "+f"(d[10]), "+f"(d[11]), "+f"(d[12]), "+f"(d[13]),
        "+f"(d[14]), "+f"(d[15]), "+f"(d[16]), "+f"(d[17]), "+f"(d[18]), "+f"(d[19]), "+f"(d[20]),
        "+f"(d[21]), "+f"(d[22]), "+f"(d[23]), "+f"(d[24]), "+f"(d[25]), "+f"(d[26]), "+f"(d[27]),
        "+f"(d[28]), "+f"(d[29]), "+f"(d[30]), "+f"(d[31]), "+f"(d[32]), "+f"(d[33]), "+f"(d[34]),
        "+f"(d[35]), "+f"(d[36]), "+f"(d[37]), "+f"(d[38]), "+f"(d[39]), "+f"(d[40]), "+f"(d[41]),
        "+f"(d[42]), "+f"(d[43]), "+f"(d[44]), "+f"(d[45]), "+f"(d[46]), "+f"(d[47]), "+f"(d[48]),
        "+f"(d[49]), "+f"(d[50]), "+f"(d[51]), "+f"(d[52]), "+f"(d[53]), "+f"(d[54]), "+f"(d[55]),
        "+f"(d[56]), "+f"(d[57]), "+f"(d[58]), "+f"(d[59]), "+f"(d[60]), "+f"(d[61]), "+f"(d[62]),
        "+f"(d[63])
      : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "l"(db), "r"(1));
}
template <>
__device__ __forceinline__ void wgmma_ss<128, false>(float (&d)[64], uint64_t da, uint64_t db,
                                                     int scale_d) {
  asm volatile(
      "{\n.reg .pred p;\nsetp.ne.b32 p, %66, 0;\n"
      "wgmma.mma_async.sync.aligned.m64n128k16.f32.f16.f16 {%0, %1, %2, %3, %4, %5, %6, %7, %8, "
      "%9, %10, %11, %12, %13, %14, %15, %16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, "
      "%27, %28, %29, %30, %31, %32, %33, %34, %35, %36, %37, %38, %39, %40, %41, %42, %43, %44, "
      "%45, %46, %47, %48, %49, %50, %51, %52, %53, %54, %55, %56, %57, %58, %59, %60, %61, %62, "
      "%63}, %64, %65, p, 1, 1, 0, 0;\n}\n"
      : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]), "+f"(d[6]),
        "+f"(d[7]), "+f"(d[8]), "+f"(d[9]), "+f"(d[10]), "+f"(d[11]), "+f"(d[12]), "+f"(d[13]),
        "+f"(d[14]), "+f"(d[15]), "+f"(d[16]), "+f"(d[17]), "+f"(d[18]), "+f"(d[19]), "+f"(d[20]),
        "+f"(d[21]), "+f"(d[22]), "+f"(d[23]), "+f"(d[24]), "+f"(d[25]), "+f"(d[26]), "+f"(d[27]),
        "+f"(d[28]), "+f"(d[29]), "+f"(d[30]), "+f"(d[31]), "+f"(d[32]), "+f"(d[33]), "+f"(d[34]),
        "+f"(d[35]), "+f"(d[36]), "+f"(d[37]), "+f"(d[38]), "+f"(d[39]), "+f"(d[40]), "+f"(d[41]),
        "+f"(d[42]), "+f"(d[43]), "+f"(d[44]), "+f"(d[45]), "+f"(d[46]), "+f"(d[47]), "+f"(d[48]),
        "+f"(d[49]), "+f"(d[50]), "+f"(d[51]), "+f"(d[52]), "+f"(d[53]), "+f"(d[54]), "+f"(d[55]),
        "+f"(d[56]), "+f"(d[57]), "+f"(d[58]), "+f"(d[59]), "+f"(d[60]), "+f"(d[61]), "+f"(d[62]),
        "+f"(d[63])
      : "l"(da), "l"(db), "r"(scale_d));
}
template <>
__device__ __forceinline__ void wgmma_rs<128, false>(float (&d)[64], const uint32_t (&a)[4],
                                                     uint64_t db) {
  asm volatile(
      "{\n.reg .pred p;\nsetp.ne.b32 p, %69, 0;\n"
      "wgmma.mma_async.sync.aligned.m64n128k16.f32.f16.f16 {%0, %1, %2, %3, %4, %5, %6, %7, %8, "
      "%9, %10, %11, %12, %13, %14, %15, %16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, "
      "%27, %28, %29, %30, %31, %32, %33, %34, %35, %36, %37, %38, %39, %40, %41, %42, %43, %44, "
      "%45, %46, %47, %48, %49, %50, %51, %52, %53, %54, %55, %56, %57, %58, %59, %60, %61, %62, "
      "%63}, {%64, %65, %66, %67}, %68, p, 1, 1, 1;\n}\n"
      : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]), "+f"(d[6]),
        "+f"(d[7]), "+f"(d[8]), "+f"(d[9]), "+f"(d[10]), "+f"(d[11]), "+f"(d[12]), "+f"(d[13]),
        "+f"(d[14]), "+f"(d[15]), "+f"(d[16]), "+f"(d[17]), "+f"(d[18]), "+f"(d[19]), "+f"(d[20]),
        "+f"(d[21]), "+f"(d[22]), "+f"(d[23]), "+f"(d[24]), "+f"(d[25]), "+f"(d[26]), "+f"(d[27]),
        "+f"(d[28]), "+f"(d[29]), "+f"(d[30]), "+f"(d[31]), "+f"(d[32]), "+f"(d[33]), "+f"(d[34]),
        "+f"(d[35]), "+f"(d[36]), "+f"(d[37]), "+f"(d[38]), "+f"(d[39]), "+f"(d[40]), "+f"(d[41]),
        "+f"(d[42]), "+f"(d[43]), "+f"(d[44]), "+f"(d[45]), "+f"(d[46]), "+f"(d[47]), "+f"(d[48]),
        "+f"(d[49]), "+f"(d[50]), "+f"(d[51]), "+f"(d[52]), "+f"(d[53]), "+f"(d[54]), "+f"(d[55]),
        "+f"(d[56]), "+f"(d[57]), "+f"(d[58]), "+f"(d[59]), "+f"(d[60]), "+f"(d[61]), "+f"(d[62]),
        "+f"(d[63])
      : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "l"(db), "r"(1));
}

// ---------------------------------------------------------------------------------------------
// The attention kernel
// ---------------------------------------------------------------------------------------------
struct FwdParams {
  void* out;
  int len, hq, hkv, group, n_qtiles;
  int bh;            // batch * hq
  int n_tiles;       // n_qtiles * bh
  float scale_log2;  // scale * log2(e)
};

template <bool BF16, int D>
struct KCfg {
  static constexpr int NWG = 2;        // consumer warpgroups
  static constexpr int BM = 64 * NWG;  // query rows per CTA (64 per consumer warpgroup)
  static constexpr int BN = 128;       // keys per K/V tile
  static constexpr int STAGES = 2;     // K ring and V ring depth
  static constexpr int NTHREADS = 128 * (NWG + 1);
  static constexpr int DH = D / 64;  // 64-column (128-byte) swizzle panels per row
  static constexpr int Q_BYTES = BM * D * 2;
  static constexpr int KV_BYTES = BN * D * 2;  // one K (or V) stage
  static constexpr int OPITCH = D + 8;         // epilogue staging row pitch (elements)
  static constexpr int O_BYTES = ((BM * OPITCH * 2 + 1023) / 1024) * 1024;
  static constexpr int OFF_Q = 0;
  static constexpr int OFF_K = OFF_Q + Q_BYTES;
  static constexpr int OFF_V = OFF_K + STAGES * KV_BYTES;
  static constexpr int OFF_O = OFF_V + STAGES * KV_BYTES;
  static constexpr int OFF_BAR = OFF_O + O_BYTES;
  static constexpr int NBAR = 2 + 4 * STAGES;
  static constexpr int SMEM = OFF_BAR + 8 * NBAR + 1024;  // + slack to align the base to 1024
  static_assert(D == 64 || D == 128, "head_dim");
  static_assert(SMEM <= 227 * 1024, "shared memory");
};

// S (64 x BN per warpgroup) = Q_wg (64 x D) * K^T. Q panel p of the tile is at p * BM * 128 bytes,
// K panel p at p * BN * 128 bytes; the 16-wide k-step kk lives in panel kk/4 at byte (kk%4)*32.
template <bool BF16, int D, int BN, int BM>
__device__ __forceinline__ void issue_s_gemm(float (&s)[BN / 2], uint64_t dq, uint64_t dk) {
#pragma unroll
  for (int kk = 0; kk < D / 16; ++kk) {
    const uint64_t oq = static_cast<uint64_t>(((kk >> 2) * BM * 128 + (kk & 3) * 32) >> 4);
    const uint64_t ok = static_cast<uint64_t>(((kk >> 2) * BN * 128 + (kk & 3) * 32) >> 4);
    wgmma_ss<BN, BF16>(s, dq + oq, dk + ok, kk > 0 ? 1 : 0);
  }
}
// O (64 x D) += P (64 x BN, registers) * V (BN x D). V tile is [key][d] in 64-column panels;
// as the B operand (K = key, N = d) it is MN-major: LBO = panel stride, SBO = 8 keys = 1024 B,
// the 16-key k-step kk starts at kk * 16 * 128 bytes.
template <bool BF16, int D, int BN>
__device__ __forceinline__ void issue_pv_gemm(float (&o)[D / 2], const uint32_t (&pf)[BN / 16][4],
                                              uint64_t dv) {
#pragma unroll
  for (int kk = 0; kk < BN / 16; ++kk) {
    wgmma_rs<D, BF16>(o, pf[kk], dv + static_cast<uint64_t>((kk * 16 * 128) >> 4));
  }
}

// Online softmax on one S tile held in the wgmma accumulator layout: thread (warp w, lane l) of
// the warpgroup holds rows 16w + l/4 ("A") and 16w + l/4 + 8 ("B"), columns 8i + 2(l%4) + {0,1}:
// s[4i + {0,1}] row A, s[4i + {2,3}] row B. Masked entries (key > row or key >= len) -> -inf.
// On return s holds p = exp2(s * sl2 - m * sl2), m/l updated, sc = factor for the old O.
template <int BN>
__device__ __forceinline__ void online_softmax(float (&s)[BN / 2], float& m0, float& m1, float& l0,
                                               float& l1, float& sc0, float& sc1, float sl2,
                                               bool need_mask, int lim0, int lim1, int cq) {
  if (need_mask) {
#pragma unroll
    for (int i = 0; i < BN / 8; ++i) {
      const int c = 8 * i + cq;
      if (c > lim0) s[4 * i + 0] = -INFINITY;
      if (c + 1 > lim0) s[4 * i + 1] = -INFINITY;
      if (c > lim1) s[4 * i + 2] = -INFINITY;
      if (c + 1 > lim1) s[4 * i + 3] = -INFINITY;
    }
  }
  // Row max / row sum with 4 independent partial chains per row (short dependency chains: only
  // two consumer warps share an SM sub-partition, so latency is not hidden by other warps).
  float a0[4], a1[4];
#pragma unroll
  for (int j = 0; j < 4; ++j) {
    a0[j] = fmaxf(s[4 * j + 0], s[4 * j + 1]);
    a1[j] = fmaxf(s[4 * j + 2], s[4 * j + 3]);
  }
#pragma unroll
  for (int i = 4; i < BN / 8; ++i) {
    a0[i & 3] = fmaxf(a0[i & 3], fmaxf(s[4 * i + 0], s[4 * i + 1]));
    a1[i & 3] = fmaxf(a1[i & 3], fmaxf(s[4 * i + 2], s[4 * i + 3]));
  }
  float mx0 = fmaxf(fmaxf(m0, fmaxf(a0[0], a0[1])), fmaxf(a0[2], a0[3]));
  float mx1 = fmaxf(fmaxf(m1, fmaxf(a1[0], a1[1])), fmaxf(a1[2], a1[3]));
  mx0 = fmaxf(mx0, __shfl_xor_sync(0xffffffffu, mx0, 1));
  mx0 = fmaxf(mx0, __shfl_xor_sync(0xffffffffu, mx0, 2));
  mx1 = fmaxf(mx1, __shfl_xor_sync(0xffffffffu, mx1, 1));
  mx1 = fmaxf(mx1, __shfl_xor_sync(0xffffffffu, mx1, 2));
  // A row with every key masked so far keeps max = -inf: use 0 as the offset so that
  // exp2(-inf - 0) = 0 instead of NaN.
  const float ms0 = (mx0 == -INFINITY) ? 0.f : mx0 * sl2;
  const float ms1 = (mx1 == -INFINITY) ? 0.f : mx1 * sl2;
  sc0 = ex2(m0 * sl2 - ms0);  // m0 = -inf -> 0 (O and l are still 0 then)
  sc1 = ex2(m1 * sl2 - ms1);
  m0 = mx0;
  m1 = mx1;
#pragma unroll
  for (int j = 0; j < 4; ++j) a0[j] = a1[j] = 0.f;
#pragma unroll
  for (int i = 0; i < BN / 8; ++i) {
    s[4 * i + 0] = ex2(fmaf(s[4 * i + 0], sl2, -ms0));
    s[4 * i + 1] = ex2(fmaf(s[4 * i + 1], sl2, -ms0));
    s[4 * i + 2] = ex2(fmaf(s[4 * i + 2], sl2, -ms1));
    s[4 * i + 3] = ex2(fmaf(s[4 * i + 3], sl2, -ms1));
    a0[i & 3] += s[4 * i + 0] + s[4 * i + 1];
    a1[i & 3] += s[4 * i + 2] + s[4 * i + 3];
  }
  // per-thread partial row sums; reduced over the quad at the end
  l0 = l0 * sc0 + ((a0[0] + a0[1]) + (a0[2] + a0[3]));
  l1 = l1 * sc1 + ((a1[0] + a1[1]) + (a1[2] + a1[3]));
}

// The accumulator fragment of S for columns 16kk..16kk+15 is exactly the A-register fragment of
// m64nNk16 for k-step kk: {s[8kk+0,1]} row A cols 2q..; {s[8kk+2,3]} row B; {s[8kk+4,5]} row A
// cols 8+2q..; {s[8kk+6,7]} row B.
template <bool BF16, int BN>
__device__ __forceinline__ void convert_p(const float (&s)[BN / 2], uint32_t (&pf)[BN / 16][4]) {
#pragma unroll
  for (int kk = 0; kk < BN / 16; ++kk) {
    pf[kk][0] = pack2<BF16>(s[8 * kk + 0], s[8 * kk + 1]);
    pf[kk][1] = pack2<BF16>(s[8 * kk + 2], s[8 * kk + 3]);
    pf[kk][2] = pack2<BF16>(s[8 * kk + 4], s[8 * kk + 5]);
    pf[kk][3] = pack2<BF16>(s[8 * kk + 6], s[8 * kk + 7]);
  }
}
template <int D>
__device__ __forceinline__ void rescale_o(float (&o)[D / 2], float sc0, float sc1) {
#pragma unroll
  for (int i = 0; i < D / 8; ++i) {
    o[4 * i + 0] *= sc0;
    o[4 * i + 1] *= sc0;
    o[4 * i + 2] *= sc1;
    o[4 * i + 3] *= sc1;
  }
}

// Barrier slots: 0 = Q full; 1 = Q empty; 2+s = K full[s]; 4+s = K empty[s]; 6+s = V full[s];
// 8+s = V empty[s]. Named barriers: 1, 2 = scheduler barriers of consumer warpgroups 0, 1;
// 3 + wg = per-warpgroup epilogue barrier.
//
// Tile schedule: one tile per CTA, grid (batch * q_heads, query tiles), blockIdx.y reversed so
// that the heaviest query tiles (the last ones: the most keys) are dispatched first.
struct OneTile {
  int r = 0;
  __device__ __forceinline__ bool next(const FwdParams& p, int& bh, int& qt, bool& last) {
    if (r++ > 0) return false;
    bh = blockIdx.x;
    qt = p.n_qtiles - 1 - static_cast<int>(blockIdx.y);
    last = true;
    return true;
  }
};

template <bool BF16, int D>
__global__ void __launch_bounds__(384, 1)
    flash_wgmma_kernel(const __grid_constant__ CUtensorMap tmQ,
                       const __grid_constant__ CUtensorMap tmK,
                       const __grid_constant__ CUtensorMap tmV, const FwdParams p) {
#if defined(__CUDA_ARCH__) && !defined(__CUDA_ARCH_FEAT_SM90_ALL)
  // nvcc -arch=sm_90a also emits generic compute_90 PTX, which cannot hold wgmma/setmaxnreg:
  // that copy is an empty stub (the sm_90a cubin is what runs on H100/H200).
  __trap();
#else
  using C = KCfg<BF16, D>;
  constexpr int NWG = C::NWG;
  constexpr int BM = C::BM, BN = C::BN, STAGES = C::STAGES;
  extern __shared__ uint8_t smem_raw[];
  const uint32_t raw_s = smem_u32(smem_raw);
  const uint32_t sbase = (raw_s + 1023u) & ~1023u;
  uint8_t* gbase = smem_raw + (sbase - raw_s);
  const uint32_t sQ = sbase + C::OFF_Q, sK = sbase + C::OFF_K, sV = sbase + C::OFF_V;
  const uint32_t sBar = sbase + C::OFF_BAR;
  const uint32_t barQfull = sBar, barQempty = sBar + 8u;
  auto bar_kfull = [&](int s) { return sBar + 8u * (2 + s); };
  auto bar_kempty = [&](int s) { return sBar + 8u * (2 + STAGES + s); };
  auto bar_vfull = [&](int s) { return sBar + 8u * (2 + 2 * STAGES + s); };
  auto bar_vempty = [&](int s) { return sBar + 8u * (2 + 3 * STAGES + s); };

  const int tid = threadIdx.x;
  const int wg = tid / 128;  // 0 = producer, 1..NWG = consumers

  if (tid == 0) {
    mbar_init(barQfull, 1);
    mbar_init(barQempty, NWG * 4);  // one arrive per consumer warp
#pragma unroll
    for (int s = 0; s < STAGES; ++s) {
      mbar_init(bar_kfull(s), 1);
      mbar_init(bar_kempty(s), NWG * 4);
      mbar_init(bar_vfull(s), 1);
      mbar_init(bar_vempty(s), NWG * 4);
    }
    fence_barrier_init();
  }
  __syncthreads();

  // K/V tiles are numbered globally over the CTA's tiles: tile g uses stage g % STAGES and
  // phase (g / STAGES) & 1 of its full/empty barriers (same numbering in producer and consumers).
  if (wg == 0) {
    // ------------------------------- producer -------------------------------
    setmaxnreg_dec<24>();
    if (tid == 0) {
      prefetch_tmap(&tmQ);
      prefetch_tmap(&tmK);
      prefetch_tmap(&tmV);
      OneTile sched;
      int bh, qt;
      bool last;
      int kv_iter = 0, tile_iter = 0;
      while (sched.next(p, bh, qt, last)) {
        const int b = bh / p.hq, h = bh % p.hq, hk = h / p.group;
        const int q0 = qt * BM;
        const int nb = (min(p.len, q0 + BM) + BN - 1) / BN;
        mbar_wait(barQempty, (tile_iter & 1) ^ 1);  // consumers done with the previous Q
        mbar_expect_tx(barQfull, C::Q_BYTES);
#pragma unroll
        for (int pn = 0; pn < C::DH; ++pn)
          tma_load_4d(sQ + pn * BM * 128, &tmQ, barQfull, pn * 64, h, q0, b);
        for (int n = 0; n < nb; ++n) {
          const int g = kv_iter + n;
          const int s = g % STAGES;
          const uint32_t ph = (g / STAGES) & 1;
          mbar_wait(bar_kempty(s), ph ^ 1);  // first use of a stage passes at once
          mbar_expect_tx(bar_kfull(s), C::KV_BYTES);
#pragma unroll
          for (int pn = 0; pn < C::DH; ++pn)
            tma_load_4d(sK + s * C::KV_BYTES + pn * BN * 128, &tmK, bar_kfull(s), pn * 64, hk,
                        n * BN, b);
          mbar_wait(bar_vempty(s), ph ^ 1);
          mbar_expect_tx(bar_vfull(s), C::KV_BYTES);
#pragma unroll
          for (int pn = 0; pn < C::DH; ++pn)
            tma_load_4d(sV + s * C::KV_BYTES + pn * BN * 128, &tmV, bar_vfull(s), pn * 64, hk,
                        n * BN, b);
        }
        kv_iter += nb;
        ++tile_iter;
      }
    }
    return;
  }

  // ------------------------------- consumers -------------------------------
  setmaxnreg_inc<240>();
  const int cw = wg - 1;  // consumer warpgroup: rows q0 + 64 cw .. + 63
  const int ctid = tid & 127;
  const int warp = ctid >> 5, lane = tid & 31;
  const int rloc = warp * 16 + (lane >> 2);  // row A within the warpgroup's 64 rows
  const int cq = 2 * (lane & 3);
  const float sl2 = p.scale_log2;

  const uint64_t dq = sw128_desc(sQ + cw * 64 * 128, 16);
  const uint64_t dk0 = sw128_desc(sK, 16);
  const uint64_t dv0 = sw128_desc(sV, BN * 128);
  constexpr uint64_t kStageDesc = static_cast<uint64_t>(C::KV_BYTES >> 4);

  auto release = [&](uint32_t bar) {
    __syncwarp();
    if (lane == 0) mbar_arrive(bar);
  };
  // Scheduler barrier: warpgroup cw may issue GEMMs once the other one has issued its previous
  // batch. Per tile each warpgroup runs nb + 1 issue steps, always the same for both. Warpgroup 1
  // pre-arrives once on warpgroup 0's barrier at the start and skips its very last arrive (last
  // step of the CTA's last tile), so each barrier sees exactly as many arrives as syncs.
  auto sched_sync = [&]() { named_bar_sync(1 + cw, 256); };
  auto sched_arrive = [&](bool last) {
    if (!(last && cw == 1)) named_bar_arrive(1 + (1 - cw), 256);
  };
  if (cw == 1) named_bar_arrive(1, 256);

  float o[D / 2];
  float s[BN / 2];
#pragma unroll
  for (int i = 0; i < BN / 2; ++i) s[i] = 0.f;
  uint32_t pf[BN / 16][4];  // P = bf16/fp16(exp'd scores): A operand of the PV GEMM
#pragma unroll
  for (int i = 0; i < BN / 16; ++i)
#pragma unroll
    for (int j = 0; j < 4; ++j) pf[i][j] = 0u;

  OneTile sched;
  int bh, qt;
  bool last_tile;
  int kv_iter = 0, tile_iter = 0;
  while (sched.next(p, bh, qt, last_tile)) {
    const int b = bh / p.hq, h = bh % p.hq;
    const int q0 = qt * BM;
    const int nb = (min(p.len, q0 + BM) + BN - 1) / BN;  // >= 1 since q0 < len
    const int wg_row0 = q0 + cw * 64;
    const int rowA = wg_row0 + rloc;
    const int limA = min(rowA, p.len - 1), limB = min(rowA + 8, p.len - 1);  // last visible key
    auto need_mask = [&](int k0) { return (k0 + BN - 1 > wg_row0) || (k0 + BN > p.len); };
    auto stage_of = [&](int n) { return (kv_iter + n) % STAGES; };
    auto phase_of = [&](int n) { return static_cast<uint32_t>(((kv_iter + n) / STAGES) & 1); };

#pragma unroll
    for (int i = 0; i < D / 2; ++i) o[i] = 0.f;
    float m0 = -INFINITY, m1 = -INFINITY, l0 = 0.f, l1 = 0.f, sc0 = 1.f, sc1 = 1.f;

    mbar_wait(barQfull, tile_iter & 1);

    // Prologue: S_0, softmax_0 (p_0 stays in s as fp32).
    mbar_wait(bar_kfull(stage_of(0)), phase_of(0));
    sched_sync();
    fence_regs(s);
    wg_fence();
    issue_s_gemm<BF16, D, BN, BM>(s, dq, dk0 + stage_of(0) * kStageDesc);
    wg_commit();
    sched_arrive(false);
    wg_wait<0>();
    fence_regs(s);
    release(bar_kempty(stage_of(0)));
    if (nb == 1) release(barQempty);  // last S GEMM of the tile done: Q may be reloaded
    online_softmax<BN>(s, m0, m1, l0, l1, sc0, sc1, sl2, need_mask(0), limA, limB, cq);
    // Steady state, step n = 1 .. nb-1 (FA3's intra-warpgroup overlap):
    //   wait K_n, V_{n-1} | wait<0>: PV_{n-2} done -> release V_{n-2} | P_{n-1} = cvt(s),
    //   O *= sc_{n-1} | issue S_n, PV_{n-1} | wait<1>: S_n done -> release K_n | softmax_n,
    //   which runs while PV_{n-1} is on the tensor cores.
    // Notes from the SASS: ptxas hoists a wait_group<0> to the top of its basic block, so it
    // sits after the barrier spin loops of the next step (a block boundary), not right after
    // the softmax; O and P are touched only with no wgmma pending (reading O between the S and
    // PV issues, or double-buffering P, made ptxas serialise every wgmma).
    for (int n = 1; n < nb; ++n) {
      const int st = stage_of(n), sp = stage_of(n - 1);
      mbar_wait(bar_kfull(st), phase_of(n));
      mbar_wait(bar_vfull(sp), phase_of(n - 1));  // V_{n-1} was loaded before K_n
      wg_wait<0>();                               // PV_{n-2} (if any) done
      fence_regs(o);
      fence_regs<BN / 16>(pf);
      if (n >= 2) release(bar_vempty(stage_of(n - 2)));
      convert_p<BF16, BN>(s, pf);
      rescale_o<D>(o, sc0, sc1);
      sched_sync();
      fence_regs(s);
      fence_regs(o);
      fence_regs<BN / 16>(pf);
      wg_fence();
      issue_s_gemm<BF16, D, BN, BM>(s, dq, dk0 + st * kStageDesc);
      wg_commit();
      issue_pv_gemm<BF16, D, BN>(o, pf, dv0 + sp * kStageDesc);
      wg_commit();
      sched_arrive(false);
      wg_wait<1>();  // S_n done (PV_{n-1} may still run)
      fence_regs(s);
      release(bar_kempty(st));
      if (n == nb - 1) release(barQempty);
      const int k0 = n * BN;
      online_softmax<BN>(s, m0, m1, l0, l1, sc0, sc1, sl2, need_mask(k0), limA - k0, limB - k0, cq);
    }
    // Tail: PV_{nb-2} done, P_{nb-1}, O *= sc_{nb-1}, PV_{nb-1}.
    {
      const int sl = stage_of(nb - 1);
      mbar_wait(bar_vfull(sl), phase_of(nb - 1));
      wg_wait<0>();
      fence_regs(o);
      fence_regs<BN / 16>(pf);
      if (nb >= 2) release(bar_vempty(stage_of(nb - 2)));
      convert_p<BF16, BN>(s, pf);
      rescale_o<D>(o, sc0, sc1);
      sched_sync();
      fence_regs(o);
      fence_regs<BN / 16>(pf);
      wg_fence();
      issue_pv_gemm<BF16, D, BN>(o, pf, dv0 + sl * kStageDesc);
      wg_commit();
      sched_arrive(last_tile);
      wg_wait<0>();
      fence_regs(o);
      release(bar_vempty(sl));
    }

    // ------------------------------- epilogue -------------------------------
    l0 += __shfl_xor_sync(0xffffffffu, l0, 1);
    l0 += __shfl_xor_sync(0xffffffffu, l0, 2);
    l1 += __shfl_xor_sync(0xffffffffu, l1, 1);
    l1 += __shfl_xor_sync(0xffffffffu, l1, 2);
    const float inv0 = l0 > 0.f ? 1.f / l0 : 0.f;
    const float inv1 = l1 > 0.f ? 1.f / l1 : 0.f;
    uint16_t* stage = reinterpret_cast<uint16_t*>(gbase + C::OFF_O) + cw * 64 * C::OPITCH;
#pragma unroll
    for (int i = 0; i < D / 8; ++i) {
      const int col = 8 * i + cq;
      *reinterpret_cast<uint32_t*>(stage + rloc * C::OPITCH + col) =
          pack2<BF16>(o[4 * i] * inv0, o[4 * i + 1] * inv0);
      *reinterpret_cast<uint32_t*>(stage + (rloc + 8) * C::OPITCH + col) =
          pack2<BF16>(o[4 * i + 2] * inv1, o[4 * i + 3] * inv1);
    }
    named_bar_sync(3 + cw, 128);
    uint16_t* out = static_cast<uint16_t*>(p.out);
    constexpr int CPR = D / 8;  // 16-byte chunks per row
#pragma unroll 4
    for (int idx = ctid; idx < 64 * CPR; idx += 128) {
      const int r = idx / CPR, ch = idx % CPR;
      const int tok = wg_row0 + r;
      if (tok < p.len) {
        const size_t off = ((static_cast<size_t>(b) * p.len + tok) * p.hq + h) * D + ch * 8;
        *reinterpret_cast<uint4*>(out + off) =
            *reinterpret_cast<const uint4*>(stage + r * C::OPITCH + ch * 8);
      }
    }
    kv_iter += nb;
    ++tile_iter;
  }
#endif
}

// ---------------------------------------------------------------------------------------------
// Host side
// ---------------------------------------------------------------------------------------------
// cuTensorMapEncodeTiled is a driver API function, fetched through the runtime so that nothing
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

// A [batch][len][heads][head_dim] tensor as 4-D (head_dim, heads, tokens, sequences), boxes of
// (64, 1, rows, 1), 128-byte swizzle: a box past the last token reads zeros.
CUtensorMap token_major_map(const void* p, DType dtype, int batch, int len, int heads, int dim,
                            int rows) {
  CUtensorMap map;
  const cuuint64_t dims[4] = {static_cast<cuuint64_t>(dim), static_cast<cuuint64_t>(heads),
                              static_cast<cuuint64_t>(len), static_cast<cuuint64_t>(batch)};
  const cuuint64_t strides[3] = {static_cast<cuuint64_t>(dim) * 2,
                                 static_cast<cuuint64_t>(heads) * dim * 2,
                                 static_cast<cuuint64_t>(len) * heads * dim * 2};  // bytes
  const cuuint32_t box[4] = {64, 1, static_cast<cuuint32_t>(rows), 1};
  const cuuint32_t element_strides[4] = {1, 1, 1, 1};
  const CUresult r = tensor_map_encoder()(
      &map,
      dtype == DType::kF16 ? CU_TENSOR_MAP_DATA_TYPE_FLOAT16 : CU_TENSOR_MAP_DATA_TYPE_BFLOAT16, 4,
      const_cast<void*>(p), dims, strides, box, element_strides, CU_TENSOR_MAP_INTERLEAVE_NONE,
      CU_TENSOR_MAP_SWIZZLE_128B, CU_TENSOR_MAP_L2_PROMOTION_L2_256B,
      CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE);
  if (r != CUDA_SUCCESS)
    throw LibraryError("CUDA driver", static_cast<long>(r), "cuTensorMapEncodeTiled failed",
                       "token_major_map", __FILE__, __LINE__);
  return map;
}

template <bool BF16, int D>
void launch_wgmma(const void* q, const void* k, const void* v, void* out, const DecodeShape& s,
                  int len, DType dtype, cudaStream_t stream) {
  using C = KCfg<BF16, D>;
  const int q_tiles = static_cast<int>(ceil_div(static_cast<long long>(len), 128LL));
  const CUtensorMap tq = token_major_map(q, dtype, s.batch, len, s.q_heads, D, C::BM);
  const CUtensorMap tk = token_major_map(k, dtype, s.batch, len, s.kv_heads, D, C::BN);
  const CUtensorMap tv = token_major_map(v, dtype, s.batch, len, s.kv_heads, D, C::BN);
  FwdParams p{};
  p.out = out;
  p.len = len;
  p.hq = s.q_heads;
  p.hkv = s.kv_heads;
  p.group = s.q_heads / s.kv_heads;
  p.n_qtiles = q_tiles;
  p.bh = s.batch * s.q_heads;
  p.n_tiles = 0;  // unused: one tile per CTA
  p.scale_log2 = s.scale * 1.4426950408889634f;
  set_kernel_attribute_once(flash_wgmma_kernel<BF16, D>,
                            cudaFuncAttributeMaxDynamicSharedMemorySize, C::SMEM);
  const dim3 grid(static_cast<unsigned>(p.bh), static_cast<unsigned>(q_tiles));
  flash_wgmma_kernel<BF16, D><<<grid, C::NTHREADS, C::SMEM, stream>>>(tq, tk, tv, p);
  CUDALAB_CHECK_LAUNCH();
}

}  // namespace

bool flash_prefill_wgmma_supported() {
  return has_gpu() && current_cc() == 90;
}  // cheap: checked on every call

void flash_prefill_attention_wgmma(const void* q, const void* k, const void* v, void* out,
                                   const DecodeShape& s, int len, DType dtype,
                                   cudaStream_t stream) {
  require(len < 0 || ceil_div(static_cast<long long>(len), 128LL) <= 65535, "len",
          "must fit 65535 query tiles of 128 (grid.y)");
  require(!(s.scale <= 0.0f), "scale",
          "must be positive (the kernel folds it into the exponent after the row maximum)");
  if (!check_prefill_args(q, k, v, out, s, len)) return;
  require(static_cast<long long>(s.batch) * s.q_heads <= 0x7FFFFFFFLL, "batch, q_heads",
          "batch * q_heads must fit grid.x (2^31 - 1)");
  require(is_aligned(q, 16), "q", "must be 16-byte aligned (TMA)");
  require(is_aligned(k, 16), "k", "must be 16-byte aligned (TMA)");
  require(is_aligned(v, 16), "v", "must be 16-byte aligned (TMA)");
  require(is_aligned(out, 16), "out", "must be 16-byte aligned (16-byte stores)");
  if (!flash_prefill_wgmma_supported())
    throw std::runtime_error(
        "flash_prefill_attention_wgmma needs a GPU of compute capability 9.0 (sm_90a: H100/H200)");
  const bool f16 = dtype == DType::kF16;
  if (s.head_dim == 64) {
    if (f16)
      launch_wgmma<false, 64>(q, k, v, out, s, len, dtype, stream);
    else
      launch_wgmma<true, 64>(q, k, v, out, s, len, dtype, stream);
  } else {
    if (f16)
      launch_wgmma<false, 128>(q, k, v, out, s, len, dtype, stream);
    else
      launch_wgmma<true, 128>(q, k, v, out, s, len, dtype, stream);
  }
}

}  // namespace cudalab::ch11
