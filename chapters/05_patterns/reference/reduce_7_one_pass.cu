// Reduction ladder, step 7: step 6 in one launch: the last block to finish adds the partials.
//
// Each block writes its partial sum, then __threadfence() + atomicAdd on a counter; the block
// that arrives last (counter == grid - 1) adds the partials in block order (deterministic: the
// same bits every run) and sets the counter back to 0 for the next call: no memset, no second
// launch. Loads as step 6 (grid_stride_thread_sum, reduce_common.cuh).
// Target (2^28 floats, H200): >= 95% of CUB DeviceReduce::Sum (the reduction ladder block of the
// chapter README).
//
// A dirty counter. The protocol needs the counter at 0 when a call starts. A counter left at d > 0
// (a call that did not finish, a workspace that was not zeroed, two calls sharing one workspace)
// makes the block that draws ticket grid - 1 "last" after only grid - d arrivals: it would add
// partials that are not written yet and return a wrong sum. So each block also marks
// arrived[b] = epoch + 1 (epoch: the call count, kept in the workspace), and the last block checks
// every mark before it trusts the sum; a block that draws a ticket >= grid knows at once. Either
// way the kernel writes a poison value (NaN, or INT_MIN for int) instead of a sum and sets
// state->dirty, which reduce_check_workspace() (and reduce_sum's check of a new workspace) turns
// into an exception. Cost: one 4-byte store per block and one read of `grid` marks by the last
// block; no host synchronization.
// Launch shape: as step 6's first pass, one launch.
#include <climits>

#include "ch05/reduce.hpp"
#include "cudalab/check.hpp"
#include "reduce_common.cuh"
#include "reduce_warp.cuh"

namespace cudalab::ch05::detail {
namespace {

constexpr unsigned kB = kReduceBlock;

// What a call writes instead of a sum it cannot trust.
template <class T>
__device__ T poison();
template <>
__device__ float poison<float>() {
  return __int_as_float(0x7fc00000);
}  // quiet NaN
template <>
__device__ int poison<int>() {
  return INT_MIN;
}

template <class T>
__global__ void __launch_bounds__(kB)
    reduce_one_pass(const T* __restrict__ in, std::size_t n, T* __restrict__ partials,
                    T* __restrict__ out, OnePassState* __restrict__ state,
                    unsigned* __restrict__ arrived) {
  const T block_sum = block_reduce_sum(grid_stride_thread_sum(in, n));
  __shared__ bool is_last;
  __shared__ unsigned epoch;
  if (threadIdx.x == 0) {
    epoch = __ldcg(&state->epoch);  // stable: only the last block of this call changes it
    partials[blockIdx.x] = block_sum;
    __threadfence();  // the partial is visible device-wide before the mark says it is there
    arrived[blockIdx.x] = epoch + 1;
    __threadfence();  // ... and the mark before the counter says this block is done
    const unsigned ticket = atomicAdd(&state->counter, 1u);
    if (ticket >= gridDim.x) {  // the counter did not start at 0
      atomicOr(&state->dirty, kDirtyCounterAhead);
      *out = poison<T>();
    }
    is_last = ticket == gridDim.x - 1;
  }
  __syncthreads();  // every thread learns is_last (and warp_sums may be reused below)
  if (!is_last) return;
  __threadfence();  // acquire side: the partials of every block are read after the counter
  T v = T{0};
  bool all_there = true;
  // __ldcg reads through L2 (where the other SMs' writes are), never a stale L1 line. Fixed
  // order of partials: the same sum whichever block arrives last.
  for (unsigned b = threadIdx.x; b < gridDim.x; b += kB) {
    all_there &= __ldcg(arrived + b) == epoch + 1;
    v += __ldcg(partials + b);
  }
  all_there = __syncthreads_and(all_there);
  v = block_reduce_sum(v);
  if (threadIdx.x == 0) {
    if (all_there) {
      *out = v;
    } else {  // "last" too early: the counter was dirty
      atomicOr(&state->dirty, kDirtyMissingBlock);
      *out = poison<T>();
    }
    state->epoch = epoch + 1;
    state->counter = 0;  // ready for the next call: no memset, no second launch
  }
}

}  // namespace

template <class T>
void launch_one_pass(const T* in, T* out, std::size_t n, T* partials, OnePassState* state,
                     unsigned* arrived, cudaStream_t stream) {
  static std::atomic<int> cache[64] = {};
  const unsigned grid =
      grid_stride_grid(reinterpret_cast<const void*>(reduce_one_pass<T>), cache, n);
  reduce_one_pass<T><<<grid, kB, 0, stream>>>(in, n, partials, out, state, arrived);
  CUDALAB_CHECK_LAUNCH();
}

template void launch_one_pass<float>(const float*, float*, std::size_t, float*, OnePassState*,
                                     unsigned*, cudaStream_t);
template void launch_one_pass<int>(const int*, int*, std::size_t, int*, OnePassState*, unsigned*,
                                   cudaStream_t);

}  // namespace cudalab::ch05::detail
