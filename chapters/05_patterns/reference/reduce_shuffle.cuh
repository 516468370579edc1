// Reduction ladder, steps 5-7: warp shuffles, vectorized grid-stride loads, a one-pass finish.
//
//  5 warp shuffle (exercise 5.2): a warp sums its registers with shuffles, with no shared memory
//    and no barrier. A block needs shared memory only for its kReduceBlock / 32 warp sums.
//  6 vectorized grid-stride: a reduction is limited by how many bytes are in flight to DRAM
//    (Little's law: ~4.8 TB/s x ~1 us latency = ~5 MB must be outstanding across the GPU). A fixed
//    grid of a few blocks per SM, each thread issuing four independent 16-byte loads per trip,
//    keeps 64 bytes per thread outstanding; one block per SM-resident slot, so no block waits on
//    a launch, and only `grid` partial sums are left (reduced by one single-block launch).
//  7 one pass: each block writes its partial sum, then __threadfence() + atomicAdd on a counter;
//    the block that arrives last (counter == grid - 1) adds the partials in block order
//    (deterministic: the same bits every run) and sets the counter back to 0 for the next call.
// Target (step 7, 2^28 floats, H200): >= 95% of CUB DeviceReduce::Sum, i.e. ~4.2 TB/s read.
//
// Included by ONE translation unit, reduce_shuffle.cu: it defines warp_reduce_sum (exercise 5.2),
// which every kernel here calls, and instantiates the launchers. A kernel and the device
// functions it calls must be compiled together (no relocatable device code), so the kernels live
// here and a pitfall that breaks the warp reduction replaces reduce_shuffle.cu alone.
#pragma once

#include <algorithm>
#include <atomic>
#include <cstdint>

#include "ch05/reduce.hpp"
#include "cudalab/check.hpp"
#include "cudalab/math.hpp"
#include "reduce_internal.hpp"
#include "reduce_device.cuh"

namespace cudalab::ch05::detail {
namespace {

constexpr unsigned kB = kReduceBlock;
constexpr unsigned kWarps = kB / 32;
constexpr unsigned kUnroll = kGridStrideUnroll;  // independent 16-byte loads per thread per trip
static_assert(kWarps <= 32, "warp 0 reduces the warp sums in one shuffle round");

// The sum of v over the 32 lanes of a warp, valid in lane 0 (all lanes must call it). Defined by
// the file that includes this one: reduce_shuffle.cu (exercise 5.2).
template <class T>
__device__ T warp_reduce_sum(T v);

// The sum of v over the block, valid in thread 0. Every thread must call it (it synchronizes);
// it may be called again after a __syncthreads() that follows the previous call.
template <class T>
__device__ T block_reduce_sum(T v) {
  __shared__ T warp_sums[kWarps];
  const unsigned lane = threadIdx.x % 32, warp = threadIdx.x / 32;
  v = warp_reduce_sum(v);
  if (lane == 0) warp_sums[warp] = v;
  __syncthreads();  // every warp's sum is in shared memory before warp 0 reads them
  if (warp == 0) v = warp_reduce_sum(lane < kWarps ? warp_sums[lane] : T{0});
  return v;
}

// Step 5: two elements per thread while loading (load_two, as steps 3 and 4), then shuffles.
template <class T>
__global__ void __launch_bounds__(kB) reduce_warp_shuffle(const T* __restrict__ in, T* __restrict__ block_sums,
                                                          std::size_t n) {
  T v = load_two(in, n);
  v = block_reduce_sum(v);
  if (threadIdx.x == 0) block_sums[blockIdx.x] = v;
}

// 16-byte vectors of four elements.
template <class T> struct Vec4;
template <> struct Vec4<float> { using type = float4; };
template <> struct Vec4<int> { using type = int4; };
template <class V>
__device__ auto sum4(const V& a) { return (a.x + a.y) + (a.z + a.w); }

// Steps 6 and 7. in[0, head) and in[head + 4 nv, n) are scalars (in is aligned to 4 bytes, maybe
// not to 16); body = in + head is 16-byte aligned and holds nv vectors.
template <class T, bool kOnePass>
__global__ void __launch_bounds__(kB) reduce_grid_stride(const T* __restrict__ in, std::size_t n,
                                                         T* __restrict__ partials, T* __restrict__ out,
                                                         unsigned* __restrict__ counter) {
  using V = typename Vec4<T>::type;
  const std::size_t head = ((16 - reinterpret_cast<std::uintptr_t>(in) % 16) % 16) / sizeof(T);
  const std::size_t h = head < n ? head : n;
  const std::size_t nv = (n - h) / 4;
  const V* __restrict__ body = reinterpret_cast<const V*>(in + h);
  const std::size_t tid = std::size_t{blockIdx.x} * kB + threadIdx.x;
  const std::size_t stride = std::size_t{gridDim.x} * kB;

  T acc = T{0};
  std::size_t i = tid;
  // Four loads issued before any add uses them: 64 bytes per thread in flight. Consecutive
  // threads read consecutive 16-byte vectors: each warp load is 512 contiguous bytes.
  for (; i + (kUnroll - 1) * stride < nv; i += kUnroll * stride) {
    const V a = body[i], b = body[i + stride], c = body[i + 2 * stride], d = body[i + 3 * stride];
    acc += (sum4(a) + sum4(b)) + (sum4(c) + sum4(d));
  }
  for (; i < nv; i += stride) acc += sum4(body[i]);  // the last < kUnroll trips
  const std::size_t tail = h + 4 * nv;                // fewer than 4 scalars at each end
  if (tid < h) acc += in[tid];
  if (tid < n - tail) acc += in[tail + tid];

  const T block_sum = block_reduce_sum(acc);
  if constexpr (!kOnePass) {
    if (threadIdx.x == 0) out[blockIdx.x] = block_sum;  // partials (grid > 1) or the result
  } else {
    __shared__ bool is_last;
    if (threadIdx.x == 0) {
      partials[blockIdx.x] = block_sum;
      __threadfence();  // the partial is visible device-wide before the counter says it is there
      is_last = atomicAdd(counter, 1u) == gridDim.x - 1;
    }
    __syncthreads();  // every thread learns is_last (and warp_sums may be reused below)
    if (!is_last) return;
    __threadfence();  // acquire side: the partials of every block are read after the counter
    T v = T{0};
    // __ldcg reads through L2 (where the other SMs' writes are), never a stale L1 line. Fixed
    // order of partials: the same sum whichever block arrives last.
    for (unsigned b = threadIdx.x; b < gridDim.x; b += kB) v += __ldcg(partials + b);
    v = block_reduce_sum(v);
    if (threadIdx.x == 0) {
      *out = v;
      *counter = 0;  // ready for the next call: no memset, no second launch
    }
  }
}

// Resident blocks per SM of a kernel, times the SMs: the largest grid that runs in one wave.
// Cached per device and kernel (host-side work inside a timed call would show in the timing).
int resident_grid(const void* kernel, std::atomic<int> (&cache)[64]) {
  int dev = 0;
  CUDALAB_CHECK(cudaGetDevice(&dev));
  if (dev < 64 && cache[dev].load(std::memory_order_relaxed) > 0) return cache[dev].load();
  int sms = 0, per_sm = 0;
  CUDALAB_CHECK(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, dev));
  CUDALAB_CHECK(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&per_sm, kernel, kB, 0));
  const int grid = (per_sm > 0 ? per_sm : 1) * sms;
  if (dev < 64) cache[dev].store(grid);
  return grid;
}

}  // namespace

template <class T>
void launch_grid_stride(bool one_pass, const T* in, T* out, std::size_t n, T* partials, unsigned* counter,
                        cudaStream_t stream) {
  static std::atomic<int> cache_two[64] = {}, cache_one[64] = {};
  const void* kernel = one_pass ? reinterpret_cast<const void*>(reduce_grid_stride<T, true>)
                                : reinterpret_cast<const void*>(reduce_grid_stride<T, false>);
  const std::size_t wanted = ceil_div<std::size_t>(n, kUnroll * 4 * kB);  // >= one full trip each
  const std::size_t resident = static_cast<std::size_t>(resident_grid(kernel, one_pass ? cache_one : cache_two));
  const unsigned grid = static_cast<unsigned>(std::max<std::size_t>(1, std::min(wanted, resident)));
  if (one_pass) {
    reduce_grid_stride<T, true><<<grid, kB, 0, stream>>>(in, n, partials, out, counter);
    CUDALAB_CHECK_LAUNCH();
  } else {
    // Pass 1 leaves `grid` partials; pass 2 (one block) adds them. A single block writes *out.
    reduce_grid_stride<T, false><<<grid, kB, 0, stream>>>(in, n, nullptr, grid == 1 ? out : partials, nullptr);
    CUDALAB_CHECK_LAUNCH();
    if (grid > 1) {
      reduce_grid_stride<T, false><<<1, kB, 0, stream>>>(partials, grid, nullptr, out, nullptr);
      CUDALAB_CHECK_LAUNCH();
    }
  }
}

template <class T>
void launch_shuffle_pass(const T* in, T* block_sums, std::size_t n, cudaStream_t stream) {
  const std::size_t blocks = ceil_div<std::size_t>(n, 2 * kB);
  require(blocks >= 1 && blocks <= 0x7fffffff, "n", "needs between 1 and 2^31 - 1 blocks");
  reduce_warp_shuffle<T><<<static_cast<unsigned>(blocks), kB, 0, stream>>>(in, block_sums, n);
  CUDALAB_CHECK_LAUNCH();
}
}  // namespace cudalab::ch05::detail
