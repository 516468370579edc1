// Chapter 8 test helpers: the device-count skip rule and integer-valued rank data (exact sums in
// any order, so the ring's order of additions and the CPU's compare with ==).
#pragma once

#include <gtest/gtest.h>

#include <cstddef>
#include <numeric>
#include <vector>

#include "ch08/ch08.hpp"
#include "cudalab/testing.hpp"

// Skips with "skipped: needs N GPUs" where fewer are present (after the one-GPU rule).
#define CH08_REQUIRE_GPUS(count)                                      \
  do {                                                                \
    CUDALAB_REQUIRE_GPU();                                            \
    if (::cudalab::ch08::device_count() < (count))                    \
      GTEST_SKIP() << "skipped: needs " << (count) << " GPUs (found " \
                   << ::cudalab::ch08::device_count() << ")";         \
  } while (0)

namespace cudalab::ch08::tests {

// Rank r's buffer: small integers in [-8, 8], different per rank and element.
inline std::vector<std::vector<float>> rank_data(int ranks, std::size_t count) {
  std::vector<std::vector<float>> b(ranks, std::vector<float>(count));
  for (int r = 0; r < ranks; ++r)
    for (std::size_t i = 0; i < count; ++i)
      b[r][i] = static_cast<float>(static_cast<int>((i * 7 + r * 3 + 1) % 17) - 8);
  return b;
}

}  // namespace cudalab::ch08::tests
