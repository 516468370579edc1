# Chapter 2: this GPU's card (FMA, tensor cores, latency, bandwidth by level), beside cuBLAS and
# cudaMemcpy in the same run.
lab_bench(ch02 ch02_architecture.cpp LIBS CUDA::cublas)
