// CUB rows of the chapter 5 benchmark: plain host functions around cub::DeviceReduce and
// cub::DeviceScan (CUB templates compile only in a .cu file; the benchmark itself is .cpp).
#pragma once

#include <cuda_runtime_api.h>

#include <cstddef>

namespace cudalab::bench_ch05 {

// Bytes of temporary storage CUB asks for (its size query: a first call with a null pointer).
std::size_t cub_reduce_sum_temp_bytes(const float* in, float* out, std::size_t n);
std::size_t cub_inclusive_sum_temp_bytes(const int* in, int* out, std::size_t n);
std::size_t cub_inclusive_sum_temp_bytes(const float* in, float* out, std::size_t n);

// *out = sum of in[0, n), out[i] = in[0] + ... + in[i]; temp holds the bytes asked for above.
void cub_reduce_sum(const float* in, float* out, std::size_t n, void* temp, std::size_t temp_bytes,
                    cudaStream_t stream);
void cub_inclusive_sum(const int* in, int* out, std::size_t n, void* temp, std::size_t temp_bytes,
                       cudaStream_t stream);
void cub_inclusive_sum(const float* in, float* out, std::size_t n, void* temp, std::size_t temp_bytes,
                       cudaStream_t stream);

}  // namespace cudalab::bench_ch05
