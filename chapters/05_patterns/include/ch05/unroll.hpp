// Chapter 5 — loop unrolling, __restrict__ and vector loads, shown by their effect (exercise 5.6).
//
// One operation, y = a * x + y (SAXPY), each thread owning kUnrollItems elements, written four
// ways. The arithmetic is identical; what changes is how many loads each thread has in flight
// and how many instructions it spends on them (registers, SASS and time show it).
#pragma once

#include <cuda_runtime_api.h>

#include <cstddef>

namespace cudalab::ch05 {

inline constexpr int kUnrollBlock = 256;  // threads per block
inline constexpr int kUnrollItems = 8;    // elements per thread, a multiple of 4 (float4)
static_assert(kUnrollBlock % 32 == 0 && kUnrollBlock <= 1024, "whole warps, at most 1024 threads");
static_assert(kUnrollItems % 4 == 0, "the vectorized variant moves the items as float4");

enum class UnrollVariant {
  kRolled,    // `#pragma unroll 1`, plain pointers: one load pair in flight per thread
  kUnrolled,  // unrolled, plain pointers: y may alias x, so loads stay behind earlier stores
  kUnrolledRestrict,  // unrolled, const __restrict__: all 2 * kUnrollItems loads issue first
  kVectorized  // restrict + float4: LDG.E.128 / STG.E.128, 4x fewer memory instructions (5.6)
};

// y[i] = a * x[i] + y[i] for i < n (device pointers, any n; x and y must not overlap).
// kVectorized needs 16-byte-aligned x and y; otherwise it falls back to kUnrolledRestrict.
void saxpy_unrolled(float a, const float* x, float* y, std::size_t n, UnrollVariant variant,
                    cudaStream_t stream = nullptr);

// What ptxas allocated for a variant's kernel (cudaFuncGetAttributes): the numbers
// `-Xptxas -v` and `cuobjdump -res-usage` print at build time.
struct KernelResources {
  int num_regs = 0;              // registers per thread
  std::size_t local_bytes = 0;   // local memory per thread: > 0 means spills (or indexed arrays)
  std::size_t shared_bytes = 0;  // static shared memory per block
  int max_threads_per_block = 0;
};
KernelResources saxpy_unrolled_resources(UnrollVariant variant);

const char* to_string(UnrollVariant variant);

}  // namespace cudalab::ch05
