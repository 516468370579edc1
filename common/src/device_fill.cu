// Counter-based random fill on the device: value(i) = hash(seed, i), so any element can be
// recomputed on the host (uniform_at) without copying the array back.
#include <algorithm>
#include <cstdint>

#include "cudalab/check.hpp"
#include "cudalab/device_fill.hpp"
#include "cudalab/math.hpp"

namespace cudalab {
namespace {

// SplitMix64 finalizer: a good 64-bit mix, the same on host and device.
__host__ __device__ inline std::uint64_t mix(std::uint64_t seed, std::uint64_t i) {
  std::uint64_t z = seed + (i + 1) * 0x9E3779B97F4A7C15ull;
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  return z ^ (z >> 31);
}

__host__ __device__ inline float unit_float(std::uint64_t h) {  // [0, 1) with 24 random bits
  return static_cast<float>(h >> 40) * (1.0f / 16777216.0f);
}

// Two separately rounded operations on both sides: the device compiler would otherwise fuse them
// into one FMA (one rounding) and the host twin would differ in the last bit.
__host__ __device__ inline float value_f(std::uint64_t seed, std::size_t i, float lo, float hi) {
#if defined(__CUDA_ARCH__)
  return __fadd_rn(lo, __fmul_rn(hi - lo, unit_float(mix(seed, i))));
#else
  const volatile float scaled = (hi - lo) * unit_float(mix(seed, i));
  return lo + scaled;
#endif
}

__host__ __device__ inline int value_i(std::uint64_t seed, std::size_t i, int lo, int hi) {
  const std::uint64_t span = static_cast<std::uint64_t>(static_cast<long long>(hi) - lo + 1);
  return static_cast<int>(lo + static_cast<long long>(mix(seed, i) % span));
}

constexpr int kBlock = 256;

// Grid-stride: any n with a fixed grid (64-bit index: n may exceed 2^31).
template <class T, class F>
__global__ void __launch_bounds__(kBlock) fill_kernel(T* out, std::size_t n, F f) {
  for (std::size_t i = blockIdx.x * std::size_t{kBlock} + threadIdx.x; i < n;
       i += std::size_t{gridDim.x} * kBlock)
    out[i] = f(i);
}

struct FloatGen {
  std::uint64_t seed;
  float lo, hi;
  __device__ float operator()(std::size_t i) const { return value_f(seed, i, lo, hi); }
};
struct IntGen {
  std::uint64_t seed;
  int lo, hi;
  __device__ int operator()(std::size_t i) const { return value_i(seed, i, lo, hi); }
};

template <class T, class F>
void launch_fill(T* out, std::size_t n, F f, cudaStream_t stream) {
  require_device_pointer(out, n, "out");
  if (n == 0) return;
  const unsigned grid =
      static_cast<unsigned>(std::min<std::size_t>(ceil_div<std::size_t>(n, kBlock), 65536));
  fill_kernel<<<grid, kBlock, 0, stream>>>(out, n, f);
  CUDALAB_CHECK_LAUNCH();
}

template <class T>
DeviceBuffer<T> filled_buffer(std::size_t n, std::uint64_t seed, T lo, T hi) {
  DeviceBuffer<T> b(n);
  if (n == 0) return b;
  fill_uniform_device(b.data(), n, seed, lo, hi);
  CUDALAB_CHECK(cudaStreamSynchronize(nullptr));  // the stream the fill ran on
  return b;
}

}  // namespace

void fill_uniform_device(float* out, std::size_t n, std::uint64_t seed, float lo, float hi,
                         cudaStream_t stream) {
  launch_fill(out, n, FloatGen{seed, lo, hi}, stream);
}
void fill_uniform_device(int* out, std::size_t n, std::uint64_t seed, int lo, int hi,
                         cudaStream_t stream) {
  require(lo <= hi, "lo", "must not exceed hi");
  launch_fill(out, n, IntGen{seed, lo, hi}, stream);
}
DeviceBuffer<float> uniform_device_buffer(std::size_t n, std::uint64_t seed, float lo, float hi) {
  return filled_buffer(n, seed, lo, hi);
}
DeviceBuffer<int> uniform_device_buffer(std::size_t n, std::uint64_t seed, int lo, int hi) {
  require(lo <= hi, "lo", "must not exceed hi");  // before the allocation: a CPU-only check
  return filled_buffer(n, seed, lo, hi);
}
float uniform_at(std::uint64_t seed, std::size_t i, float lo, float hi) noexcept {
  return value_f(seed, i, lo, hi);
}
int uniform_at(std::uint64_t seed, std::size_t i, int lo, int hi) noexcept {
  return value_i(seed, i, lo, hi);
}

void poison_device(void* p, std::size_t bytes, cudaStream_t stream) {
  require_device_pointer(p, bytes, "p");
  if (bytes > 0) CUDALAB_CHECK(cudaMemsetAsync(p, 0xFF, bytes, stream));
}

}  // namespace cudalab
