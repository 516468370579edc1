// Chapter 3 benchmarks, what the vector rows share (vector_add.cpp, saxpy.cpp, grid_stride.cpp):
// three 1 GiB arrays and the check of c == a + b.
#pragma once

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

}  // namespace cudalab::bench_ch03
