// Block-wide sum for the row kernels that give one block to a row (a LayerNorm's mean and
// variance, an RMSNorm): every thread passes its partial and receives the block's total.
// `shared`: blockDim.x / 32 floats; blockDim.x a multiple of 32. Safe to call several times in a
// row with the same `shared` (the first barrier waits for the previous call's readers).
#pragma once

namespace cudalab {

__device__ __forceinline__ float block_sum(float v, float* shared) {
  for (int o = 16; o > 0; o >>= 1) v += __shfl_xor_sync(0xffffffffu, v, o);
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
  __syncthreads();  // the previous call's readers are done with `shared`
  if (lane == 0) shared[warp] = v;
  __syncthreads();  // every warp's partial sum is in `shared`
  float total = 0.0f;
  for (int w = 0; w < static_cast<int>(blockDim.x >> 5); ++w) total += shared[w];
  return total;
}

}  // namespace cudalab
