// PITFALL (replaces reference/reduce_tree_last_warp.cu, step 4 of the ladder; run with the tests
// of exercise 5.1, test_reduce.cpp): the unrolled last warp without `volatile` and without
// __syncwarp(). See warp_tail below.
// Fix: the reference's warp_tail (volatile pointer, read -> __syncwarp -> write -> __syncwarp),
// or better, step 5: __shfl_down_sync keeps the values in registers and needs neither.
// Reduction ladder, step 4: step 3 with the last six levels unrolled inside warp 0.
// Launch shape and contract: reduce_tree.cu (kReduceBlock threads, two elements per thread).
#include "ch05/reduce.hpp"
#include "cudalab/check.hpp"
#include "reduce_internal.hpp"
#include "reduce_device.cuh"

namespace cudalab::ch05::detail {
namespace {

constexpr unsigned kB = kReduceBlock;

// The levels s = 32 ... 1 inside warp 0 — written as in the 2007 slides, minus `volatile`.
// BUG: nothing tells the compiler that other lanes read sdata between these statements. It sees
// six loads from addresses other than sdata[tid] and six stores to sdata[tid], so it keeps
// sdata[tid] in a register, issues all six loads first and stores once at the end (look at the
// PTX: one st.shared). Lane 0 then adds the ORIGINAL sdata[32], [16], [8], [4], [2], [1]: most of
// the 64 partials are lost, every time, on every GPU. (Adding `volatile` alone restores the
// stores but still relies on lockstep execution, which Volta's independent thread scheduling no
// longer guarantees: the reference also places __syncwarp() between each read and write.)
// Caught by: ReduceGpu.*/unroll_last_warp_n_* (every n above a few dozen elements).
template <class T>
__device__ void warp_tail(T* sdata, unsigned tid) {
  sdata[tid] += sdata[tid + 32];
  sdata[tid] += sdata[tid + 16];
  sdata[tid] += sdata[tid + 8];
  sdata[tid] += sdata[tid + 4];
  sdata[tid] += sdata[tid + 2];
  sdata[tid] += sdata[tid + 1];
}

template <class T>
__global__ void __launch_bounds__(kB) reduce_unroll_last_warp(const T* __restrict__ in,
                                                              T* __restrict__ block_sums, std::size_t n) {
  __shared__ T sdata[kB];
  const unsigned tid = threadIdx.x;
  sdata[tid] = load_two(in, n);
  __syncthreads();  // every partial is in shared memory before the tree reads it
  for (unsigned s = kB / 2; s > 32; s /= 2) {
    if (tid < s) sdata[tid] += sdata[tid + s];
    __syncthreads();  // level s is complete before level s / 2 reads it
  }
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
