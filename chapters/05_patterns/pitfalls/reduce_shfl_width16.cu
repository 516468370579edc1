// PITFALL (replaces reference/reduce_shuffle.cu, exercise 5.2): __shfl_down_sync with width 16.
// The optional 4th argument splits the warp into independent segments of `width` lanes; a
// source lane beyond its segment is not read: the caller gets its OWN value back. With width 16
// the first step (offset 16) adds each lane to itself, and lanes 16-31 never reach lane 0: the
// "warp sum" is twice the sum of lanes 0-15. (A mask that leaves out active lanes is the
// sibling mistake: undefined results, and a hang on some GPUs.) Fix: width = 32 (the default)
// and mask 0xffffffff when all 32 lanes take part.
// Steps 5-7 (reduce_shuffle.cuh, included unchanged) all reduce their warps with this function.
// Caught by: ReduceGpu.*/warp_shuffle_*, vectorized_*, one_pass_* (every size, even n = 1).
// Reduction ladder, step 5's warp reduction (exercise 5.2), and the translation unit of steps 5-7.
//
// __shfl_down_sync moves a register from lane i + offset to lane i: five shuffles sum 32 values
// with no shared memory and no barrier. Every kernel of steps 5-7 (reduce_shuffle.cuh) reduces
// its warps with warp_reduce_sum, so it is compiled here with them.
#include "reduce_shuffle.cuh"

namespace cudalab::ch05::detail {
namespace {

// The sum of v over the 32 lanes of a warp, valid in lane 0 (all lanes must call it).
template <class T>
__device__ T warp_reduce_sum(T v) {
  [[maybe_unused]] constexpr unsigned kFullMask = 0xffffffffu;  // all 32 lanes take part
  // BEGIN EXERCISE 5.2
  // TODO(5.2): tree reduction in registers. For offset = 16, 8, 4, 2, 1:
  //            v += __shfl_down_sync(kFullMask, v, offset);  (lane i receives lane i + offset)
  //            After the five steps lane 0 holds the sum of the 32 lanes.
#pragma unroll
  for (unsigned offset = 16; offset > 0; offset /= 2) v += __shfl_down_sync(kFullMask, v, offset, 16);  // BUG: width 16
  // END EXERCISE
  return v;
}

}  // namespace

template void launch_shuffle_pass<float>(const float*, float*, std::size_t, cudaStream_t);
template void launch_shuffle_pass<int>(const int*, int*, std::size_t, cudaStream_t);
template void launch_grid_stride<float>(bool, const float*, float*, std::size_t, float*, unsigned*, cudaStream_t);
template void launch_grid_stride<int>(bool, const int*, int*, std::size_t, int*, unsigned*, cudaStream_t);

}  // namespace cudalab::ch05::detail
