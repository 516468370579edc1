# Chapter 5: reduction and scan (ch05_patterns.cpp, CUB rows through ch05_cub.cu), and the other
# patterns of the chapter (ch05_patterns_more.cpp).
lab_bench(ch05 ch05_patterns.cpp ch05_patterns_more.cpp ch05_cub.cu ch05_patterns_more_cub.cu)
