# Chapter 4: coalescing, transpose ladder beside cudaMemcpy, bank conflicts, constant memory,
# host-device transfers (pageable, pinned, mapped), cublasSgeam as the transpose yardstick.
# cudaMemcpy rows need no wrapper: one .cpp.
lab_bench(ch04 ch04_memory.cpp LIBS CUDA::cublas)
