// Starter track — write your code at the TODO marks; the tests of each exercise
// fail until you do. (Generated from chapters/05_patterns/reference/reduce_1_interleaved.cu by scripts/variants.py.)
// Reduction ladder, step 1: a tree in shared memory with interleaved addressing (Harris,
// "Optimizing Parallel Reduction in CUDA", kernel 1).
//
// Steps 1-4 share one shape: block b loads its slice of the input into shared memory and halves
// the number of partial sums at each level until sdata[0] holds the block's sum, then writes it to
// block_sums[b]. The host launches again on the block sums until one value is left (reduce.cu).
// Launch shape: ceil(n / E) blocks of kReduceBlock threads, E = 1 element per thread here.
// Bytes: 4n read by the first pass (the later ones read n / E, n / E^2, ...).
//
// What this step does and why it is slow: `tid % (2s) == 0` selects the working threads: in every
// warp only a few lanes work (divergence) and the modulo is slow. Only the first of
// log2(256) = 8 levels keeps every warp busy with useful work. Step 2 fixes the addressing.
#include "ch05/reduce.hpp"
#include "cudalab/check.hpp"
#include "reduce_common.cuh"

namespace cudalab::ch05::detail {
namespace {

constexpr unsigned kB = kReduceBlock;

// Interleaved addressing. Divergent: at stride s, lanes with tid % 2s == 0 work.
template <class T>
__global__ void __launch_bounds__(kB)
    reduce_interleaved(const T* __restrict__ in, T* __restrict__ block_sums, std::size_t n) {
  __shared__ T sdata[kB];
  const unsigned tid = threadIdx.x;
  const std::size_t i = std::size_t{blockIdx.x} * kB + tid;
  sdata[tid] = i < n ? in[i] : T{0};  // past n: the identity, so a partial block sums correctly
  __syncthreads();                    // every element is in shared memory before the tree reads it
  for (unsigned s = 1; s < kB; s *= 2) {
    if (tid % (2 * s) == 0) sdata[tid] += sdata[tid + s];
    __syncthreads();  // this level is complete before the next one reads it
  }
  if (tid == 0) block_sums[blockIdx.x] = sdata[0];
}

}  // namespace

template <class T>
void launch_interleaved_pass(dim3 grid, const T* in, T* block_sums, std::size_t n,
                             cudaStream_t stream) {
  reduce_interleaved<T><<<grid, kB, 0, stream>>>(in, block_sums, n);
  CUDALAB_CHECK_LAUNCH();
}

template void launch_interleaved_pass<float>(dim3, const float*, float*, std::size_t, cudaStream_t);
template void launch_interleaved_pass<int>(dim3, const int*, int*, std::size_t, cudaStream_t);

}  // namespace cudalab::ch05::detail
