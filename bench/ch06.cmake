lab_bench(ch06 ch06_libraries.cpp LIBS CUDA::cublas)
