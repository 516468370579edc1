// Device-side fills for inputs too large to generate on the host (a 2^31-element test, a 1 GiB
// benchmark): a counter-based hash, so the value at index i depends only on (seed, i) and a host
// check can recompute any element without copying the whole array back.
#pragma once

#include <cuda_runtime_api.h>

#include <cstddef>
#include <cstdint>

#include "cudalab/memory.hpp"

namespace cudalab {

// out[i] = lo + (hi - lo) * u(seed, i), u uniform in [0, 1).
void fill_uniform_device(float* out, std::size_t n, std::uint64_t seed, float lo, float hi,
                         cudaStream_t stream = nullptr);
void fill_uniform_device(int* out, std::size_t n, std::uint64_t seed, int lo, int hi,
                         cudaStream_t stream = nullptr);
// A new device array of n elements filled as fill_uniform_device(seed, lo, hi) does, and finished
// when it returns: the fill runs on the default stream and is waited for, so work on any other
// stream (a benchmark's non-blocking stream, whose warm-up would otherwise overlap the fill) reads
// the whole input. Arguments are checked before any device call; n = 0 touches no device.
DeviceBuffer<float> uniform_device_buffer(std::size_t n, std::uint64_t seed, float lo, float hi);
DeviceBuffer<int> uniform_device_buffer(std::size_t n, std::uint64_t seed, int lo, int hi);
// Host twin of the device hash: the exact value fill_uniform_device wrote at index i.
float uniform_at(std::uint64_t seed, std::size_t i, float lo, float hi) noexcept;
int uniform_at(std::uint64_t seed, std::size_t i, int lo, int hi) noexcept;

// Poisons device memory: every byte set to `byte` (0xFF makes every float a NaN).
void poison_device(void* p, std::size_t bytes, cudaStream_t stream = nullptr);

}  // namespace cudalab
