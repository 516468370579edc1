// Starter track — write your code at the TODO marks; the tests of each exercise
// fail until you do. (Generated from chapters/04_memory/reference/coalescing.cu by scripts/variants.py.)
// Exercise 4.1 — coalescing: the same copy, three access patterns.
//
// A warp's 32 loads are merged into as few 32-byte sectors as cover their addresses. Consecutive
// floats: 128 useful bytes in 4 sectors, every byte fetched is used. A stride of s floats spreads
// the same 32 floats over 4 s sectors (s <= 8), so DRAM moves s times the useful bytes; from
// s = 8 on, every lane has its own sector and the waste stays at 8x (more where DRAM bursts are
// longer than a sector). A start `offset` floats past an aligned address needs 5 sectors instead
// of 4 for each warp: on a modern GPU a small cost, not the 2x of the first CUDA GPUs.
//
// Launch shape: 1D, kBlock threads, one element per thread. Bytes that must move: 8 n (4 n read,
// 4 n written); the benchmark counts these useful bytes, so GB/s falls as the waste grows.
#include "ch04/ch04.hpp"
#include "cudalab/check.hpp"
#include "cudalab/math.hpp"

namespace cudalab::ch04 {
namespace {

__global__ void __launch_bounds__(kBlock)
    strided_copy_kernel(const float* __restrict__ in, float* __restrict__ out, std::size_t n,
                        unsigned stride) {
  // TODO(4.1): the body of strided_copy_kernel.
  //   Contract: out[i] = in[i * stride] for every i < n (a gather: the input spans
  //     strided_input_size(n, stride) floats); nothing written at or past n. Launch: one thread per
  //     output element, blocks of kBlock.
  //   Constraints: one element per thread; every index and product 64-bit (i * stride passes 2^32
  //     on large inputs); keep the access pattern as stated: the point is to measure it, not to
  //     avoid it.
  //   Goal: BM_strided_copy/stride:1 >= 0.55x BM_coalescing_memcpy, then explain
  //     the curve over the strides; `scripts/lab check 4.1`.
}

__global__ void __launch_bounds__(kBlock)
    offset_copy_kernel(const float* __restrict__ in, float* __restrict__ out, std::size_t n,
                       unsigned offset) {
  // TODO(4.1): the body of offset_copy_kernel.
  //   Contract: out[i] = in[i + offset] for every i < n (the input holds n + offset floats).
  //   Constraints: as strided_copy_kernel.
  //   Goal: every BM_offset_copy row within 10% of offset:0; `scripts/lab check 4.1`.
}

unsigned blocks_for(std::size_t n) {
  const std::size_t blocks = ceil_div<std::size_t>(n, kBlock);
  require(blocks <= 0x7FFFFFFFu, "n", "needs more than 2^31 - 1 blocks of 256 threads");
  return static_cast<unsigned>(blocks);
}

}  // namespace

std::size_t strided_input_size(std::size_t n, unsigned stride) {
  return n == 0 ? 0 : (n - 1) * std::size_t{stride} + 1;
}

void strided_copy(const float* in, float* out, std::size_t n, unsigned stride,
                  cudaStream_t stream) {
  require(stride >= 1, "stride", "must be at least 1");
  require_device_pointer(in, strided_input_size(n, stride), "in");
  require_device_pointer(out, n, "out");
  if (n == 0) return;
  strided_copy_kernel<<<blocks_for(n), kBlock, 0, stream>>>(in, out, n, stride);
  CUDALAB_CHECK_LAUNCH();
}

void offset_copy(const float* in, float* out, std::size_t n, unsigned offset, cudaStream_t stream) {
  require_device_pointer(in, n + offset, "in");
  require_device_pointer(out, n, "out");
  if (n == 0) return;
  offset_copy_kernel<<<blocks_for(n), kBlock, 0, stream>>>(in, out, n, offset);
  CUDALAB_CHECK_LAUNCH();
}

}  // namespace cudalab::ch04
