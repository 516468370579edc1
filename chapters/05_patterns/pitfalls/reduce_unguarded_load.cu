// PITFALL (replaces reference/reduce_tree.cu, exercise 5.1): the load into shared memory has no
// `i < n` guard. The last block of every pass covers kReduceBlock elements whether or not n is a
// multiple of it, so its threads past n read whatever lies behind the input (the next buffer,
// another array's data, or an unmapped page) and add it to the sum. It "works" whenever n is a
// multiple of 256 and on freshly zeroed memory, which is why it survives casual testing.
// Fix: `sdata[tid] = i < n ? in[i] : T{0};` (0 is the identity of +).
// Caught by: ReduceGpu.*/sequential_n_33_* (and every n not a multiple of 256): the input is
// followed by a guard zone of NaN / 2^24 (GuardedInput in tests/ch05/reduce_scan_testing.hpp).
// Reduction ladder, steps 1-4: a tree in shared memory (Harris, "Optimizing Parallel Reduction").
//
// Every kernel here: block b loads its slice of the input into shared memory and halves the
// number of partial sums at each step until sdata[0] holds the block's sum, then writes it to
// block_sums[b]. The host launches again on the block sums until one value is left (reduce.cu).
// Launch shape: ceil(n / E) blocks of kReduceBlock threads, E = 1 or 2 elements per thread.
// Bytes: 4n read by the first pass (the later ones read n / E, n / E^2, ...).
//
// What each step changes and why it is faster:
//  1 interleaved: `tid % (2s) == 0` selects the working threads: in every warp only a few lanes
//    work (divergence) and the modulo is slow. Only the first of log2(256) = 8 steps keeps
//    every warp busy with useful work.
//  2 sequential (exercise 5.1): the first s threads work, reading sdata[tid + s]: whole warps are
//    active or idle, and a warp reads 32 consecutive words (no bank conflicts).
//  3 first add during load: each thread adds two elements while loading, so half the blocks do
//    the same work and no thread idles from the first step.
//  4 unroll the last warp: once s <= 32 only warp 0 works, and a warp needs no __syncthreads:
//    __syncwarp() (cheaper, and required since Volta's independent thread scheduling) is enough.
#include "ch05/reduce.hpp"
#include "cudalab/check.hpp"
#include "cudalab/math.hpp"
#include "reduce_internal.hpp"

namespace cudalab::ch05::detail {
namespace {

constexpr unsigned kB = kReduceBlock;

// Step 1: interleaved addressing. Divergent: at stride s, lanes with tid % 2s == 0 work.
template <class T>
__global__ void __launch_bounds__(kB) reduce_interleaved(const T* __restrict__ in, T* __restrict__ block_sums,
                                                         std::size_t n) {
  __shared__ T sdata[kB];
  const unsigned tid = threadIdx.x;
  const std::size_t i = std::size_t{blockIdx.x} * kB + tid;
  sdata[tid] = i < n ? in[i] : T{0};  // past n: the identity, so a partial block sums correctly
  __syncthreads();                    // every element is in shared memory before the tree reads it
  for (unsigned s = 1; s < kB; s *= 2) {
    if (tid % (2 * s) == 0) sdata[tid] += sdata[tid + s];
    __syncthreads();  // this level is complete before the next one reads it
  }
  if (tid == 0) block_sums[blockIdx.x] = sdata[0];
}

// Step 2: sequential addressing (exercise 5.1). Threads 0..s-1 add the upper half onto the lower.
template <class T>
__global__ void __launch_bounds__(kB) reduce_sequential(const T* __restrict__ in, T* __restrict__ block_sums,
                                                        std::size_t n) {
  __shared__ T sdata[kB];
  const unsigned tid = threadIdx.x;
  const std::size_t i = std::size_t{blockIdx.x} * kB + tid;
  sdata[tid] = in[i];  // BUG: no `i < n` guard: the last block reads past the end
  __syncthreads();  // every element is in shared memory before the tree reads it
  // BEGIN EXERCISE 5.1
  // TODO(5.1): the tree with sequential addressing: for s = kB / 2, kB / 4, ..., 1, the first s
  //            threads add sdata[tid + s] onto sdata[tid]; a __syncthreads() after each level.
  //            Then sdata[0] holds the block's sum (written below).
  for (unsigned s = kB / 2; s > 0; s /= 2) {
    if (tid < s) sdata[tid] += sdata[tid + s];
    __syncthreads();  // level s is complete before level s / 2 reads it
  }
  // END EXERCISE
  if (tid == 0) block_sums[blockIdx.x] = sdata[0];
}

// Steps 3 and 4 load two elements per thread: one from each half of the block's 2 * kB slice,
// so both loads of a warp are coalesced (32 consecutive elements each).
template <class T>
__device__ T load_two(const T* __restrict__ in, std::size_t n) {
  const std::size_t i = std::size_t{blockIdx.x} * (2 * kB) + threadIdx.x;
  T v = i < n ? in[i] : T{0};
  if (i + kB < n) v += in[i + kB];
  return v;
}

// Step 3: first add during load, then the sequential tree.
template <class T>
__global__ void __launch_bounds__(kB) reduce_first_add(const T* __restrict__ in, T* __restrict__ block_sums,
                                                       std::size_t n) {
  __shared__ T sdata[kB];
  const unsigned tid = threadIdx.x;
  sdata[tid] = load_two(in, n);
  __syncthreads();  // every partial is in shared memory before the tree reads it
  for (unsigned s = kB / 2; s > 0; s /= 2) {
    if (tid < s) sdata[tid] += sdata[tid + s];
    __syncthreads();  // level s is complete before level s / 2 reads it
  }
  if (tid == 0) block_sums[blockIdx.x] = sdata[0];
}

// Step 4: the levels s = 32 ... 1 run inside warp 0 with __syncwarp() instead of __syncthreads().
// Each level reads into a register, syncs, then writes: a lane never overwrites a value another
// lane still has to read. `volatile` keeps every shared-memory access a real load or store.
template <class T>
__device__ void warp_tail(volatile T* sdata, unsigned tid) {
  T v = sdata[tid] + sdata[tid + 32];
#pragma unroll
  for (unsigned s = 16; s > 0; s /= 2) {
    __syncwarp();  // every lane has read level 2s before anyone writes it
    sdata[tid] = v;
    __syncwarp();  // the writes of this level are visible to the whole warp
    v += sdata[tid + s];
  }
  if (tid == 0) sdata[0] = v;
}

template <class T>
__global__ void __launch_bounds__(kB) reduce_unroll_last_warp(const T* __restrict__ in,
                                                              T* __restrict__ block_sums, std::size_t n) {
  __shared__ T sdata[kB];
  const unsigned tid = threadIdx.x;
  sdata[tid] = load_two(in, n);
  __syncthreads();  // every partial is in shared memory before the tree reads it
  for (unsigned s = kB / 2; s > 32; s /= 2) {
    if (tid < s) sdata[tid] += sdata[tid + s];
    __syncthreads();  // level s is complete before level s / 2 reads it
  }
  if (tid < 32) warp_tail(sdata, tid);  // sdata[0..63] hold the last 64 partials
  if (tid == 0) block_sums[blockIdx.x] = sdata[0];
}

}  // namespace

template <class T>
void launch_tree_pass(ReduceVariant v, const T* in, T* block_sums, std::size_t n, cudaStream_t stream) {
  const std::size_t blocks = ceil_div(n, elements_per_block(v));
  require(blocks >= 1 && blocks <= 0x7fffffff, "n", "needs between 1 and 2^31 - 1 blocks");
  const dim3 grid(static_cast<unsigned>(blocks));
  switch (v) {
    case ReduceVariant::kInterleaved:
      reduce_interleaved<T><<<grid, kB, 0, stream>>>(in, block_sums, n);
      break;
    case ReduceVariant::kSequential:
      reduce_sequential<T><<<grid, kB, 0, stream>>>(in, block_sums, n);
      break;
    case ReduceVariant::kFirstAddDuringLoad:
      reduce_first_add<T><<<grid, kB, 0, stream>>>(in, block_sums, n);
      break;
    case ReduceVariant::kUnrollLastWarp:
      reduce_unroll_last_warp<T><<<grid, kB, 0, stream>>>(in, block_sums, n);
      break;
    default:
      require(false, "variant", "not a shared-memory tree variant");
  }
  CUDALAB_CHECK_LAUNCH();
}

template void launch_tree_pass<float>(ReduceVariant, const float*, float*, std::size_t, cudaStream_t);
template void launch_tree_pass<int>(ReduceVariant, const int*, int*, std::size_t, cudaStream_t);

}  // namespace cudalab::ch05::detail
