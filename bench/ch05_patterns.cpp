// Chapter 5 benchmarks, part 1: reduction and scan beside CUB (filled in below).
