// Starter track — write your code at the TODO marks; the tests of each exercise
// fail until you do. (Generated from chapters/05_patterns/reference/reduce_4_unroll_last_warp.cu by scripts/variants.py.)
// Reduction ladder, step 4: step 3 with the last six levels unrolled inside warp 0 (Harris,
// kernel 5).
//
// Once s <= 32 only warp 0 works, and a warp needs no __syncthreads: __syncwarp() (cheaper, and
// required since Volta's independent thread scheduling) is enough. Launch shape and contract of
// steps 1-4: reduce_1_interleaved.cu (kReduceBlock threads, two elements per thread).
#include "ch05/reduce.hpp"
#include "cudalab/check.hpp"
#include "reduce_common.cuh"
#include "reduce_tree.cuh"

namespace cudalab::ch05::detail {
namespace {

constexpr unsigned kB = kReduceBlock;

// The levels s = 32 ... 1 run inside warp 0 with __syncwarp() instead of __syncthreads().
// Each level reads into a register, syncs, then writes: a lane never overwrites a value another
// lane still has to read. `volatile` keeps every shared-memory access a real load or store.
// The unrolled last warp as in the 2007 slides, minus `volatile` and without __syncwarp().
// Nothing tells the compiler that other lanes read sdata between these statements. It sees six
// loads from other lanes' slots and six stores to the lane's own slot, so it keeps that slot in a
// register, issues all six loads first and stores once at the end (look at the PTX: one
// st.shared). Lane 0 then adds the ORIGINAL sdata[32], [16], [8], [4], [2], [1]: most of the 64
// partials are lost, every time, on every GPU. (Adding `volatile` alone restores the stores but
// still relies on lockstep execution, which Volta's independent thread scheduling no longer
// guarantees: hence the __syncwarp() between each read and write.) Step 4 runs with the tests of
// exercise 5.1 (test_reduce.cpp). Caught by: ReduceGpu.*/unroll_last_warp_n_* (every n above a
// few dozen elements). The fix: the code below, or better, step 5: __shfl_down_sync keeps the
// values in registers and needs neither.
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
__global__ void __launch_bounds__(kB)
    reduce_unroll_last_warp(const T* __restrict__ in, T* __restrict__ block_sums, std::size_t n) {
  __shared__ T sdata[kB];
  const unsigned tid = threadIdx.x;
  sdata[tid] = load_two(in, n);
  __syncthreads();                    // every partial is in shared memory before the tree reads it
  block_tree_reduce<32>(sdata, tid);  // exercise 5.1 (reduce_tree.cuh)
  if (tid < 32) warp_tail(sdata, tid);  // sdata[0..63] hold the last 64 partials
  if (tid == 0) block_sums[blockIdx.x] = sdata[0];
}

}  // namespace

template <class T>
void launch_last_warp_pass(dim3 grid, const T* in, T* block_sums, std::size_t n,
                           cudaStream_t stream) {
  reduce_unroll_last_warp<T><<<grid, kB, 0, stream>>>(in, block_sums, n);
  CUDALAB_CHECK_LAUNCH();
}

template void launch_last_warp_pass<float>(dim3, const float*, float*, std::size_t, cudaStream_t);
template void launch_last_warp_pass<int>(dim3, const int*, int*, std::size_t, cudaStream_t);

}  // namespace cudalab::ch05::detail
