// Reduction ladder, step 6: vectorized grid-stride loads on a grid sized from the device.
//
// A reduction is limited by how many bytes are in flight to DRAM (Little's law: ~4.8 TB/s x ~1 us
// latency = ~5 MB must be outstanding across the GPU). A fixed grid of a few blocks per SM, each
// thread issuing four independent 16-byte loads per trip (grid_stride_thread_sum,
// reduce_common.cuh), keeps 64 bytes per thread outstanding; one block per SM-resident slot, so
// no block waits on a launch, and only `grid` partial sums are left, reduced by one single-block
// launch of the same kernel. Step 7 removes that second launch.
// Launch shape: min(ceil(n / (16 kReduceBlock)), resident blocks) blocks of kReduceBlock threads,
// then 1 block.
#include "ch05/reduce.hpp"
#include "cudalab/check.hpp"
#include "reduce_common.cuh"
#include "reduce_warp.cuh"

namespace cudalab::ch05::detail {
namespace {

constexpr unsigned kB = kReduceBlock;

// out[blockIdx.x] = this block's share of in[0, n): partials (grid > 1) or the result.
template <class T>
__global__ void __launch_bounds__(kB)
    reduce_vectorized(const T* __restrict__ in, std::size_t n, T* __restrict__ out) {
  const T block_sum = block_reduce_sum(grid_stride_thread_sum(in, n));
  if (threadIdx.x == 0) out[blockIdx.x] = block_sum;
}

}  // namespace

template <class T>
void launch_vectorized(const T* in, T* out, std::size_t n, T* partials, cudaStream_t stream) {
  static std::atomic<int> cache[64] = {};
  const unsigned grid =
      grid_stride_grid(reinterpret_cast<const void*>(reduce_vectorized<T>), cache, n);
  // Pass 1 leaves `grid` partials; pass 2 (one block) adds them. A single block writes *out.
  reduce_vectorized<T><<<grid, kB, 0, stream>>>(in, n, grid == 1 ? out : partials);
  CUDALAB_CHECK_LAUNCH();
  if (grid > 1) {
    reduce_vectorized<T><<<1, kB, 0, stream>>>(partials, grid, out);
    CUDALAB_CHECK_LAUNCH();
  }
}

template void launch_vectorized<float>(const float*, float*, std::size_t, float*, cudaStream_t);
template void launch_vectorized<int>(const int*, int*, std::size_t, int*, cudaStream_t);

}  // namespace cudalab::ch05::detail
