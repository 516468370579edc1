// Exercise 2.3 — a DRAM read that saturates the memory at the lowest occupancy.
//
// What it computes: partial[t] = the sum of the elements thread t reads; every element of
// in[0, n) is read exactly once (the host adds the partials). Launch shape: blocks x threads,
// any; the benchmark gives it few resident warps per SM on purpose.
//
// Why it is an exercise: by Little's law (exercise 2.4) the H200 needs ~2.9 MB in flight to
// deliver 4.8 TB/s at ~600 ns, ~22 KB per SM. A grid-stride loop that loads one float per
// iteration has 4 B in flight per thread: at 8 warps per SM that is 1 KB per SM, a few percent of
// the bandwidth. With kLoads = 8 float4 loads in flight (128 B per thread) 8 warps per SM hold
// 32 KB. The kernel must issue several independent 16-byte loads before it uses any of
// them (registers are the buffer), so that few threads keep enough bytes in flight.
#include "ch02/ch02.hpp"
#include "cudalab/check.hpp"

namespace cudalab::ch02 {
namespace {

constexpr int kMaxThreads = 1024;
constexpr int kLoads = kReadBytesInFlight / 16;  // float4 loads in flight per thread per trip

__global__ void __launch_bounds__(kMaxThreads)
    dram_read_kernel(const float* __restrict__ in, std::size_t n, float* __restrict__ partial) {
  const std::size_t t = blockIdx.x * static_cast<std::size_t>(blockDim.x) + threadIdx.x;
  const std::size_t T = static_cast<std::size_t>(gridDim.x) * blockDim.x;
  const std::size_t n4 = n / 4;  // whole float4s; the tail (n % 4 floats) is read one by one
  float s = 0.0f;
  // BEGIN EXERCISE 2.3
  // TODO(2.3): read each of the n4 whole 16-byte vectors at the start of `in` once, summing
  //   into s, with kLoads independent vector loads in flight per thread.
  //   Contract: thread t reads a set of float4 indices such that the T threads together read
  //     each index of [0, n4) exactly once (the tail below handles in[4 n4, n)); adjacent
  //     threads read adjacent float4s in each trip (coalesced: a warp reads 512 contiguous bytes).
  //   Constraints: any n (n4 = 0 included); issue all kLoads loads of a trip before adding any
  //     (an add that waits for load 1 before load 2 is issued puts one load in flight again).
  //   Goal: BM_dram_read/warps:8 >= 0.66x cudaMemcpy D2D (bench/ch02/ch02.toml) at 8 warps per
  //     SM. A one-float-per-iteration grid-stride loop is correct and reaches a few percent there.
  // STARTER: s = 0.0f * kLoads;  // replace with the kLoads-deep vector loop
  const float4* in4 = reinterpret_cast<const float4*>(in);  // n4 whole float4s
  for (std::size_t base = t; base < n4; base += T * kLoads) {
    float4 v[kLoads];
#pragma unroll
    for (int u = 0; u < kLoads; ++u) {
      const std::size_t i = base + u * T;
      v[u] = i < n4 ? in4[i] : make_float4(0.f, 0.f, 0.f, 0.f);
    }
#pragma unroll
    for (int u = 0; u < kLoads; ++u) s += (v[u].x + v[u].y) + (v[u].z + v[u].w);
  }
  // END EXERCISE
  // BEGIN PITFALL dram_read_no_tail EXERCISES 2.3
  // The lesson: float4 loads cover 4 * (n / 4) elements; the last n % 4 must be read one by one.
  // Without this loop every size that is not a multiple of 4 loses up to 3 elements: the
  // bandwidth looks the same, the answer is wrong. Caught by DramReadGpu.ReadsEveryElementOnce
  // (n = 1, 3, 31, 1001). Fix: read in[4 n4 + t], in[4 n4 + t + T], ... below n.
  for (std::size_t i = 4 * n4 + t; i < n; i += T) s += in[i];
  // BUG: for (std::size_t i = 4 * n4 + t; i < 4 * n4; i += T) s += in[i];
  // END PITFALL
  partial[t] = s;
}

}  // namespace

int dram_read_resident_warps(int threads) {
  require(threads >= 1 && threads <= kMaxThreads, "threads", "must be in [1, 1024]");
  int blocks = 0;
  CUDALAB_CHECK(
      cudaOccupancyMaxActiveBlocksPerMultiprocessor(&blocks, dram_read_kernel, threads, 0));
  return blocks * ((threads + 31) / 32);
}

void dram_read(const float* in, std::size_t n, float* partial, int blocks, int threads,
               cudaStream_t stream) {
  require(in != nullptr || n == 0, "in", "must not be null");
  require(reinterpret_cast<std::uintptr_t>(in) % 16 == 0, "in", "must be 16-byte aligned");
  require(partial != nullptr, "partial", "must not be null");
  require(blocks >= 1, "blocks", "must be >= 1");
  require(threads >= 1 && threads <= kMaxThreads, "threads", "must be in [1, 1024]");
  dram_read_kernel<<<blocks, threads, 0, stream>>>(in, n, partial);
  CUDALAB_CHECK_LAUNCH();
}

}  // namespace cudalab::ch02
