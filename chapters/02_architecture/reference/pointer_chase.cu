// Latency by pointer chase (worked example): the latency rows of the card (shared, L1, L2, DRAM).
//
// What it computes: one thread follows ring[] (made by make_chase_ring, exercise 2.2): j =
// ring[j], `warm` times untimed, then `steps` times between two clock64() reads. Each load's
// address is the previous load's value, so no two loads overlap: cycles / steps is the latency of
// whichever level holds the ring (plus the one IMAD that turns the index into an address). The
// benchmark sweeps the ring's size from 8 KiB to 512 MiB: the latency steps where the ring
// outgrows L1 (~256 KB per SM with shared memory), the near half of L2, L2 (cudaDeviceProp's
// l2CacheSize) and lands on DRAM (plus TLB misses for the largest rings).
// Launch shape: one block of kThreads (the other threads only help copy the ring to shared
// memory), one thread chases. Shared mode: ld.shared instead of ld.global.
#include "ch02/ch02.hpp"
#include "cudalab/check.hpp"

namespace cudalab::ch02 {
namespace {

constexpr int kThreads = 256;

// The loads as volatile asm: ordered with each other and with clock64() (itself volatile asm),
// so the compiler can neither hoist a warm-up load into the timed window nor sink a timed one out
// of it. ld.global.ca caches in L1 (what a plain load does on sm_80/sm_90).
__device__ __forceinline__ std::uint32_t load_global(const std::uint32_t* p) {
  std::uint32_t v;
  asm volatile("ld.global.ca.u32 %0, [%1];" : "=r"(v) : "l"(p));
  return v;
}
__device__ __forceinline__ std::uint32_t load_shared(std::uint32_t smem_addr) {
  std::uint32_t v;
  asm volatile("ld.shared.u32 %0, [%1];" : "=r"(v) : "r"(smem_addr));
  return v;
}

template <bool Shared>
__global__ void __launch_bounds__(kThreads)
    chase_kernel(const std::uint32_t* __restrict__ ring, std::size_t words, long long warm,
                 long long steps, bool resume, long long* __restrict__ result) {
  extern __shared__ std::uint32_t sring[];
  if constexpr (Shared) {
    for (std::size_t i = threadIdx.x; i < words; i += blockDim.x) sring[i] = ring[i];
    __syncthreads();  // the whole ring is in shared memory before the chase starts
  }
  if (threadIdx.x != 0) return;
  const std::uint32_t base = static_cast<std::uint32_t>(__cvta_generic_to_shared(sring));
  auto load = [&](std::uint32_t j) {
    if constexpr (Shared)
      return load_shared(base + 4 * j);
    else
      return load_global(ring + j);
  };
  std::uint32_t j = 0;
  if (resume && result[1] >= 0 && static_cast<std::size_t>(result[1]) < words)
    j = static_cast<std::uint32_t>(result[1]);
  for (long long i = 0; i < warm; ++i) j = load(j);
  const long long t0 = clock64();
#pragma unroll 8
  for (long long i = 0; i < steps; ++i) j = load(j);
  const long long t1 = clock64();
  result[0] = t1 - t0;
  result[1] = j;
}

}  // namespace

void pointer_chase(const std::uint32_t* ring, std::size_t words, long long warm, long long steps,
                   bool shared, long long* result, cudaStream_t stream, bool resume) {
  require(ring != nullptr, "ring", "must not be null");
  require(words >= 2, "words", "a ring has at least two words");
  require(result != nullptr, "result", "must not be null (two long long)");
  require(warm >= 0, "warm", "must be >= 0");
  require(steps >= 1, "steps", "must be >= 1");
  if (shared) {
    require(words * 4 <= kMaxSharedChaseBytes, "words", "a shared-memory ring is at most 48 KiB");
    chase_kernel<true>
        <<<1, kThreads, words * 4, stream>>>(ring, words, warm, steps, resume, result);
  } else {
    chase_kernel<false><<<1, kThreads, 0, stream>>>(ring, words, warm, steps, resume, result);
  }
  CUDALAB_CHECK_LAUNCH();
}

}  // namespace cudalab::ch02
