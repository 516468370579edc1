// Chapter 9 — profiling and debugging: the host API the tests and the benchmarks call.
#pragma once

#include <cuda_runtime_api.h>

#include <cstddef>
#include <vector>

namespace cudalab::ch09 {

// Exercise 9.1 (a kernel and its profile): out[r][c] = in[r][c] * scale[r] on a row-major
// rows x cols matrix (device pointers; rows = 0 or cols = 0 allowed). Asynchronous on `stream`.
// The starter is correct and slow; its profile is in the README: fix what it names.
void scale_rows(const float* in, const float* scale, float* out, std::size_t rows, std::size_t cols,
                cudaStream_t stream = nullptr);

// The mapping of scale_rows made visible: owners[i] = r * cols + c, the memory index of the
// element thread i owns (device pointer, rows * cols entries). Thread i reads and writes memory
// index owners[i], so a warp's loads are contiguous (4 sectors of 32 bytes per request) exactly
// when owners[i] == i for consecutive i. Asynchronous on `stream`.
void scale_rows_owners(std::size_t rows, std::size_t cols, std::size_t* owners,
                       cudaStream_t stream = nullptr);

// The CPU oracle of scale_rows (cpu/oracle.cpp): exact (one float multiply per element).
std::vector<float> scale_rows_cpu(const std::vector<float>& in, const std::vector<float>& scale,
                                  std::size_t rows, std::size_t cols);

}  // namespace cudalab::ch09
