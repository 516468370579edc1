// Chapter 7: events for cross-stream dependencies, fork and join (exercise 7.2).
// (ch07.hpp includes every topic of the chapter; its header says the conventions.)
#pragma once

#include <cuda_runtime_api.h>

#include <cstddef>

namespace cudalab::ch07 {

// ---------------------------------------------------------------------------------------------
// Exercise 7.2 — events for cross-stream dependencies (fork / join).
// x is produced on `main` by work the caller enqueued before the call. Computes, without any host
// wait:  a = x * x on side[0], b = 2 x + 1 on side[1] (each starting once x is ready on main),
// then out = a + b on main (once both are done). Everything enqueued after the call on `main`
// sees `out`. Throws std::invalid_argument for null streams or pointers.
void fork_join(const float* x, float* a, float* b, float* out, std::size_t n, cudaStream_t main,
               cudaStream_t side0, cudaStream_t side1);
// The same three kernels one after another in `stream` (the baseline bench_ch07 compares with).
void fork_join_serial(const float* x, float* a, float* b, float* out, std::size_t n,
                      cudaStream_t stream);

}  // namespace cudalab::ch07
