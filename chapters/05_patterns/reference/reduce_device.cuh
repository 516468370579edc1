// Device pieces several reduction kernels share (reduce_tree.cu, reduce_tree_last_warp.cu,
// reduce_shuffle.cuh). Private to the chapter.
#pragma once

#include <cstddef>

#include "ch05/reduce.hpp"

namespace cudalab::ch05::detail {

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

}  // namespace cudalab::ch05::detail
