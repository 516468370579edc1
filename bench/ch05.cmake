# Chapter 5: reduction and scan (ch05_reduce_scan.cpp), the patterns of exercises 5.5 - 5.10
# (ch05_stencil_unroll_divergence_occupancy_fusion_histogram.cpp), CUB rows through
# ch05_cub_wrappers.cu.
lab_bench(ch05 ch05_reduce_scan.cpp ch05_stencil_unroll_divergence_occupancy_fusion_histogram.cpp
          ch05_cub_wrappers.cu)
