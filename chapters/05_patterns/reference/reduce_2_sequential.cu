// Reduction ladder, step 2: the shared-memory tree with sequential addressing (exercise 5.1;
// Harris, kernel 3).
//
// The first s threads work, reading sdata[tid + s]: whole warps are active or idle (no
// divergence inside a warp until s < 32), and a warp reads 32 consecutive words (no bank
// conflicts). Launch shape and contract of steps 1-4: reduce_1_interleaved.cu (kReduceBlock
// threads, one element per thread).
#include "ch05/reduce.hpp"
#include "cudalab/check.hpp"
#include "reduce_common.cuh"

namespace cudalab::ch05::detail {
namespace {

constexpr unsigned kB = kReduceBlock;

// Sequential addressing: whole warps are active or idle at every level, and a warp's reads are
// conflict-free (exercise 5.1).
template <class T>
__global__ void __launch_bounds__(kB)
    reduce_sequential(const T* __restrict__ in, T* __restrict__ block_sums, std::size_t n) {
  __shared__ T sdata[kB];
  const unsigned tid = threadIdx.x;
  const std::size_t i = std::size_t{blockIdx.x} * kB + tid;
  // BEGIN PITFALL reduce_unguarded_load EXERCISES 5.1
  // The load into shared memory has no `i < n` guard. The last block of every pass covers
  // kReduceBlock elements whether or not n is a multiple of it, so its threads past n read
  // whatever lies behind the input (the next buffer, another array's data, or an unmapped page)
  // and add it to the sum. It "works" whenever n is a multiple of 256 and on freshly zeroed
  // memory, which is why it survives casual testing. Caught by: ReduceGpu.*/sequential_n_33_*
  // (and every n not a multiple of 256): the input is followed by a guard zone of NaN / 2^24
  // (GuardedInput in tests/ch05). The fix: `sdata[tid] = i < n ? in[i] : T{0};` (0 is the
  // identity of +).
  sdata[tid] = i < n ? in[i] : T{0};  // past n: the identity, so a partial block sums correctly
  // BUG: sdata[tid] = in[i];
  // END PITFALL
  __syncthreads();  // every element is in shared memory before the tree reads it
  // BEGIN EXERCISE 5.1
  // TODO(5.1): the block's tree reduction, step 2 of the ladder.
  //   Contract: on entry sdata[0, kB) holds this block's kB partials (identity 0 past n) and every
  //     thread has passed the barrier above; on exit sdata[0] holds their sum and every thread is
  //     past a barrier (thread 0 stores it below). T is float or int.
  //   Constraints: shared memory only (no warp shuffles: that is step 5); at each level the working
  //     threads must be whole warps and a warp's shared-memory reads must be conflict-free (this is
  //     what step 2 changes from step 1, reduce_interleaved); no thread may read a partial that
  //     another thread is still writing.
  //   Goal: BM_reduce_sum/sequential >= 0.18x BM_reduce_sum_cub at 2^28 floats;
  //     steps 3 and 4 reuse your tree; `scripts/lab check 5.1`.
  for (unsigned s = kB / 2; s > 0; s /= 2) {
    if (tid < s) sdata[tid] += sdata[tid + s];
    __syncthreads();  // level s is complete before level s / 2 reads it
  }
  // END EXERCISE
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
