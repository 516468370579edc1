// Starter track — write your code at the TODO marks; the tests of each exercise
// fail until you do. (Generated from chapters/05_patterns/reference/reduce_internal.hpp by scripts/gen_starter.py.)
// Chapter 5 reduction, between the host dispatch (reduce.cu) and the kernel files. Host-only: the
// kernels stay private to their .cu file; each file exports launchers for float and int.
#pragma once

#include <cuda_runtime_api.h>

#include <cstddef>

#include "ch05/reduce.hpp"
#include "cudalab/math.hpp"

namespace cudalab::ch05::detail {

// Elements one block of a steps-1-to-5 pass reduces: 1 or 2 per thread.
constexpr std::size_t elements_per_block(ReduceVariant v) {
  return (v == ReduceVariant::kInterleaved || v == ReduceVariant::kSequential) ? kReduceBlock
                                                                               : 2 * kReduceBlock;
}

// reduce_tree.cu, steps 1-4 (it dispatches steps 2 and 4 to the two files below): block b writes
// the sum of in[b * E, (b + 1) * E) ∩ [0, n) to block_sums[b], E = elements_per_block(v), with
// ceil(n / E) blocks.
template <class T>
void launch_tree_pass(ReduceVariant v, const T* in, T* block_sums, std::size_t n, cudaStream_t stream);

// reduce_tree_sequential.cu (step 2, exercise 5.1) and reduce_tree_last_warp.cu (step 4): one
// pass of that step on `grid` blocks (launch_tree_pass sizes the grid and checks it).
template <class T>
void launch_sequential_pass(dim3 grid, const T* in, T* block_sums, std::size_t n, cudaStream_t stream);
template <class T>
void launch_last_warp_pass(dim3 grid, const T* in, T* block_sums, std::size_t n, cudaStream_t stream);

// reduce_shuffle.cu (its kernels are in reduce_shuffle.cuh), step 5: the same contract as
// launch_tree_pass.
template <class T>
void launch_shuffle_pass(const T* in, T* block_sums, std::size_t n, cudaStream_t stream);

// reduce_shuffle.cu, steps 6 and 7: a device-sized grid; *out = the sum. `partials` holds at least
// grid_stride_blocks_max(n) elements; `counter` (kOnePass) is 0 on entry and 0 again on return.
template <class T>
void launch_grid_stride(bool one_pass, const T* in, T* out, std::size_t n, T* partials,
                        unsigned* counter, cudaStream_t stream);
// Steps 6 and 7: independent 16-byte loads each thread issues per trip of the grid-stride loop.
inline constexpr unsigned kGridStrideUnroll = 4;
// An upper bound on the grid launch_grid_stride uses for n elements (sizes the workspace).
constexpr std::size_t grid_stride_blocks_max(std::size_t n) {
  return ceil_div<std::size_t>(n, kGridStrideUnroll * 4 * kReduceBlock) + 1;
}

}  // namespace cudalab::ch05::detail
