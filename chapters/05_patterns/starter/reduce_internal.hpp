// Starter track — write your code at the TODO marks; the tests of each exercise
// fail until you do. (Generated from chapters/05_patterns/reference/reduce_internal.hpp by scripts/gen_starter.py.)
// Chapter 5 reduction, between the host dispatch (reduce.cu) and the kernel files. Host-only: the
// kernels stay private to their .cu file; each file exports launchers for float and int.
#pragma once

#include <cuda_runtime_api.h>

#include <cstddef>

#include "ch05/reduce.hpp"

namespace cudalab::ch05::detail {

// Elements one block of a steps-1-to-5 pass reduces: 1 or 2 per thread.
constexpr std::size_t elements_per_block(ReduceVariant v) {
  return (v == ReduceVariant::kInterleaved || v == ReduceVariant::kSequential) ? kReduceBlock
                                                                               : 2 * kReduceBlock;
}

// reduce_tree.cu, steps 1-4: block b writes the sum of in[b * E, (b + 1) * E) ∩ [0, n) to
// block_sums[b], E = elements_per_block(v), with ceil(n / E) blocks.
template <class T>
void launch_tree_pass(ReduceVariant v, const T* in, T* block_sums, std::size_t n, cudaStream_t stream);

// reduce_shuffle.cu, step 5: the same contract as launch_tree_pass.
template <class T>
void launch_shuffle_pass(const T* in, T* block_sums, std::size_t n, cudaStream_t stream);

// reduce_shuffle.cu, steps 6 and 7: a device-sized grid; *out = the sum. `partials` holds at least
// grid_stride_blocks(n) elements; `counter` (kOnePass) is 0 on entry and 0 again on return.
template <class T>
void launch_grid_stride(bool one_pass, const T* in, T* out, std::size_t n, T* partials,
                        unsigned* counter, cudaStream_t stream);
// An upper bound on the grid launch_grid_stride uses for n elements (sizes the workspace).
std::size_t grid_stride_blocks_max(std::size_t n);

}  // namespace cudalab::ch05::detail
