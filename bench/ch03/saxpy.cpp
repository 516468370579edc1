// Chapter 3 benchmarks, saxpy beside a copy of the same bytes (rows: vector_add.cpp's header).
#include <cmath>
#include <string>
#include <vector>

#include "ch03/ch03.hpp"
#include "ch03_bench.hpp"
#include "cudalab/bench.hpp"
#include "cudalab/memory.hpp"

using namespace cudalab;
using namespace cudalab::bench_ch03;

namespace {

void BM_saxpy(benchmark::State& state) {
  Arrays x;
  const float alpha = 1.0001f;
  auto work = [&](cudaStream_t s) { ch03::saxpy(alpha, x.a.data(), x.c.data(), kN, s); };
  check_and_time_vs_copy(
      state, "saxpy", work,
      [&] {
        const std::vector<float> a = x.a.to_host(), y0 = x.c.to_host();
        work(nullptr);
        std::vector<float> want(kN);
        for (std::size_t i = 0; i < kN; ++i) want[i] = std::fma(alpha, a[i], y0[i]);
        return bench::mismatch(x.c.to_host(), want, {.abs = 1e-6, .rel = 1e-6}, "saxpy 2^28");
      },
      2.0 * kN);
}

}  // namespace

[[maybe_unused]] const bool kRegistered = [] {
  bench::add("BM_saxpy", BM_saxpy);
  return true;
}();
