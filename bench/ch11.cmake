# Chapter 11: decode attention (paged, contiguous, split-K) beside a copy of the same KV bytes, and
# the INT8 weight-only GEMV beside the fp16 one and cuBLAS's, cuBLASLt GEMMs, prefill, and the tiny decoder served
# end to end with static and continuous batching. One .cpp.
lab_bench(ch11 ch11_llm_serving.cpp LIBS CUDA::cublas)
