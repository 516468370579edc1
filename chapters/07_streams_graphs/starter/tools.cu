// Starter track — write your code at the TODO marks; the tests of each exercise
// fail until you do. (Generated from chapters/07_streams_graphs/reference/tools.cu by scripts/variants.py.)
// Tools of the lesson: a gate that holds a stream, a kernel of known duration, stream priorities
// and stream-ordered allocation (worked; the benchmarks measure them).
#include <cmath>
#include <cstdint>

#include "ch07/ch07.hpp"
#include "cudalab/check.hpp"
#include "cudalab/math.hpp"

namespace cudalab::ch07 {
namespace {

__device__ __forceinline__ std::uint64_t global_ns() {
  std::uint64_t t;
  asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
  return t;
}

// flags[0]: set to 1 by the host to open; flags[1]: 1 opened, 2 timed out (written by the GPU).
// Both live in mapped pinned memory: the GPU reads the host's write over the bus at every poll.
__global__ void __launch_bounds__(1) gate_kernel(volatile int* flags, std::uint64_t timeout_ns) {
  const std::uint64_t start = global_ns();
  while (flags[0] == 0) {
    if (global_ns() - start > timeout_ns) {
      flags[1] = 2;
      __threadfence_system();
      return;
    }
    __nanosleep(2000);
  }
  flags[1] = 1;
  __threadfence_system();
}

constexpr unsigned kSpinBlock = 32;    // one warp a spinning block
constexpr unsigned kTouchBlock = 256;  // threads per block of touch_kernel

__global__ void __launch_bounds__(kSpinBlock) spin_kernel(std::uint64_t ns) {
  const std::uint64_t start = global_ns();
  while (global_ns() - start < ns) {
  }
}

__global__ void __launch_bounds__(kTouchBlock) touch_kernel(float* p, std::size_t n) {
  for (std::size_t i = std::size_t{blockIdx.x} * blockDim.x + threadIdx.x; i < n;
       i += std::size_t{gridDim.x} * blockDim.x)
    p[i] = static_cast<float>(i & 1023);
}

}  // namespace

Gate::Gate() {
  CUDALAB_CHECK(
      cudaHostAlloc(reinterpret_cast<void**>(&flags_), 2 * sizeof(int), cudaHostAllocMapped));
  flags_[0] = 0;
  flags_[1] = 0;
  CUDALAB_CHECK(cudaHostGetDevicePointer(reinterpret_cast<void**>(&dev_flags_), flags_, 0));
}

Gate::~Gate() {
  // A gate still held would spin until its timeout and then write freed memory: open it first.
  open();
  if (flags_) {
    cudaDeviceSynchronize();
    cudaFreeHost(flags_);
  }
}

void Gate::hold(cudaStream_t stream, double timeout_s) {
  require(timeout_s > 0 && timeout_s < 3600, "timeout_s", "must be in (0, 3600) seconds");
  static_cast<volatile int*>(flags_)[0] = 0;
  static_cast<volatile int*>(flags_)[1] = 0;
  gate_kernel<<<1, 1, 0, stream>>>(dev_flags_, static_cast<std::uint64_t>(timeout_s * 1e9));
  CUDALAB_CHECK_LAUNCH_ASYNC();  // the gate holds its stream: a synchronize would deadlock
}

void Gate::open() noexcept {
  if (flags_) static_cast<volatile int*>(flags_)[0] = 1;
}

bool Gate::timed_out() const noexcept {
  return flags_ && static_cast<volatile int*>(flags_)[1] == 2;
}
bool Gate::released() const noexcept {
  return flags_ && static_cast<volatile int*>(flags_)[1] != 0;
}

void spin(std::uint64_t ns, unsigned blocks, cudaStream_t stream) {
  if (blocks == 0) return;
  spin_kernel<<<blocks, kSpinBlock, 0, stream>>>(ns);
  CUDALAB_CHECK_LAUNCH();
}

PriorityRange priority_range() {
  PriorityRange r;
  CUDALAB_CHECK(cudaDeviceGetStreamPriorityRange(&r.least, &r.greatest));
  return r;
}

void alloc_loop(AllocMode mode, std::size_t bytes, int iterations, cudaStream_t stream) {
  require(iterations >= 0, "iterations", "must be >= 0");
  require(mode == AllocMode::kMalloc || mode == AllocMode::kMallocAsync, "mode", "unknown mode");
  if (bytes == 0 || iterations == 0) return;
  const std::size_t n = bytes / sizeof(float);
  if (mode == AllocMode::kMallocAsync) {
    // Keep freed blocks in the pool (the default threshold 0 returns them to the OS at every
    // synchronization, and the next cudaMallocAsync pays for a fresh mapping).
    int dev = 0;
    cudaMemPool_t pool{};
    CUDALAB_CHECK(cudaGetDevice(&dev));
    CUDALAB_CHECK(cudaDeviceGetDefaultMemPool(&pool, dev));
    std::uint64_t threshold = UINT64_MAX;
    CUDALAB_CHECK(cudaMemPoolSetAttribute(pool, cudaMemPoolAttrReleaseThreshold, &threshold));
  }
  for (int it = 0; it < iterations; ++it) {
    float* p = nullptr;
    if (mode == AllocMode::kMalloc) {
      CUDALAB_CHECK(cudaMalloc(reinterpret_cast<void**>(&p), bytes));
    } else {
      CUDALAB_CHECK(cudaMallocAsync(reinterpret_cast<void**>(&p), bytes, stream));
    }
    if (n > 0) {
      touch_kernel<<<static_cast<unsigned>(
                         n < kTouchBlock * 1024 ? ceil_div<std::size_t>(n, kTouchBlock) : 1024),
                     kTouchBlock, 0, stream>>>(p, n);
      CUDALAB_CHECK_LAUNCH();
    }
    if (mode == AllocMode::kMalloc) {
      // cudaFree may not wait for a non-blocking stream: finish the kernel first. Either way the
      // host waits for the GPU once per iteration, and the loop serializes here.
      CUDALAB_CHECK(cudaStreamSynchronize(stream));
      CUDALAB_CHECK(cudaFree(p));
    } else {
      CUDALAB_CHECK(cudaFreeAsync(p, stream));  // ordered after the kernel; no host wait
    }
  }
}

}  // namespace cudalab::ch07
