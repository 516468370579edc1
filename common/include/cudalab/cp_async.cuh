// The cp.async PTX wrappers of the pipelined kernels (chapter 6's SGEMM step 8 and mma.sync GEMM,
// chapter 11's tensor-core prefill): 16- and 4-byte global -> shared copies that bypass registers,
// grouped and waited for by group.
#pragma once

#include <cuda_runtime.h>

#include <cstdint>

namespace cudalab {

// The shared-state-space address of a pointer into shared memory (what cp.async and ldmatrix
// take).
__device__ __forceinline__ std::uint32_t shared_address(const void* p) {
  return static_cast<std::uint32_t>(__cvta_generic_to_shared(p));
}

// 16 bytes global -> shared, asynchronous, cached in L2 only (.cg). in_range false reads nothing
// and writes 16 zero bytes (src-size 0: the zero-fill of out-of-range tiles); src must still be a
// valid address form, so callers pass the matrix base then.
__device__ __forceinline__ void cp_async_16(std::uint32_t dst, const void* src, bool in_range) {
  const int src_bytes = in_range ? 16 : 0;
  asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;\n" ::"r"(dst), "l"(src),
               "r"(src_bytes)
               : "memory");
}
__device__ __forceinline__ void cp_async_16(void* dst, const void* src, bool in_range) {
  cp_async_16(shared_address(dst), src, in_range);
}

// The same copy with no src-size operand, for callers that know the 16 bytes lie inside the matrix
// (an interior tile): one operand less to compute and no zero-fill form.
__device__ __forceinline__ void cp_async_16(std::uint32_t dst, const void* src) {
  asm volatile("cp.async.cg.shared.global [%0], [%1], 16;\n" ::"r"(dst), "l"(src) : "memory");
}

// 4 bytes global -> shared, asynchronous, cached in L1 and L2 (.ca: .cg takes 16 bytes only). One
// element per copy, so the destination may be any 4-byte aligned address (a transposed tile) and
// the source needs no 16-byte alignment. in_range false writes 4 zero bytes (src-size 0), src as
// for cp_async_16. The two-argument form copies unconditionally.
__device__ __forceinline__ void cp_async_4(std::uint32_t dst, const void* src, bool in_range) {
  const int src_bytes = in_range ? 4 : 0;
  asm volatile("cp.async.ca.shared.global [%0], [%1], 4, %2;\n" ::"r"(dst), "l"(src), "r"(src_bytes)
               : "memory");
}
__device__ __forceinline__ void cp_async_4(std::uint32_t dst, const void* src) {
  asm volatile("cp.async.ca.shared.global [%0], [%1], 4;\n" ::"r"(dst), "l"(src) : "memory");
}

// Closes the group of this thread's copies issued since the last commit.
__device__ __forceinline__ void cp_async_commit() {
  asm volatile("cp.async.commit_group;\n" ::: "memory");
}

// Waits until at most kPending of this thread's committed groups are still in flight.
template <int kPending>
__device__ __forceinline__ void cp_async_wait() {
  asm volatile("cp.async.wait_group %0;\n" ::"n"(kPending) : "memory");
}

}  // namespace cudalab
