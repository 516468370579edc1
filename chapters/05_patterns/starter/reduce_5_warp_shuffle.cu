// Starter track — write your code at the TODO marks; the tests of each exercise
// fail until you do. (Generated from chapters/05_patterns/reference/reduce_5_warp_shuffle.cu by scripts/variants.py.)
// Reduction ladder, step 5: warp shuffles instead of shared memory inside each warp (exercise
// 5.2, whose warp_reduce_sum is in reduce_warp.cuh: steps 6 and 7 use it too).
//
// Inside a warp, the lanes sum their registers with shuffles, with no shared memory and no
// barrier. A block needs shared memory only for its
// kReduceBlock / 32 warp sums (block_reduce_sum). Loads as step 3: two elements per thread.
// Launch shape: ceil(n / (2 kReduceBlock)) blocks of kReduceBlock threads; the host launches
// again on the block sums until one value is left (reduce.cu).
#include "ch05/reduce.hpp"
#include "cudalab/check.hpp"
#include "reduce_common.cuh"
#include "reduce_warp.cuh"

namespace cudalab::ch05::detail {
namespace {

constexpr unsigned kB = kReduceBlock;

// Two elements per thread while loading (load_two, as steps 3 and 4), then shuffles.
template <class T>
__global__ void __launch_bounds__(kB)
    reduce_warp_shuffle(const T* __restrict__ in, T* __restrict__ block_sums, std::size_t n) {
  T v = load_two(in, n);
  v = block_reduce_sum(v);
  if (threadIdx.x == 0) block_sums[blockIdx.x] = v;
}

}  // namespace

template <class T>
void launch_shuffle_pass(dim3 grid, const T* in, T* block_sums, std::size_t n,
                         cudaStream_t stream) {
  reduce_warp_shuffle<T><<<grid, kB, 0, stream>>>(in, block_sums, n);
  CUDALAB_CHECK_LAUNCH();
}

template void launch_shuffle_pass<float>(dim3, const float*, float*, std::size_t, cudaStream_t);
template void launch_shuffle_pass<int>(dim3, const int*, int*, std::size_t, cudaStream_t);

}  // namespace cudalab::ch05::detail
