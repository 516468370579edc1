// Helpers shared by the reduction and scan tests of chapter 5 (test_reduce.cpp, test_scan.cpp).
#pragma once

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <functional>
#include <limits>
#include <span>
#include <string>
#include <type_traits>
#include <vector>

#include "ch05/scan.hpp"
#include "cudalab/check.hpp"
#include "cudalab/device_fill.hpp"
#include "cudalab/memory.hpp"
#include "cudalab/random.hpp"
#include "cudalab/testing.hpp"

namespace ch05_testing {

using cudalab::testing::GuardedInput;

// An inclusive int scan of n = 2^32 + 5 elements by `variant` (in + out: 34 GB), checked exactly on
// the device (the helper takes the large-test lock and skips, with the reason, where memory lacks):
// a tile's first element computed as a 32-bit product wraps past 2^32 (the last tiles rescan the
// first ones), and so does a full-tile test made in 32 bits. `what` names the kernel in the
// failure. Cost on an H200: ~100 GB moved, ~30 ms, plus allocation.
inline void expect_int_scan_past_2_to_32(cudalab::ch05::ScanVariant variant,
                                         const std::string& what) {
  const std::size_t n = (std::size_t{1} << 32) + 5;
  const std::size_t ws_bytes = cudalab::ch05::scan_workspace_bytes(n);
  CUDALAB_REQUIRE_DEVICE_MEMORY(2 * n * sizeof(int) + ws_bytes + (std::size_t{1} << 30));
  cudalab::DeviceBuffer<int> in(n), out(n);
  cudalab::DeviceBuffer<unsigned char> ws(ws_bytes);
  cudalab::fill_uniform_device(in.data(), n, cudalab::Rng().seed(), -1000, 1000);
  cudalab::poison_device(out.data(), out.bytes());
  cudalab::ch05::scan(in.data(), out.data(), n, cudalab::ch05::ScanKind::kInclusive, ws.data(),
                      ws.bytes(), variant);
  CUDALAB_CHECK(cudaDeviceSynchronize());
  EXPECT_TRUE(cudalab::testing::device_matches(
      cudalab::testing::check_int_scan(in.data(), out.data(), n, true),
      "scan<int> " + what + " (inclusive, n = 2^32 + 5)"));
}

// Rounding error of float sums (Higham, "Accuracy and Stability of Numerical Algorithms", 4.2):
// a sum evaluated in any order in which every input passes through at most D roundings obeys
//   |computed - exact| <= gamma_D * sum |x_i|,   gamma_D = D u / (1 - D u),  u = 2^-24.
// Our kernels: a thread adds at most n / 1024 vectors in sequence (grid-stride loop), plus at most
// 4 within a vector, log2(1024) in a block tree or a warp scan, the partials of at most n / 1024
// blocks (the single-pass scan chains one tile prefix after another: n / 8192 tiles), and a few
// more at the passes' joints. D = n / 512 + 64 covers every variant for any grid.
inline double float_sum_tolerance(std::size_t n, double sum_abs) {
  const double u = std::ldexp(1.0, -24);
  const double d = static_cast<double>(n) / 512.0 + 64.0;
  return d * u / (1.0 - d * u) * sum_abs;
}

// Scan oracle: in double (float inputs) or 64-bit integers (int inputs), restarting every
// `segment` elements (segment = n for a whole-array scan; kScanTile for tile_scan).
template <class T>
std::vector<T> scan_oracle(const std::vector<T>& x, cudalab::ch05::ScanKind kind,
                           std::size_t segment) {
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

// ---- Float inputs that make a wrong result fail at every size --------------------------------
//
// A global bound gamma_D * sum|x| cannot fail: at n = 2^23 + 3 it is ~4,000 while the largest
// prefix of a uniform [-1, 1] input is ~2,500, so an all-zero output "passes". Two rules instead:
//
// (1) Exact inputs (n < 2^24): x = k / 16 with k uniform in [-K, K], K = min(128, (2^24 - 1) / n).
//     Every partial sum the GPU can form, in any order and any grouping, is a sum of a subset of
//     the x: a multiple of 1/16 with |s| <= sum|x| <= n K / 16 < 2^20. A float holds every
//     multiple of 2^-4 below 2^20 exactly (20 + 4 = 24 significant bits), so no addition rounds
//     and the output must equal the double oracle bit for bit. The fractional part (k / 16, not k)
//     is what catches a float-to-int truncation (`auto prefix = 0;` in the look-back makes the
//     running prefix an int: it drops the fraction of every tile's prefix), and any element that
//     is not its exact prefix (an all-zero output, a skipped or doubled tile) fails.
// (2) Larger n (only the *LargeGpu tests): uniform reals in [-0.5, 1] (a positive mean, so the
//     prefixes grow like 0.25 i), checked element by element against
//       |got_i - want_i| <= gamma_{D_i} * sum_{j <= i} |x_j|,   D_i = i / 512 + 64
//     (Higham 4.2: element i is a sum of x_0..x_i evaluated by a tree of depth <= D_i: at most 64
//     roundings inside a tile (its vector, warp and block steps) plus one per earlier tile on the
//     look-back chain (tiles of 8192) or per level of scan-then-propagate (tiles of 512)). An
//     all-zero output fails at every i (gamma < 1 and the prefix is ~0.25 i); a truncated prefix
//     (error up to 1 per tile) fails on the first tiles, where the bound is ~1e-2.
inline constexpr std::size_t kExactFloatMaxN = (std::size_t{1} << 24) - 1;

// The K of rule (1) for n elements (0 when n is too large for exact inputs).
inline int exact_float_k(std::size_t n) {
  if (n == 0) return 128;
  if (n > kExactFloatMaxN) return 0;
  return static_cast<int>(std::min<std::size_t>(128, kExactFloatMaxN / n));
}

// n exact float inputs of rule (1): multiples of 1/16, sum|x| < 2^20.
inline std::vector<float> exact_float_inputs(cudalab::Rng& rng, std::size_t n) {
  const int K = exact_float_k(n);
  const std::vector<int> k = rng.uniform<int>(n, -K, K);
  std::vector<float> x(n);
  for (std::size_t i = 0; i < n; ++i) x[i] = static_cast<float>(k[i]) / 16.0f;
  return x;
}

// gamma_D of rule (2) for element i.
inline double scan_gamma(std::size_t i) {
  const double u = std::ldexp(1.0, -24);
  const double d = static_cast<double>(i) / 512.0 + 64.0;
  return d * u / (1.0 - d * u);
}

// Element-by-element check of rule (2): the message names the first failing element (index,
// got, want, bound), how many fail, n and the operation.
inline ::testing::AssertionResult scan_within_bound(const std::vector<float>& got,
                                                    const std::vector<float>& x,
                                                    cudalab::ch05::ScanKind kind,
                                                    std::size_t segment, const std::string& what) {
  std::size_t bad = 0, first = 0;
  double first_got = 0, first_want = 0, first_bound = 0;
  double acc = 0, abs_acc = 0;
  for (std::size_t i = 0; i < x.size(); ++i) {
    if (i % segment == 0) acc = abs_acc = 0;
    double want = acc;
    acc += x[i];
    abs_acc += std::fabs(static_cast<double>(x[i]));
    if (kind == cudalab::ch05::ScanKind::kInclusive) want = acc;
    const double bound = scan_gamma(i % segment) * abs_acc;
    const double g = got[i];
    if (!(std::fabs(g - want) <= bound)) {  // NaN (poison: never written) fails too
      if (bad++ == 0) first = i, first_got = g, first_want = want, first_bound = bound;
    }
  }
  if (bad == 0) return ::testing::AssertionSuccess();
  return ::testing::AssertionFailure()
         << what << ": " << bad << " of " << x.size()
         << " elements outside |got - want| <= gamma_{i/512+64} * "
         << "sum_{j<=i} |x_j|; first at index " << first << ": got " << first_got << ", want "
         << first_want << ", bound " << first_bound;
}

// Runs `op(in, out)` on fresh inputs of n elements (after `offset` guard elements) and checks
// the output against scan_oracle: int exactly; float exactly on the inputs of rule (1) (n <
// 2^24) and element by element within rule (2) above. `what` names the operation.
template <class T>
void check_scan(const std::function<void(const T*, T*)>& op, std::size_t n,
                cudalab::ch05::ScanKind kind, std::size_t segment, std::size_t offset,
                const std::string& what, std::size_t out_offset = 0) {
  cudalab::Rng rng;
  const bool exact_float = std::is_floating_point_v<T> && n <= kExactFloatMaxN;
  std::vector<T> x(n);
  std::string input = "ints, exact";
  if constexpr (std::is_floating_point_v<T>) {
    if (exact_float) {
      x = exact_float_inputs(rng, n);
      input = "multiples of 1/16 in [-" + std::to_string(exact_float_k(n)) +
              "/16, +], every partial sum exact in float";
    } else {
      x = rng.uniform<T>(n, T(-0.5), T(1));
      input = "uniform [-0.5, 1], per-element bound";
    }
  } else {
    x = rng.uniform<T>(n, T(-1000), T(1000));
  }
  GuardedInput<T> in(x, offset);
  cudalab::testing::GuardedOutput<T> out(out_offset + n);
  op(in.data(), out.data() + out_offset);
  CUDALAB_CHECK(cudaDeviceSynchronize());
  const std::vector<T> all = out.result();
  const std::vector<T> got(all.begin() + static_cast<std::ptrdiff_t>(out_offset), all.end());
  const std::string full =
      what + " (" + (kind == cudalab::ch05::ScanKind::kInclusive ? "inclusive" : "exclusive") +
      ", n = " + std::to_string(n) + ", offset = " + std::to_string(offset) +
      (out_offset ? ", output offset = " + std::to_string(out_offset) : std::string()) + ", " +
      input + ")";
  EXPECT_TRUE(out.untouched(0, out_offset, full));
  if constexpr (std::is_floating_point_v<T>) {
    if (!exact_float) {
      EXPECT_TRUE(scan_within_bound(got, x, kind, segment, full));
      EXPECT_TRUE(out.guard_intact()) << what;
      return;
    }
  }
  EXPECT_MATCHES(cudalab::compare(got, scan_oracle(x, kind, segment), cudalab::Tolerance{}, full));
  EXPECT_TRUE(out.guard_intact()) << what;
}

}  // namespace ch05_testing
