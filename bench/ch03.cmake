# Chapter 3: the first kernels beside cudaMemcpy device-to-device. One .cpp.
lab_bench(ch03 ch03_first_kernels.cpp)
