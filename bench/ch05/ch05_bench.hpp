// Chapter 5 benchmarks, what the reduction and scan rows share (reduce.cpp, scan.cpp,
// small_sizes.cpp): the 2^28-element inputs (1 GiB per array, far above the 60 MB L2), made once
// per process, the host results they are checked against, and CUB beside them (its fast path:
// 32-bit item counts).
//
// The sizes of the patterns of exercises 5.5 - 5.10 (stencil.cpp ... histogram.cpp): every input
// is >= 256 MiB.
#pragma once

#include <cstdint>
#include <string>
#include <type_traits>
#include <vector>

#include "cub_wrappers.hpp"
#include "cudalab/bench.hpp"
#include "cudalab/device_fill.hpp"
#include "cudalab/memory.hpp"

namespace cudalab::bench_ch05 {

constexpr std::size_t kMoreN = std::size_t{1} << 26;  // 2^26 floats = 256 MiB per array
constexpr int kImage = 8192;                          // 8192 x 8192 floats = 256 MiB

constexpr std::size_t kN = std::size_t{1} << 28;  // reduction and scan: 1 GiB per array

// Reduction input: integers in [-8, 8] stored as floats. Every partial sum of any grouping is an
// integer far below 2^24 (a random walk of 2^28 steps of about 5 stays near 1e5), so every order of
// additions gives the exact sum, which the host knows.
// Scan input: integers in [-100, 100] (prefixes near 1e6 < 2^24: exact in float too).
struct Inputs {
  DeviceBuffer<float> reduce_in;
  double reduce_sum = 0;
  DeviceBuffer<int> scan_int;
  DeviceBuffer<float> scan_float;
  std::vector<int> scan_prefix;  // inclusive prefix sums of the scan input (host)

  Inputs() {
    std::vector<float> h(kN);
    std::int64_t s = 0;
    for (std::size_t i = 0; i < kN; ++i) {
      const int v = uniform_at(1, i, -8, 8);
      h[i] = static_cast<float>(v);
      s += v;
    }
    reduce_sum = static_cast<double>(s);
    reduce_in = to_device(h);
    scan_int = uniform_device_buffer(kN, 2, -100, 100);
    scan_prefix.resize(kN);
    std::int64_t p = 0;
    for (std::size_t i = 0; i < kN; ++i) {
      const int v = uniform_at(2, i, -100, 100);
      h[i] = static_cast<float>(v);
      p += v;
      scan_prefix[i] = static_cast<int>(p);
    }
    scan_float = to_device(h);
  }
};

// Made once per process (a few seconds on the host), shared by every row.
inline Inputs& inputs() {
  static Inputs in;
  return in;
}

template <class T>
const T* scan_input() {
  if constexpr (std::is_same_v<T, float>)
    return inputs().scan_float.data();
  else
    return inputs().scan_int.data();
}

inline std::string check_sum(const DeviceBuffer<float>& out) {
  const float got = bench::download(out.data(), 1)[0];
  const double want = inputs().reduce_sum;
  if (static_cast<double>(got) == want) return {};
  return "sum of 2^28 small integers: got " + std::to_string(got) + ", want " +
         std::to_string(want) + " (exact in any order of additions)";
}

template <class T>
std::string check_scan(const DeviceBuffer<T>& out) {
  const std::vector<T> got = bench::download(out.data(), kN);
  const std::vector<int>& p = inputs().scan_prefix;
  std::vector<T> want(p.begin(), p.end());
  return bench::mismatch(got, want, {},
                         "inclusive scan of 2^28 small integers (exact in any order)");
}

// The CUB row beside the hand-written ones: the base of every run_vs of reduce.cpp, scan.cpp and
// small_sizes.cpp, over the first n elements of the inputs.
struct CubReduce {
  std::size_t n;
  DeviceBuffer<float> out{1};
  DeviceBuffer<unsigned char> temp;
  explicit CubReduce(std::size_t count = kN)
      : n(count), temp(cub_reduce_sum_temp_bytes(inputs().reduce_in.data(), out.data(), n)) {}
  void operator()(cudaStream_t s) {
    cub_reduce_sum(inputs().reduce_in.data(), out.data(), n, temp.data(), temp.bytes(), s);
  }
};

template <class T>
struct CubScan {
  std::size_t n;
  DeviceBuffer<T> out;
  DeviceBuffer<unsigned char> temp;
  explicit CubScan(std::size_t count = kN)
      : n(count), out(count), temp(cub_inclusive_sum_temp_bytes(scan_input<T>(), out.data(), n)) {}
  void operator()(cudaStream_t s) {
    cub_inclusive_sum(scan_input<T>(), out.data(), n, temp.data(), temp.bytes(), s);
  }
};

}  // namespace cudalab::bench_ch05
