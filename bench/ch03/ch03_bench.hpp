// Chapter 3 benchmarks, what the vector rows share (vector_add.cpp, saxpy.cpp, grid_stride.cpp):
// three 1 GiB arrays and the check of c == a + b.
#pragma once

#include <functional>
#include <string>
#include <vector>

#include "cudalab/bench.hpp"
#include "cudalab/device_fill.hpp"
#include "cudalab/memory.hpp"

namespace cudalab::bench_ch03 {

constexpr std::size_t kN = std::size_t{1} << 28;  // 2^28 floats = 1 GiB per array, >> 60 MB of L2

// Filled and finished before bench::run's stream (non-blocking) starts its warm-up.
struct Arrays {
  DeviceBuffer<float> a = uniform_device_buffer(kN, 1, -1.0f, 1.0f);
  DeviceBuffer<float> b = uniform_device_buffer(kN, 2, -1.0f, 1.0f);
  DeviceBuffer<float> c = uniform_device_buffer(kN, 3, -1.0f, 1.0f);
};

// c == a + b, element by element (one IEEE add: exact agreement with the host).
inline std::string check_add(const Arrays& x) {
  const std::vector<float> a = x.a.to_host(), b = x.b.to_host();
  std::vector<float> want(kN);
  for (std::size_t i = 0; i < kN; ++i) want[i] = a[i] + b[i];
  return bench::mismatch(x.c.to_host(), want, {}, "vector add 2^28");
}

// A vector row's tail: `check` (which runs `work` once, on the default stream) through
// bench::verify, then `work` timed beside a cudaMemcpy D2D of the 3n floats it moves.
template <class Work, class Check>
void check_and_time_vs_copy(benchmark::State& state, const std::string& key, Work work, Check check,
                            double flops) {
  if (!bench::verify(state, key, check)) return;
  const double bytes = 3.0 * kN * sizeof(float);
  const bench::CopyBase copy(bytes);
  bench::run_vs(state, work, std::cref(copy), {.bytes = bytes, .flops = flops});
}

// A vector-add row (c = a + b): checked against check_add, then timed beside the copy.
template <class Work>
void check_add_and_time(benchmark::State& state, const std::string& key, const Arrays& x,
                        Work work) {
  check_and_time_vs_copy(
      state, key, work,
      [&] {
        work(nullptr);
        return check_add(x);
      },
      1.0 * kN);
}

}  // namespace cudalab::bench_ch03
