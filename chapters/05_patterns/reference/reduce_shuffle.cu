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
  for (unsigned offset = 16; offset > 0; offset /= 2) v += __shfl_down_sync(kFullMask, v, offset);
  // END EXERCISE
  return v;
}

}  // namespace

template void launch_shuffle_pass<float>(const float*, float*, std::size_t, cudaStream_t);
template void launch_shuffle_pass<int>(const int*, int*, std::size_t, cudaStream_t);
template void launch_grid_stride<float>(bool, const float*, float*, std::size_t, float*, unsigned*, cudaStream_t);
template void launch_grid_stride<int>(bool, const int*, int*, std::size_t, int*, unsigned*, cudaStream_t);

}  // namespace cudalab::ch05::detail
