// Reduction ladder, step 4: step 3 with the last six levels unrolled inside warp 0.
// Launch shape and contract: reduce_tree.cu (kReduceBlock threads, two elements per thread).
#include "ch05/reduce.hpp"
#include "cudalab/check.hpp"
#include "reduce_internal.hpp"
#include "reduce_device.cuh"

namespace cudalab::ch05::detail {
namespace {

constexpr unsigned kB = kReduceBlock;

// The levels s = 32 ... 1 run inside warp 0 with __syncwarp() instead of __syncthreads().
// Each level reads into a register, syncs, then writes: a lane never overwrites a value another
// lane still has to read. `volatile` keeps every shared-memory access a real load or store.
template <class T>
__device__ void warp_tail(volatile T* sdata, unsigned tid) {
  T v = sdata[tid] + sdata[tid + 32];
#pragma unroll
  for (unsigned s = 16; s > 0; s /= 2) {
    __syncwarp();  // every lane has read level 2s before anyone writes it
    sdata[tid] = v;
    __syncwarp();  // the writes of this level are visible to the whole warp
    v += sdata[tid + s];
  }
  if (tid == 0) sdata[0] = v;
}

template <class T>
__global__ void __launch_bounds__(kB) reduce_unroll_last_warp(const T* __restrict__ in,
                                                              T* __restrict__ block_sums, std::size_t n) {
  __shared__ T sdata[kB];
  const unsigned tid = threadIdx.x;
  sdata[tid] = load_two(in, n);
  __syncthreads();  // every partial is in shared memory before the tree reads it
  // BEGIN EXERCISE 5.1
  // TODO(5.1): the tree of exercise 5.1 (reduce_tree_sequential.cu), stopped early: on exit
  //   sdata[0, 64) holds partials whose sum is the block's sum, and every thread is past a barrier;
  //   warp 0 finishes below without block barriers. Its tests fail in the starter until this is
  //   written.
  for (unsigned s = kB / 2; s > 32; s /= 2) {
    if (tid < s) sdata[tid] += sdata[tid + s];
    __syncthreads();  // level s is complete before level s / 2 reads it
  }
  // END EXERCISE
  if (tid < 32) warp_tail(sdata, tid);  // sdata[0..63] hold the last 64 partials
  if (tid == 0) block_sums[blockIdx.x] = sdata[0];
}

}  // namespace

template <class T>
void launch_last_warp_pass(dim3 grid, const T* in, T* block_sums, std::size_t n, cudaStream_t stream) {
  reduce_unroll_last_warp<T><<<grid, kB, 0, stream>>>(in, block_sums, n);
  CUDALAB_CHECK_LAUNCH();
}

template void launch_last_warp_pass<float>(dim3, const float*, float*, std::size_t, cudaStream_t);
template void launch_last_warp_pass<int>(dim3, const int*, int*, std::size_t, cudaStream_t);

}  // namespace cudalab::ch05::detail
