// Chapter 5 stencil, between the host dispatch (stencil.cu) and the tiled kernel's file. Host-only:
// the kernels stay private to their .cu file.
#pragma once

#include <cuda_runtime_api.h>

#include <cstddef>

#include "ch05/stencil.hpp"

namespace cudalab::ch05::detail {

// One config drives the block shape, the launch bounds, the shared tile and the grid.
struct ConvConfig {
  static constexpr int kTileX = 32;    // output tile width: a warp covers one row (coalesced)
  static constexpr int kTileY = 128;   // output tile height (the naive kernel uses kThreadsY rows)
  static constexpr int kThreadsY = 8;  // 32 x 8 threads; each thread computes kTileY / 8 rows
  // Tiled kernel: each thread computes kTileY / kThreadsY = 16 outputs of its column (which ones,
  // and what it reuses between them, is exercise 5.5's design).
  static constexpr int kRowsPerThread = kTileY / kThreadsY;
  static constexpr int kThreads = kTileX * kThreadsY;
  // Shared tile sized for the largest radius: (kTileY + 2 R) x (kTileX + 2 R) floats.
  static constexpr int kInY = kTileY + 2 * kConvMaxRadius;
  static constexpr int kInX = kTileX + 2 * kConvMaxRadius;
};
static_assert(ConvConfig::kRowsPerThread * ConvConfig::kThreadsY == ConvConfig::kTileY,
              "whole rows per thread");
static_assert(ConvConfig::kThreads <= 1024 && ConvConfig::kThreads % 32 == 0);
static_assert(ConvConfig::kInY * ConvConfig::kInX * sizeof(float) <= 48 * 1024,
              "static shared limit");

// stencil_tiled.cu (exercise 5.5): the tiled kernel on `grid` blocks of (kTileX, kThreadsY)
// threads, each block one kTileY x kTileX output tile (conv2d checks the arguments and sizes the
// grid).
void launch_conv2d_tiled(dim3 grid, const float* in, float* out, int width, int height,
                         const float* filter, int radius, cudaStream_t stream);

}  // namespace cudalab::ch05::detail
