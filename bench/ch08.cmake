# Chapter 8: the kernels beside cudaMemcpy in the same run.
lab_bench(ch08 ch08_multi_gpu.cpp)
