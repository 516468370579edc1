// Exercise 3.1 — blocks_for: the ceil-div grid (CPU test: runs on CI too).
#include <gtest/gtest.h>

#include <cstdint>

#include "ch03/ch03.hpp"

using cudalab::ch03::blocks_for;

TEST(LaunchConfig, CoversEveryElementWithFewestBlocks) {
  struct Case {
    std::size_t n;
    unsigned threads, blocks;
  };
  for (const Case c : {Case{1, 256, 1}, Case{255, 256, 1}, Case{256, 256, 1}, Case{257, 256, 2},
                       Case{1000, 256, 4}, Case{1000, 1024, 1}, Case{31, 32, 1}, Case{33, 32, 2},
                       Case{(std::size_t{1} << 31) + 1, 256, (1u << 23) + 1}}) {
    EXPECT_EQ(blocks_for(c.n, c.threads), c.blocks)
        << "n = " << c.n << ", threads = " << c.threads
        << ": need ceil(n / threads) blocks (n / threads drops the partial last block)";
  }
}

TEST(LaunchConfig, ZeroElementsNeedZeroBlocks) {
  EXPECT_EQ(blocks_for(0, 256), 0u);
}

TEST(LaunchConfig, RejectsImpossibleBlockSizes) {
  EXPECT_THROW(blocks_for(100, 0), std::invalid_argument);
  EXPECT_THROW(blocks_for(100, 1025), std::invalid_argument);
}

TEST(LaunchConfig, RejectsGridsBeyondTheLimit) {
  // 2^31 blocks of 1 thread: one more than a 1D grid may have.
  EXPECT_THROW(blocks_for(std::size_t{1} << 31, 1), std::invalid_argument);
  EXPECT_EQ(blocks_for((std::size_t{1} << 31) - 1, 1), 0x7FFFFFFFu);
}
