// Chapter 4 benchmarks, what several topic files share: the array size (coalescing.cpp,
// constant.cpp, transfers.cpp), the run beside a copy of the same bytes (coalescing.cpp,
// transpose.cpp) and the row key bench::verify names (every topic).
#pragma once

#include <functional>
#include <string>

#include "cudalab/bench.hpp"

namespace cudalab::bench_ch04 {

constexpr std::size_t kN = std::size_t{1} << 26;  // 2^26 floats = 256 MiB per array, >> 60 MB of L2

// Runs `work` beside a cudaMemcpy D2D of the same bytes; pct_of_memcpy_same_bytes = 100 vs_base.
inline void run_vs_copy(benchmark::State& state, const std::function<void(cudaStream_t)>& work,
                        bench::Work w) {
  const bench::CopyBase copy(w.bytes);
  bench::run_vs(state, work, std::cref(copy), w);
  if (state.counters.find("vs_base") != state.counters.end())
    state.counters["pct_of_memcpy_same_bytes"] = 100.0 * state.counters["vs_base"];
}

inline std::string key(const char* family, const benchmark::State& state, int args) {
  std::string k = family;
  for (int i = 0; i < args; ++i) {
    k += '/';
    k += std::to_string(state.range(i));
  }
  return k;
}

}  // namespace cudalab::bench_ch04
