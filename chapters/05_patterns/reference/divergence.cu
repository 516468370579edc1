// Exercise 5.7 — warp divergence: the same work, with and without disagreeing lanes.
//
// Cost: kDivergenceSteps = 256 dependent FMAs per element against 8 bytes of traffic, so the
// kernel is compute-bound (2^26 elements: 17 G FMAs, ~0.5 ms of FP32 on an H200, against ~0.1 ms
// of DRAM traffic). A warp issues one instruction for its 32 lanes. In kDivergent the even and odd
// lanes of every warp take different paths, so each warp runs path A with the odd lanes masked,
// then path B with the even lanes masked: 2 x 256 FMA issue slots per warp instead of 256.
// kWarpUniform (exercise 5.7) computes exactly the same outputs with no warp running both paths.
// Expect: warp_uniform about 2x faster (the BM_divergence pair).
#include "ch05/divergence.hpp"
#include "cudalab/check.hpp"
#include "cudalab/math.hpp"

namespace cudalab::ch05 {
namespace {

__device__ __forceinline__ float path_a(float y) {
  for (int s = 0; s < kDivergenceSteps; ++s) y = kPathAScale * y + kPathAShift;  // one FFMA each
  return y;
}
__device__ __forceinline__ float path_b(float y) {
  for (int s = 0; s < kDivergenceSteps; ++s) y = kPathBScale * y + kPathBShift;
  return y;
}

// Thread t of block b handles element b * 256 + t: lanes 0, 2, 4, ... take path A and lanes
// 1, 3, 5, ... path B, inside every warp.
__global__ void __launch_bounds__(kDivergenceBlock)
    branchy_divergent_kernel(const float* __restrict__ in, float* __restrict__ out, std::size_t n) {
  const std::size_t i = std::size_t{blockIdx.x} * kDivergenceBlock + threadIdx.x;
  if (i >= n) return;
  out[i] = (i % 2 == 0) ? path_a(in[i]) : path_b(in[i]);  // lanes of one warp disagree
}

// Same outputs; every warp handles elements of a single parity.
__global__ void __launch_bounds__(kDivergenceBlock)
    branchy_warp_uniform_kernel(const float* __restrict__ in, float* __restrict__ out,
                                std::size_t n) {
  // BEGIN EXERCISE 5.7
  // TODO(5.7): branchy_warp_uniform_kernel.
  //   Contract: exactly the outputs of branchy_divergent_kernel (even elements through the first
  //     path, odd ones through the second), every element below n written once, for any n. Same
  //     launch as the divergent kernel: ceil(n / kDivergenceBlock) blocks of kDivergenceBlock
  //     threads.
  //   Constraints: no lane of a warp may take a different path from the other lanes of that warp;
  //     each block still covers the same kDivergenceBlock elements; every element read once from
  //     global memory (L1 may serve the reuse).
  //   Goal: BM_divergence/warp_uniform >= 1.5x faster than BM_divergence/divergent;
  //     `scripts/lab check 5.7`.
  // STARTER: (void)in; (void)out; (void)n;
  const unsigned warp = threadIdx.x / 32, lane = threadIdx.x % 32;
  const std::size_t i =
      std::size_t{blockIdx.x} * kDivergenceBlock + 64 * (warp / 2) + 2 * lane + warp % 2;
  if (i >= n) return;
  out[i] = (warp % 2 == 0) ? path_a(in[i]) : path_b(in[i]);  // one path per warp
  // END EXERCISE
}

}  // namespace

const char* to_string(DivergenceVariant v) {
  switch (v) {
    case DivergenceVariant::kDivergent:
      return "divergent";
    case DivergenceVariant::kWarpUniform:
      return "warp_uniform";
  }
  return "?";
}

void branchy_transform(const float* in, float* out, std::size_t n, DivergenceVariant variant,
                       cudaStream_t stream) {
  require(variant == DivergenceVariant::kDivergent || variant == DivergenceVariant::kWarpUniform,
          "variant", "unknown DivergenceVariant");
  require_device_pointer(in, n, "in");
  require_device_pointer(out, n, "out");
  if (n == 0) return;
  const std::size_t blocks = ceil_div<std::size_t>(n, kDivergenceBlock);
  require(blocks <= 0x7FFFFFFFu, "n", "needs more than 2^31 - 1 blocks");
  if (variant == DivergenceVariant::kDivergent)
    branchy_divergent_kernel<<<static_cast<unsigned>(blocks), kDivergenceBlock, 0, stream>>>(
        in, out, n);
  else
    branchy_warp_uniform_kernel<<<static_cast<unsigned>(blocks), kDivergenceBlock, 0, stream>>>(
        in, out, n);
  CUDALAB_CHECK_LAUNCH();
}

}  // namespace cudalab::ch05
