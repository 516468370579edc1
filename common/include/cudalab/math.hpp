// Integer helpers used on both sides of the PCIe bus.
#pragma once

#include <concepts>

#if defined(__CUDACC__)
#define CUDALAB_HD __host__ __device__
#else
#define CUDALAB_HD
#endif

namespace cudalab {

// Number of blocks of `d` that cover `n`: ceil(n / d). n = 0 gives 0 (the caller must then not
// launch: a grid of 0 blocks is an invalid configuration).
template <std::integral T>
CUDALAB_HD constexpr T ceil_div(T n, T d) {
  return n / d + (n % d != 0 ? 1 : 0);
}

template <std::integral T>
CUDALAB_HD constexpr T round_up(T n, T multiple) {
  return ceil_div(n, multiple) * multiple;
}

static_assert(ceil_div(0, 256) == 0 && ceil_div(1, 256) == 1 && ceil_div(256, 256) == 1 &&
              ceil_div(257, 256) == 2);

}  // namespace cudalab
