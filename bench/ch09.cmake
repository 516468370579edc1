# Chapter 9: the kernels beside cudaMemcpy in the same run.
lab_bench(ch09 ch09_profiling.cpp)
