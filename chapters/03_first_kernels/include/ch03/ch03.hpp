// Chapter 3 — first kernels: host/device, grid/block/thread, launch checks, the nvcc toolchain.
//
// Every function takes device pointers and a stream (default: the legacy default stream), like
// CUB. Any n works, n = 0 included; bad arguments throw std::invalid_argument naming the argument.
#pragma once

#include <cuda_runtime_api.h>

#include <cstddef>
#include <cstdint>
#include <string>

#include "cudalab/math.hpp"  // CUDALAB_HD: callable from host and device

namespace cudalab::ch03 {

// Threads per block of every 1D kernel in this chapter: a multiple of the warp size (32), small
// enough for any GPU, large enough to keep an SM busy with a few blocks.
inline constexpr unsigned kBlock = 256;
static_assert(kBlock % 32 == 0 && kBlock <= 1024, "a block is whole warps, at most 1024 threads");

// 2D kernels: 32 x 8 threads; a warp covers 32 consecutive pixels of one row (coalesced).
inline constexpr unsigned kBlockX = 32, kBlockY = 8;
static_assert(kBlockX * kBlockY <= 1024);

// Exercise 3.1 — blocks needed so that `threads_per_block`-thread blocks cover n elements:
// ceil(n / threads_per_block); 0 when n = 0 (then nothing is launched). Throws
// std::invalid_argument when threads_per_block is 0 or above 1024, or when the grid would exceed
// the 2^31 - 1 blocks a 1D grid may have.
unsigned blocks_for(std::size_t n, unsigned threads_per_block);

// Exercise 3.2 — c[i] = a[i] + b[i], one thread per element.
void vector_add(const float* a, const float* b, float* c, std::size_t n,
                cudaStream_t stream = nullptr);

// Exercise 3.3 — y[i] = alpha * x[i] + y[i] (SAXPY), one thread per element, correct past
// n = 2^31 (a 32-bit index overflows there).
void saxpy(float alpha, const float* x, float* y, std::size_t n, cudaStream_t stream = nullptr);

// Exercise 3.4 — vector add on a fixed grid sized from the device (a few blocks per SM), for any
// n. kFloat4 moves 16 bytes per thread per access when a, b and c are 16-byte aligned (otherwise
// the scalar kernel runs); n need not be a multiple of 4.
enum class StrideVariant { kScalar, kFloat4 };
void vector_add_grid_stride(const float* a, const float* b, float* c, std::size_t n,
                            StrideVariant variant = StrideVariant::kScalar,
                            cudaStream_t stream = nullptr);

// Exercise 3.5 — RGB to grayscale on a pitched 2D image: gray = (299 R + 587 G + 114 B + 500) /
// 1000 (integer, so the CPU oracle is exact). `rgb` holds `height` rows of 3 * width bytes (R, G, B
// interleaved) that start `rgb_pitch` bytes apart; `gray` rows hold `width` bytes, `gray_pitch`
// apart.
void rgb_to_gray(const std::uint8_t* rgb, std::size_t rgb_pitch, std::uint8_t* gray,
                 std::size_t gray_pitch, int width, int height, cudaStream_t stream = nullptr);

// The CPU oracle of 3.5 for one pixel.
CUDALAB_HD constexpr std::uint8_t gray_of(std::uint8_t r, std::uint8_t g, std::uint8_t b) {
  return static_cast<std::uint8_t>((299u * r + 587u * g + 114u * b + 500u) / 1000u);
}

// Exercise 3.6 — errors you must go looking for.
// fill(): out[i] = value with a caller-chosen block size. An invalid configuration (0 or > 1024
// threads) must come back as cudalab::CudaError, not vanish (the driver reports it as
// cudaErrorInvalidConfiguration or, CUDA 13 on an H200, cudaErrorInvalidValue).
void fill(float* out, std::size_t n, float value, unsigned threads_per_block,
          cudaStream_t stream = nullptr);
// Launches a kernel that writes through an invalid address. The launch itself succeeds; the fault
// happens later, on the GPU. This function must report it as cudalab::CudaError
// (cudaErrorIllegalAddress) before returning. Afterwards the context is unusable (sticky error).
void launch_faulty_kernel(cudaStream_t stream = nullptr);

// Exercise 3.7 — what the compiler built, read back at run time from the CUDA runtime.
enum class Probe {
  kSimple,     // a few registers, no local memory
  kLocalArray  // a per-thread array indexed at run time: lives in local memory (slow)
};
struct KernelInfo {
  int num_regs = 0;               // registers per thread
  int ptx_version = 0;            // virtual architecture of the PTX it was compiled from (90 = 9.0)
  int binary_version = 0;         // architecture of the machine code (SASS) that runs
  int max_threads_per_block = 0;  // limited by registers: 65536 / (regs * threads)
  std::size_t local_bytes = 0;    // local memory per thread (spills, run-time indexed arrays)
  std::size_t shared_bytes = 0;   // static shared memory per block
  std::size_t const_bytes = 0;    // constant memory used by the kernel
};
KernelInfo probe_kernel_info(Probe probe);
// Runs the kLocalArray probe (so the tests can check it computes, not only that it compiled):
// out[i] = sum of a run-time-indexed local table; see toolchain.cu.
void run_local_array_probe(const int* in, int* out, std::size_t n, cudaStream_t stream = nullptr);
int local_array_probe_oracle(int x);

// A human-readable report of the above (used by the ch03_what_compiled program).
std::string describe(const KernelInfo& info);

}  // namespace cudalab::ch03
