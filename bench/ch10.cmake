# Chapter 10: the fused bias + GELU beside the eager pair and the copy ceiling; the mini
# autograd's per-op overhead and MLP step.
lab_bench(ch10 ch10_frameworks.cpp)
