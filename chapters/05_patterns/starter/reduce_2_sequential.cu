// Starter track — write your code at the TODO marks; the tests of each exercise
// fail until you do. (Generated from chapters/05_patterns/reference/reduce_2_sequential.cu by scripts/variants.py.)
// Reduction ladder, step 2: the shared-memory tree with sequential addressing (exercise 5.1;
// Harris, kernel 3).
//
// The tree itself (block_tree_reduce, exercise 5.1) is in reduce_tree.cuh: steps 3 and 4 use it
// too. Launch shape and contract of steps 1-4: reduce_1_interleaved.cu (kReduceBlock threads, one
// element per thread).
#include "ch05/reduce.hpp"
#include "cudalab/check.hpp"
#include "reduce_common.cuh"
#include "reduce_tree.cuh"

namespace cudalab::ch05::detail {
namespace {

constexpr unsigned kB = kReduceBlock;

// One element per thread, then the tree with sequential addressing (exercise 5.1).
template <class T>
__global__ void __launch_bounds__(kB)
    reduce_sequential(const T* __restrict__ in, T* __restrict__ block_sums, std::size_t n) {
  __shared__ T sdata[kB];
  const unsigned tid = threadIdx.x;
  const std::size_t i = std::size_t{blockIdx.x} * kB + tid;
  // The load into shared memory has no `i < n` guard. The last block of every pass covers
  // kReduceBlock elements whether or not n is a multiple of it, so its threads past n read
  // whatever lies behind the input (the next buffer, another array's data, or an unmapped page)
  // and add it to the sum. It "works" whenever n is a multiple of 256 and on freshly zeroed
  // memory, which is why it survives casual testing. Caught by: ReduceGpu.*/sequential_n_33_*
  // (and every n not a multiple of 256): the input is followed by a guard zone of NaN / 2^24
  // (GuardedInput in tests/ch05). The fix: `sdata[tid] = i < n ? in[i] : T{0};` (0 is the
  // identity of +).
  sdata[tid] = i < n ? in[i] : T{0};  // past n: the identity, so a partial block sums correctly
  __syncthreads();                   // every element is in shared memory before the tree reads it
  block_tree_reduce<0>(sdata, tid);  // exercise 5.1 (reduce_tree.cuh)
  if (tid == 0) block_sums[blockIdx.x] = sdata[0];
}

}  // namespace

template <class T>
void launch_sequential_pass(dim3 grid, const T* in, T* block_sums, std::size_t n,
                            cudaStream_t stream) {
  reduce_sequential<T><<<grid, kB, 0, stream>>>(in, block_sums, n);
  CUDALAB_CHECK_LAUNCH();
}

template void launch_sequential_pass<float>(dim3, const float*, float*, std::size_t, cudaStream_t);
template void launch_sequential_pass<int>(dim3, const int*, int*, std::size_t, cudaStream_t);

}  // namespace cudalab::ch05::detail
