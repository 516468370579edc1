// PITFALL (replaces reference/reduce_tree.cu, exercise 5.1 file; step 4 of the ladder): the
// unrolled last warp without `volatile` and without __syncwarp(). See warp_tail below.
// Fix: the reference's warp_tail (volatile pointer, read -> __syncwarp -> write -> __syncwarp),
// or better, step 5: __shfl_down_sync keeps the values in registers and needs neither.
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
  sdata[tid] = i < n ? in[i] : T{0};
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

// Step 4: the levels s = 32 ... 1 inside warp 0 — written as in the 2007 slides, minus `volatile`.
// BUG: nothing tells the compiler that other lanes read sdata between these statements. It sees
// six loads from addresses other than sdata[tid] and six stores to sdata[tid], so it keeps
// sdata[tid] in a register, issues all six loads first and stores once at the end (look at the
// PTX: one st.shared). Lane 0 then adds the ORIGINAL sdata[32], [16], [8], [4], [2], [1]: most of
// the 64 partials are lost, every time, on every GPU. (Adding `volatile` alone restores the
// stores but still relies on lockstep execution, which Volta's independent thread scheduling no
// longer guarantees: the reference also places __syncwarp() between each read and write.)
// Caught by: ReduceGpu.*/unroll_last_warp_n_* (every n above a few dozen elements).
template <class T>
__device__ void warp_tail(T* sdata, unsigned tid) {
  sdata[tid] += sdata[tid + 32];
  sdata[tid] += sdata[tid + 16];
  sdata[tid] += sdata[tid + 8];
  sdata[tid] += sdata[tid + 4];
  sdata[tid] += sdata[tid + 2];
  sdata[tid] += sdata[tid + 1];
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
