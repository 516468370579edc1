// Starter track — write your code at the TODO marks; the tests of each exercise
// fail until you do. (Generated from chapters/05_patterns/reference/reduce_tree.cu by scripts/gen_starter.py.)
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
//  2 sequential (exercise 5.1): whole warps are active or idle at every level, and a warp's
//    shared-memory reads are conflict-free.
//  3 first add during load: each thread adds two elements while loading, so half the blocks do
//    the same work and no thread idles from the first step. Its tree is exercise 5.1's.
//  4 unroll the last warp: once s <= 32 only warp 0 works, and a warp needs no __syncthreads:
//    __syncwarp() (cheaper, and required since Volta's independent thread scheduling) is enough.
//    Its upper levels are exercise 5.1's tree.
//
// Files: steps 1 and 3 and the dispatch are here; step 2 (exercise 5.1) is in
// reduce_tree_sequential.cu and step 4 in reduce_tree_last_warp.cu, each on its own so that a
// pitfall that breaks one step copies only that step; reduce_device.cuh has the load of steps 3-5.
#include "ch05/reduce.hpp"
#include "cudalab/check.hpp"
#include "cudalab/math.hpp"
#include "reduce_internal.hpp"
#include "reduce_device.cuh"

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

// Step 3: first add during load, then the sequential tree.
template <class T>
__global__ void __launch_bounds__(kB) reduce_first_add(const T* __restrict__ in, T* __restrict__ block_sums,
                                                       std::size_t n) {
  __shared__ T sdata[kB];
  const unsigned tid = threadIdx.x;
  sdata[tid] = load_two(in, n);
  __syncthreads();  // every partial is in shared memory before the tree reads it
  // TODO(5.1): step 3 reduces its kB partials with the same tree as step 2 (exercise 5.1,
  //   reduce_tree_sequential.cu): the same contract, on the partials load_two produced. Step 3 is a
  //   worked example once your 5.1 passes: its tests fail in the starter until this is written.
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
      CUDALAB_CHECK_LAUNCH();
      return;
    case ReduceVariant::kSequential: return launch_sequential_pass(grid, in, block_sums, n, stream);
    case ReduceVariant::kFirstAddDuringLoad:
      reduce_first_add<T><<<grid, kB, 0, stream>>>(in, block_sums, n);
      CUDALAB_CHECK_LAUNCH();
      return;
    case ReduceVariant::kUnrollLastWarp: return launch_last_warp_pass(grid, in, block_sums, n, stream);
    default: break;
  }
  require(false, "variant", "not a shared-memory tree variant");
}

template void launch_tree_pass<float>(ReduceVariant, const float*, float*, std::size_t, cudaStream_t);
template void launch_tree_pass<int>(ReduceVariant, const int*, int*, std::size_t, cudaStream_t);

}  // namespace cudalab::ch05::detail
