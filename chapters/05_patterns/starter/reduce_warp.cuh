// Starter track — write your code at the TODO marks; the tests of each exercise
// fail until you do. (Generated from chapters/05_patterns/reference/reduce_warp.cuh by scripts/variants.py.)
// Reduction ladder, step 5's lesson (exercise 5.2): a warp and a block reduced in registers.
//
// A warp can sum its 32 registers without shared memory or barriers (exercise 5.2). A block then
// needs shared memory only for its kReduceBlock / 32 warp sums. Steps 5, 6 and 7
// (reduce_5_warp_shuffle.cu, reduce_6_vectorized.cu, reduce_7_one_pass.cu) reduce their warps and
// blocks with these two functions. Compiles on its own (it includes what it uses).
#pragma once

#include <cuda_runtime.h>

#include "ch05/reduce.hpp"

namespace cudalab::ch05::detail {

// The sum of v over the 32 lanes of a warp, valid in lane 0 (all lanes must call it).
template <class T>
__device__ T warp_reduce_sum(T v) {
  [[maybe_unused]] constexpr unsigned kFullMask = 0xffffffffu;  // all 32 lanes take part
  // TODO(5.2): warp_reduce_sum(v).
  //   Contract: called by all 32 lanes of a warp (converged), each with its own v; returns the sum
  //     of the 32 values in lane 0 (the other lanes' results are unspecified). T is float or int.
  //   Constraints: registers only: no shared memory, no __syncthreads, no atomics; every lane of
  //     the warp takes part (kFullMask).
  //   Goal: BM_reduce_sum/warp_shuffle >= 0.45x BM_reduce_sum_cub at 2^28 floats;
  //     steps 6-7, which call your function, run at about CUB's rate; `scripts/lab check 5.2`.
  return v;
}

// The sum of v over the block, valid in thread 0. Every thread must call it (it synchronizes);
// it may be called again after a __syncthreads() that follows the previous call.
template <class T>
__device__ T block_reduce_sum(T v) {
  constexpr unsigned kWarps = kReduceBlock / 32;
  static_assert(kWarps <= 32, "warp 0 reduces the warp sums in one shuffle round");
  __shared__ T warp_sums[kWarps];
  const unsigned lane = threadIdx.x % 32, warp = threadIdx.x / 32;
  v = warp_reduce_sum(v);
  if (lane == 0) warp_sums[warp] = v;
  __syncthreads();  // every warp's sum is in shared memory before warp 0 reads them
  if (warp == 0) v = warp_reduce_sum(lane < kWarps ? warp_sums[lane] : T{0});
  return v;
}

}  // namespace cudalab::ch05::detail
