// Chapter 5 — shared-memory tiling: a 2D convolution with halos (exercise 5.5).
//
// out(y, x) = sum_{dy, dx in [-r, r]} filter(dy + r, dx + r) * in(y + dy, x + dx)
//
// Boundary rule: zero padding. A pixel outside the image reads as 0, so every output pixel is
// defined for any width, height and radius (a 1-pixel image included).
#pragma once

#include <cuda_runtime_api.h>

namespace cudalab::ch05 {

// Filters up to 9 x 9. The tiled kernel sizes its shared tile for this radius.
inline constexpr int kConvMaxRadius = 4;

enum class ConvVariant {
  kNaive,  // every tap is a global load (served by L1/L2 when lucky): (2r+1)^2 loads per output
  kTiled   // a block loads its tile plus a halo of r pixels into shared memory once (exercise 5.5)
};

// `in` and `out` are dense row-major images of height rows x width floats (device); `filter` is
// (2r+1) x (2r+1) floats, row-major (device). width, height >= 0 (0 is a no-op); 0 <= radius <=
// kConvMaxRadius; `out` must not overlap `in`. Throws std::invalid_argument naming the argument.
void conv2d(const float* in, float* out, int width, int height, const float* filter, int radius,
            ConvVariant variant = ConvVariant::kTiled, cudaStream_t stream = nullptr);

}  // namespace cudalab::ch05
