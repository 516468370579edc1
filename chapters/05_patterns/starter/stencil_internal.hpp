// Starter track — write your code at the TODO marks; the tests of each exercise
// fail until you do. (Generated from chapters/05_patterns/reference/stencil_internal.hpp by scripts/variants.py.)
// Chapter 5 stencil, between the host dispatch (stencil.cu) and the tiled kernel's file. Host-only:
// the kernels stay private to their .cu file.
#pragma once

#include <cuda_runtime_api.h>

#include <cstddef>

#include "ch05/stencil.hpp"

namespace cudalab::ch05::detail {

// One config drives the block shape, the launch bounds, the shared tile and the grid.
struct ConvConfig {
  static constexpr int kThreadsX = 32;  // a warp spans one row of the block (both kernels)
  static constexpr int kThreadsY = 8;   // 32 x 8 threads; the naive kernel: one output each
  static constexpr int kTileX = 128;    // tiled kernel: output tile width (32 x 4 columns)
  static constexpr int kTileY = 32;     // tiled kernel: output tile height (8 x 4 rows)
  // Tiled kernel: each thread computes kColsPerThread x kRowsPerThread = 4 x 4 outputs (which
  // ones, and what it reuses between them, is exercise 5.5's design).
  static constexpr int kColsPerThread = kTileX / kThreadsX;
  static constexpr int kRowsPerThread = kTileY / kThreadsY;
  static constexpr int kThreads = kThreadsX * kThreadsY;
  // Halo columns each side of the shared tile: >= kConvMaxRadius, and a multiple of 4 so that the
  // tile's rows and their first image column stay 16-byte aligned (float4 loads).
  static constexpr int kHaloX = 4;
  // Shared tile sized for the largest radius: (kTileY + 2 R) x (kTileX + 2 kHaloX) floats.
  static constexpr int kInY = kTileY + 2 * kConvMaxRadius;
  static constexpr int kInX = kTileX + 2 * kHaloX;
};
static_assert(ConvConfig::kColsPerThread * ConvConfig::kThreadsX == ConvConfig::kTileX &&
                  ConvConfig::kRowsPerThread * ConvConfig::kThreadsY == ConvConfig::kTileY,
              "whole columns and rows per thread");
static_assert(ConvConfig::kThreads <= 1024 && ConvConfig::kThreads % 32 == 0);
static_assert(ConvConfig::kHaloX >= kConvMaxRadius && ConvConfig::kHaloX % 4 == 0 &&
                  ConvConfig::kTileX % 4 == 0,
              "float4-aligned tile rows wide enough for every radius");
static_assert(ConvConfig::kInY * ConvConfig::kInX * sizeof(float) <= 48 * 1024,
              "static shared limit");
// The tiled kernel's minimum resident blocks per SM (__launch_bounds__): 4 x 256 threads caps it
// at 64 registers a thread, and 4 x 21.25 KB of shared memory fits an SM.
inline constexpr int kConvTiledBlocksPerSm = 4;

// stencil_tiled.cu (exercise 5.5): the tiled kernel on `grid` blocks of (kThreadsX, kThreadsY)
// threads, each block one kTileY x kTileX output tile (conv2d checks the arguments and sizes the
// grid). At r = 3, on the shapes conv2d_strip_applies() accepts (the starter's: none), it runs
// the strip kernel instead, on a grid of its own (StripConfig, stencil_tiled.cu).
void launch_conv2d_tiled(dim3 grid, const float* in, float* out, int width, int height,
                         const float* filter, int radius, cudaStream_t stream);

}  // namespace cudalab::ch05::detail
