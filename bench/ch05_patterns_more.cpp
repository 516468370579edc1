// Chapter 5 benchmarks, part 2: stencil tiling, unrolling, divergence, occupancy, fusion, histogram.
// (Reduction and scan live in ch05_patterns.cpp, which also holds CUDALAB_BENCH_MAIN(): do not add
// a second main here; the CUB rows are wrapped in ch05_cub.cu.)
