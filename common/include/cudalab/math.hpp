// Integer and address helpers used on both sides of the PCIe bus.
#pragma once

#include <concepts>
#include <cstddef>
#include <cstdint>

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

// Whether p is a multiple of `bytes` (a power of two: 16 for a float4 / uint4 / int4 access): the
// test every vector path makes on its pointers before it reads or writes that many bytes at once.
CUDALAB_HD inline bool is_aligned(const void* p, std::size_t bytes) {
  return reinterpret_cast<std::uintptr_t>(p) % bytes == 0;
}

// The scalar head of a vector loop: how many elements of `elem_bytes` lie between p (aligned to
// elem_bytes) and the first address at or after it that is a multiple of `bytes` (a power of two).
CUDALAB_HD inline std::size_t elements_to_alignment(const void* p, std::size_t elem_bytes,
                                                    std::size_t bytes) {
  return (bytes - reinterpret_cast<std::uintptr_t>(p) % bytes) % bytes / elem_bytes;
}

static_assert(ceil_div(0, 256) == 0 && ceil_div(1, 256) == 1 && ceil_div(256, 256) == 1 &&
              ceil_div(257, 256) == 2);

}  // namespace cudalab
