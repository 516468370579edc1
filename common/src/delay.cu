// Delay injection and memory contention (cudalab/delay.hpp).
#include <cstdint>

#include "cudalab/check.hpp"
#include "cudalab/delay.hpp"

namespace cudalab {
namespace {

constexpr double kMaxUs = 10e6;
constexpr unsigned kContentionThreads = 128;

__device__ std::uint64_t global_ns() {
  std::uint64_t t;
  asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
  return t;
}

__global__ void __launch_bounds__(32) delay_kernel(std::uint64_t ns) {
  const std::uint64_t start = global_ns();
  while (global_ns() - start < ns) {
  }
}

__global__ void __launch_bounds__(kContentionThreads)
    contention_kernel(unsigned* scratch, std::size_t words, std::uint64_t ns) {
  const std::uint64_t start = global_ns();
  // A per-thread linear congruential walk over the scratch words: atomics from every block on
  // scattered lines, plus L2 reads (ld.cg) of the same lines.
  std::uint64_t x =
      (std::uint64_t{blockIdx.x} * kContentionThreads + threadIdx.x) * 2654435761u + 1;
  unsigned sink = 0;
  while (global_ns() - start < ns) {
#pragma unroll 4
    for (int k = 0; k < 16; ++k) {
      x = x * 6364136223846793005ull + 1442695040888963407ull;
      const std::size_t w = static_cast<std::size_t>(x >> 33) % words;
      atomicAdd(scratch + w, 1u);
      sink += __ldcg(scratch + (w ^ 1) % words);
    }
  }
  if (sink == 0xFFFFFFFFu) scratch[0] = sink;  // keeps the loads (never true in practice)
}

}  // namespace

void delay_stream(cudaStream_t stream, double microseconds) {
  require(microseconds >= 0 && microseconds <= kMaxUs, "microseconds", "must be in [0, 10 s]");
  if (microseconds == 0) return;
  delay_kernel<<<1, 32, 0, stream>>>(static_cast<std::uint64_t>(microseconds * 1e3));
  CUDALAB_CHECK_LAUNCH();
}

Contention::Contention(std::size_t words)
    : scratch_((require(words > 0, "words", "must be > 0"), words)) {
  CUDALAB_CHECK(cudaMemset(scratch_.data(), 0, scratch_.bytes()));
}

void Contention::run(cudaStream_t stream, double microseconds, unsigned blocks) {
  require(blocks > 0, "blocks", "must be > 0");
  require(microseconds > 0 && microseconds <= kMaxUs, "microseconds", "must be in (0, 10 s]");
  contention_kernel<<<blocks, kContentionThreads, 0, stream>>>(
      scratch_.data(), scratch_.size(), static_cast<std::uint64_t>(microseconds * 1e3));
  CUDALAB_CHECK_LAUNCH();
}

}  // namespace cudalab
