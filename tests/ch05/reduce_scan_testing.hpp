// Helpers shared by the reduction and scan tests of chapter 5 (test_reduce.cpp, test_scan.cpp).
#pragma once

#include <gtest/gtest.h>

#include <cmath>
#include <functional>
#include <string>
#include <cstddef>
#include <limits>
#include <span>
#include <type_traits>
#include <vector>

#include "ch05/scan.hpp"
#include "cudalab/memory.hpp"
#include "cudalab/random.hpp"
#include "cudalab/testing.hpp"

namespace ch05_testing {

// An input on the device with a guard zone of "loud" values around it: `offset` elements before
// (also misaligns the data by offset * 4 bytes when offset % 4 != 0) and kGuard after. A kernel that
// reads past n adds NaN (float) or 2^24 (int) to its result, which no tolerance hides.
template <class T>
class GuardedInput {
 public:
  static constexpr std::size_t kGuard = 64;
  static T loud() {
    if constexpr (std::is_floating_point_v<T>) return std::numeric_limits<T>::quiet_NaN();
    else return T{1} << 24;
  }
  GuardedInput(const std::vector<T>& host, std::size_t offset = 0) : offset_(offset), buf_(offset + host.size() + kGuard) {
    std::vector<T> all(buf_.size(), loud());
    for (std::size_t i = 0; i < host.size(); ++i) all[offset + i] = host[i];
    buf_.upload(std::span<const T>(all));
  }
  const T* data() const noexcept { return buf_.data() + offset_; }

 private:
  std::size_t offset_;
  cudalab::DeviceBuffer<T> buf_;
};

// Rounding error of float sums (Higham, "Accuracy and Stability of Numerical Algorithms", 4.2):
// a sum evaluated in any order in which every input passes through at most D roundings obeys
//   |computed - exact| <= gamma_D * sum |x_i|,   gamma_D = D u / (1 - D u),  u = 2^-24.
// Our kernels: a thread adds at most n / 1024 vectors in sequence (grid-stride loop), plus at most
// 4 within a vector, log2(1024) in a block tree or a warp scan, the partials of at most n / 1024
// blocks (the single-pass scan chains one tile prefix after another: n / 4096 tiles), and a few
// more at the passes' joints. D = n / 512 + 64 covers every variant for any grid.
inline double float_sum_tolerance(std::size_t n, double sum_abs) {
  const double u = std::ldexp(1.0, -24);
  const double d = static_cast<double>(n) / 512.0 + 64.0;
  return d * u / (1.0 - d * u) * sum_abs;
}

// Scan oracle: in double (float inputs) or 64-bit integers (int inputs), restarting every
// `segment` elements (segment = n for a whole-array scan; kScanTile for tile_scan).
template <class T>
std::vector<T> scan_oracle(const std::vector<T>& x, cudalab::ch05::ScanKind kind, std::size_t segment) {
  using Acc = std::conditional_t<std::is_floating_point_v<T>, double, long long>;
  std::vector<T> out(x.size());
  Acc acc = 0;
  for (std::size_t i = 0; i < x.size(); ++i) {
    if (i % segment == 0) acc = 0;
    if (kind == cudalab::ch05::ScanKind::kExclusive) out[i] = static_cast<T>(acc);
    acc += x[i];
    if (kind == cudalab::ch05::ScanKind::kInclusive) out[i] = static_cast<T>(acc);
  }
  return out;
}

// Float scan inputs: (1) small integers in [-8, 8] (|prefix| <= 8 n < 2^24 for n <= 2^21: every
// partial sum is exact in float, so the result must be exact), or (2) uniform reals in [-1, 1]
// with |err_i| <= gamma_D * sum_{j <= i} |x_j| <= gamma_D * sum |x| (float_sum_tolerance).
inline constexpr std::size_t kExactFloatMaxN = std::size_t{1} << 21;

// Runs `op(in, out)` on fresh inputs of n elements (after `offset` guard elements) and checks
// the output against scan_oracle: int exactly; float exactly on small integers (n <=
// kExactFloatMaxN) and within float_sum_tolerance on reals. `what` names the operation.
template <class T>
void check_scan(const std::function<void(const T*, T*)>& op, std::size_t n, cudalab::ch05::ScanKind kind,
                std::size_t segment, std::size_t offset, const std::string& what) {
  cudalab::Rng rng;
  const bool exact_float = std::is_floating_point_v<T> && n <= kExactFloatMaxN;
  std::vector<T> x(n);
  if constexpr (std::is_floating_point_v<T>) {
    if (exact_float) {
      const std::vector<int> k = rng.uniform<int>(n, -8, 8);
      for (std::size_t i = 0; i < n; ++i) x[i] = static_cast<T>(k[i]);
    } else {
      x = rng.uniform<T>(n, T(-1), T(1));
    }
  } else {
    x = rng.uniform<T>(n, T(-1000), T(1000));
  }
  cudalab::Tolerance tol{};
  std::string input = std::is_floating_point_v<T> ? "integers in [-8, 8], exact" : "ints, exact";
  if (std::is_floating_point_v<T> && !exact_float) {
    double sum_abs = 0;
    for (T e : x) sum_abs += std::fabs(static_cast<double>(e));
    tol.abs = float_sum_tolerance(n, sum_abs);
    input = "uniform [-1, 1], |err| <= gamma_D sum|x|";
  }
  GuardedInput<T> in(x, offset);
  cudalab::testing::GuardedOutput<T> out(n);
  op(in.data(), out.data());
  CUDALAB_CHECK(cudaDeviceSynchronize());
  const std::vector<T> got = out.result();
  EXPECT_MATCHES(cudalab::compare(got, scan_oracle(x, kind, segment), tol,
                                  what + " (" + (kind == cudalab::ch05::ScanKind::kInclusive ? "inclusive" : "exclusive") +
                                      ", n = " + std::to_string(n) + ", offset = " + std::to_string(offset) + ", " +
                                      input + ")"));
  EXPECT_TRUE(out.guard_intact()) << what;
}

}  // namespace ch05_testing
