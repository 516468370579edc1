# Chapter 1 — where serving latency hides: the FFN block eager / fused / graph by batch size.
lab_bench(ch01 ch01_latency.cpp)
