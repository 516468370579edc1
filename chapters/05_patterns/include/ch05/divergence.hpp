// Chapter 5 — warp divergence (exercise 5.7).
//
// Each element takes one of two long arithmetic paths depending on the parity of its index:
//   out[i] = i even ? path_a(in[i]) : path_b(in[i])
// A warp executes one instruction stream: when its 32 threads disagree on a branch, it runs both
// paths one after the other with half its lanes masked off each time. Same result, twice the time.
#pragma once

#include <cuda_runtime_api.h>

#include <cstddef>

#include "cudalab/math.hpp"  // CUDALAB_HD

namespace cudalab::ch05 {

inline constexpr int kDivergenceBlock = 256;  // threads per block; each block owns 256 elements
inline constexpr int kDivergenceSteps =
    256;  // dependent FMAs per path: the kernel is compute-bound
static_assert(kDivergenceBlock % 64 == 0, "warp pairs: an even and an odd warp per 64 threads");

// The two paths: kDivergenceSteps iterations of y = c * y + d (contracting, |c| < 1, so rounding
// errors shrink instead of growing: see the tolerance in the test).
inline constexpr float kPathAScale = 0.99f, kPathAShift = 0.01f;
inline constexpr float kPathBScale = 0.98f, kPathBShift = -0.02f;

enum class DivergenceVariant {
  kDivergent,   // thread t handles element t: even and odd lanes of every warp disagree
  kWarpUniform  // threads remapped so that every warp handles elements of one parity (5.7)
};

// out[i] = (i % 2 == 0 ? path A : path B)(in[i]) for i < n (device pointers, any n).
void branchy_transform(const float* in, float* out, std::size_t n, DivergenceVariant variant,
                       cudaStream_t stream = nullptr);

const char* to_string(DivergenceVariant variant);

}  // namespace cudalab::ch05
