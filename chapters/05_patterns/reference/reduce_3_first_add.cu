// Reduction ladder, step 3: the first add during the load (Harris, kernel 4).
//
// Each thread adds two elements while loading (load_two, reduce_common.cuh), so half the blocks
// do the same work and no thread idles from the first level. Then step 2's tree.
// Launch shape: ceil(n / (2 kReduceBlock)) blocks of kReduceBlock threads; contract of steps 1-4
// in reduce_1_interleaved.cu.
#include "ch05/reduce.hpp"
#include "cudalab/check.hpp"
#include "reduce_common.cuh"
#include "reduce_tree.cuh"

namespace cudalab::ch05::detail {
namespace {

constexpr unsigned kB = kReduceBlock;

// First add during load, then the sequential tree (exercise 5.1's).
template <class T>
__global__ void __launch_bounds__(kB)
    reduce_first_add(const T* __restrict__ in, T* __restrict__ block_sums, std::size_t n) {
  __shared__ T sdata[kB];
  const unsigned tid = threadIdx.x;
  sdata[tid] = load_two(in, n);
  __syncthreads();                   // every partial is in shared memory before the tree reads it
  block_tree_reduce<0>(sdata, tid);  // exercise 5.1 (reduce_tree.cuh)
  if (tid == 0) block_sums[blockIdx.x] = sdata[0];
}

}  // namespace

template <class T>
void launch_first_add_pass(dim3 grid, const T* in, T* block_sums, std::size_t n,
                           cudaStream_t stream) {
  reduce_first_add<T><<<grid, kB, 0, stream>>>(in, block_sums, n);
  CUDALAB_CHECK_LAUNCH();
}

template void launch_first_add_pass<float>(dim3, const float*, float*, std::size_t, cudaStream_t);
template void launch_first_add_pass<int>(dim3, const int*, int*, std::size_t, cudaStream_t);

}  // namespace cudalab::ch05::detail
