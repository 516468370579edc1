// Exercise 1.1 — the fused epilogues: the 3-kernel forward equals the oracle at every batch size
// and on an odd shape (edges of every tile).
#include <gtest/gtest.h>

#include "block_testing.hpp"

using namespace cudalab;

class FusedForwardGpu : public ::testing::TestWithParam<int> {};

TEST_P(FusedForwardGpu, MatchesTheOracle) {
  CUDALAB_REQUIRE_GPU();
  const int batch = GetParam();
  Stream s;
  for (ch01::BlockShape shape : {ch01::BlockShape{}, ch01::BlockShape{.d = 37, .hidden = 100}}) {
    const auto w = ch01::block_weights(shape);
    ch01::Block block(w, 70);
    EXPECT_TRUE(ch01_test::forward_matches(block, w, ch01::Mode::kFused, batch, s,
                                           "exercise 1.1, d = " + std::to_string(shape.d)));
  }
}

INSTANTIATE_TEST_SUITE_P(Batches, FusedForwardGpu, ::testing::Values(1, 2, 15, 16, 17, 64, 70),
                         [](const auto& p) { return "batch_" + std::to_string(p.param); });
