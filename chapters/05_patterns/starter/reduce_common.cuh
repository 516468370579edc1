// Starter track — write your code at the TODO marks; the tests of each exercise
// fail until you do. (Generated from chapters/05_patterns/reference/reduce_common.cuh by scripts/variants.py.)
// Chapter 5 reduction: what the ladder's files share. The host dispatch (reduce.cu) calls one
// launcher per step, each defined in its reduce_<step>_*.cu file; the device helpers below are
// used by more than one step. Compiles on its own (it includes what it uses).
#pragma once

#include <cuda_runtime.h>

#include <algorithm>
#include <atomic>
#include <cstddef>
#include <cstdint>

#include "ch05/reduce.hpp"
#include "cudalab/check.hpp"
#include "cudalab/math.hpp"

namespace cudalab::ch05::detail {

// Elements one block of a steps-1-to-5 pass reduces: 1 or 2 per thread.
constexpr std::size_t elements_per_block(ReduceVariant v) {
  return (v == ReduceVariant::kInterleaved || v == ReduceVariant::kSequential) ? kReduceBlock
                                                                               : 2 * kReduceBlock;
}

// Steps 1-5, one pass each: block b writes the sum of in[b * E, (b + 1) * E) ∩ [0, n) to
// block_sums[b], E = elements_per_block(step), on `grid` = ceil(n / E) blocks (reduce.cu sizes
// and checks the grid).
template <class T>
void launch_interleaved_pass(dim3 grid, const T* in, T* block_sums, std::size_t n,
                             cudaStream_t stream);
template <class T>
void launch_sequential_pass(dim3 grid, const T* in, T* block_sums, std::size_t n,
                            cudaStream_t stream);
template <class T>
void launch_first_add_pass(dim3 grid, const T* in, T* block_sums, std::size_t n,
                           cudaStream_t stream);
template <class T>
void launch_last_warp_pass(dim3 grid, const T* in, T* block_sums, std::size_t n,
                           cudaStream_t stream);
template <class T>
void launch_shuffle_pass(dim3 grid, const T* in, T* block_sums, std::size_t n, cudaStream_t stream);

// Steps 6 and 7: a device-sized grid; *out = the sum. `partials` holds at least
// grid_stride_blocks_max(n) elements.
template <class T>
void launch_vectorized(const T* in, T* out, std::size_t n, T* partials, cudaStream_t stream);

// Step 7's bookkeeping, at the start of the workspace (zeroed once by the caller). `counter`
// counts the blocks that have written their partial; the last block sets it back to 0. `epoch`
// counts the calls; arrived[b] = epoch + 1 says block b of this call wrote its partial. A counter
// left non-zero (a call that did not finish, a workspace that was not zeroed) would make a block
// "last" before every partial is there: the last block checks arrived[] and sets `dirty` instead
// of writing a wrong sum (reduce.cu's reduce_check_workspace reads it).
struct OnePassState {
  unsigned counter;
  unsigned epoch;
  unsigned dirty;  // 0, or why the last call could not trust the counter (see kDirty*)
};
inline constexpr unsigned kDirtyCounterAhead = 1;  // a block drew a ticket >= gridDim.x
inline constexpr unsigned kDirtyMissingBlock = 2;  // the "last" block found a partial missing
template <class T>
void launch_one_pass(const T* in, T* out, std::size_t n, T* partials, OnePassState* state,
                     unsigned* arrived, cudaStream_t stream);

// Steps 6 and 7: independent 16-byte loads each thread issues per trip of the grid-stride loop.
inline constexpr unsigned kGridStrideUnroll = 4;
// An upper bound on the grid steps 6 and 7 use for n elements (sizes the workspace).
constexpr std::size_t grid_stride_blocks_max(std::size_t n) {
  return ceil_div<std::size_t>(n, kGridStrideUnroll * 4 * kReduceBlock) + 1;
}

// Steps 3-5 load two elements per thread: one from each half of the block's 2 * kReduceBlock
// slice, so both loads of a warp are coalesced (32 consecutive elements each). Past n: the
// identity, so a partial block sums correctly.
template <class T>
__device__ T load_two(const T* __restrict__ in, std::size_t n) {
  const std::size_t i = std::size_t{blockIdx.x} * (2 * kReduceBlock) + threadIdx.x;
  T v = i < n ? in[i] : T{0};
  if (i + kReduceBlock < n) v += in[i + kReduceBlock];
  return v;
}

// Steps 6 and 7: 16-byte vectors of four elements.
template <class T>
struct Vec4;
template <>
struct Vec4<float> {
  using type = float4;
};
template <>
struct Vec4<int> {
  using type = int4;
};
template <class V>
__device__ auto sum4(const V& a) {
  return (a.x + a.y) + (a.z + a.w);
}

// Steps 6 and 7: this thread's share of in[0, n) on a grid-stride walk. in[0, head) and
// in[head + 4 nv, n) are scalars (in is aligned to 4 bytes, maybe not to 16); body = in + head
// is 16-byte aligned and holds nv vectors.
template <class T>
__device__ __forceinline__ T grid_stride_thread_sum(const T* __restrict__ in, std::size_t n) {
  constexpr unsigned kB = kReduceBlock;
  constexpr unsigned kUnroll = kGridStrideUnroll;  // independent 16-byte loads per thread per trip
  using V = typename Vec4<T>::type;
  const std::size_t head = elements_to_alignment(in, sizeof(T), sizeof(V));
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
  const std::size_t tail = h + 4 * nv;               // fewer than 4 scalars at each end
  if (tid < h) acc += in[tid];
  if (tid < n - tail) acc += in[tail + tid];
  return acc;
}

// Steps 6 and 7: resident blocks per SM of a kernel, times the SMs: the largest grid that runs in
// one wave. Cached per device and kernel (host-side work inside a timed call would show in the
// timing): each caller passes its own cache.
inline int resident_grid(const void* kernel, std::atomic<int> (&cache)[64]) {
  int dev = 0;
  CUDALAB_CHECK(cudaGetDevice(&dev));
  if (dev < 64 && cache[dev].load(std::memory_order_relaxed) > 0) return cache[dev].load();
  int sms = 0, per_sm = 0;
  CUDALAB_CHECK(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, dev));
  CUDALAB_CHECK(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&per_sm, kernel, kReduceBlock, 0));
  const int grid = (per_sm > 0 ? per_sm : 1) * sms;
  if (dev < 64) cache[dev].store(grid);
  return grid;
}

// Steps 6 and 7: the grid for n elements: at least one full trip per thread, at most one wave.
inline unsigned grid_stride_grid(const void* kernel, std::atomic<int> (&cache)[64], std::size_t n) {
  const std::size_t wanted = ceil_div<std::size_t>(n, kGridStrideUnroll * 4 * kReduceBlock);
  const auto resident = static_cast<std::size_t>(resident_grid(kernel, cache));
  return static_cast<unsigned>(std::max<std::size_t>(1, std::min(wanted, resident)));
}

}  // namespace cudalab::ch05::detail
