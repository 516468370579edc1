// Chapter 5 benchmarks, part 2: stencil tiling, unrolling, divergence, occupancy, fusion, histogram.
// (Reduction and scan live in ch05_patterns.cpp; the CUB rows in ch05_cub.cu.)
