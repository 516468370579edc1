// Exercise 3.4 — grid-stride loops: a grid sized for the GPU, not for the data.
//
// One thread per element needs n / 256 blocks (8 million for 2^31 elements), and each thread does
// a single add. Here the grid is fixed by the device instead — a few resident blocks per SM — and
// must still cover any n: any n works with the same grid, and per-thread setup is paid once.
//
// kFloat4: each access moves 16 bytes (one LDG.128 instead of four LDG.32), so fewer instructions
// keep the same bytes in flight. It needs 16-byte-aligned pointers (cudaMalloc gives 256-byte
// alignment; a pointer offset by one float does not: the launcher falls back to the scalar
// kernel), and n is not always a multiple of 4.
#include <algorithm>
#include <cstdint>

#include "ch03/ch03.hpp"
#include "cudalab/check.hpp"
#include "cudalab/device.hpp"
#include "cudalab/math.hpp"

namespace cudalab::ch03 {
namespace {

// Resident blocks per SM we aim for: 2048 threads per SM / 256 = 8 on most GPUs.
constexpr unsigned kBlocksPerSm = 8;

__global__ void __launch_bounds__(kBlock)
    add_grid_stride_kernel(const float* __restrict__ a, const float* __restrict__ b,
                           float* __restrict__ c, std::size_t n) {
  // BEGIN EXERCISE 3.4
  // TODO(3.4): the body of add_grid_stride_kernel.
  //   Contract: c[i] = a[i] + b[i] for every i < n, whatever the grid: the launcher sizes the grid
  //     from the device (a few resident blocks per SM, grid_for_device), not from n, so a thread
  //     may own many elements, or none.
  //   Constraints: a grid-stride loop; 64-bit indices; consecutive threads on consecutive elements
  //     on every trip (coalesced).
  //   Goal: the scalar row BM_vector_add_grid_stride/scalar faster than BM_vector_add;
  //     `scripts/lab check 3.4`.
  const std::size_t stride = std::size_t{blockDim.x} * gridDim.x;
  for (std::size_t i = std::size_t{blockIdx.x} * blockDim.x + threadIdx.x; i < n; i += stride)
    c[i] = a[i] + b[i];
  // END EXERCISE
}

__global__ void __launch_bounds__(kBlock)
    add_grid_stride_float4_kernel(const float4* __restrict__ a, const float4* __restrict__ b,
                                  float4* __restrict__ c, std::size_t n4,
                                  const float* __restrict__ a_tail,
                                  const float* __restrict__ b_tail, float* __restrict__ c_tail,
                                  std::size_t tail) {
  // BEGIN EXERCISE 3.4
  // TODO(3.4): the body of add_grid_stride_float4_kernel.
  //   Contract: the same sum over the n4 float4 elements of a, b, c (16-byte aligned), plus the
  //     last `tail` (< 4) floats, which live at a_tail, b_tail, c_tail; every one of the n = 4 n4 +
  //     tail floats is written exactly once, for any grid the launcher picks.
  //   Constraints: one 16-byte load per operand per element (no scalar loads in the main loop);
  //     grid-stride; 64-bit indices.
  //   Goal: BM_vector_add_grid_stride/float4 >= 0.9x BM_memcpy_d2d at 2^28 floats;
  //     `scripts/lab check 3.4`.
  const std::size_t stride = std::size_t{blockDim.x} * gridDim.x;
  const std::size_t tid = std::size_t{blockIdx.x} * blockDim.x + threadIdx.x;
  for (std::size_t i = tid; i < n4; i += stride) {
    const float4 x = a[i], y = b[i];  // one 16-byte load each
    c[i] = make_float4(x.x + y.x, x.y + y.y, x.z + y.z, x.w + y.w);
  }
  // BEGIN PITFALL float4_without_tail EXERCISES 3.4
  // A vectorized loop that forgets the tail. With float4 the loop covers n / 4 vectors, i.e. the
  // first 4 * (n / 4) floats. When n is not a multiple of 4 the last 1-3 elements are never
  // written: the llm.c habit of guarding vector loads only by `i < N`. Tests with n = 1000 pass; n
  // = 1001 fails. Caught by: GridStrideGpu with n % 4 != 0. The fix: the first n % 4 threads of the
  // grid add the leftover floats.
  if (tid < tail) c_tail[tid] = a_tail[tid] + b_tail[tid];  // n % 4 < 4 leftover floats
  // BUG: (void)a_tail, (void)b_tail, (void)c_tail, (void)tail;
  // END PITFALL
  // END EXERCISE
}

unsigned grid_for_device(std::size_t work_items) {
  const int sms = current_sm_count();
  const std::size_t wanted = ceil_div<std::size_t>(work_items, kBlock);
  return static_cast<unsigned>(std::clamp<std::size_t>(wanted, 1, std::size_t{kBlocksPerSm} * sms));
}

}  // namespace

void vector_add_grid_stride(const float* a, const float* b, float* c, std::size_t n,
                            StrideVariant variant, cudaStream_t stream) {
  require_device_pointer(a, n, "a");
  require_device_pointer(b, n, "b");
  require_device_pointer(c, n, "c");
  require(variant == StrideVariant::kScalar || variant == StrideVariant::kFloat4, "variant",
          "unknown StrideVariant");
  if (n == 0) return;
  const bool vec = variant == StrideVariant::kFloat4 && is_aligned(a, 16) && is_aligned(b, 16) &&
                   is_aligned(c, 16);
  if (!vec) {  // scalar path, also the fallback for misaligned pointers
    add_grid_stride_kernel<<<grid_for_device(n), kBlock, 0, stream>>>(a, b, c, n);
  } else {
    const std::size_t n4 = n / 4, done = n4 * 4;
    add_grid_stride_float4_kernel<<<grid_for_device(std::max<std::size_t>(n4, 1)), kBlock, 0,
                                    stream>>>(
        reinterpret_cast<const float4*>(a), reinterpret_cast<const float4*>(b),
        reinterpret_cast<float4*>(c), n4, a + done, b + done, c + done, n - done);
  }
  CUDALAB_CHECK_LAUNCH();
}

}  // namespace cudalab::ch03
