// Chapter 1's lesson pieces (reference track only): weights and inputs, the CPU oracle, the eager
// modes on the GPU, and the timing split's structure (never its values).
#include <gtest/gtest.h>

#include <cmath>

#include "block_testing.hpp"

using namespace cudalab;

TEST(BlockCpu, WeightsAreDeterministicAndScaled) {
  const auto w = ch01::block_weights();
  EXPECT_EQ(w.w1, ch01::block_weights().w1);
  EXPECT_NE(w.w1, ch01::block_weights({}, 2).w1);
  EXPECT_EQ(w.w1.size(), 2048u * 512u);
  EXPECT_EQ(w.w2.size(), 512u * 2048u);
  for (float g : w.gamma) ASSERT_NEAR(g, 1.0f, 0.1f);
  EXPECT_EQ(ch01::make_input(w.shape, 3, 1), ch01::make_input(w.shape, 3, 1));
}

TEST(BlockCpu, OracleIsTheResidualPlusTheFfn) {
  // With W2 = 0 and b2 = 0 the block is the identity; with b2 = c it adds c.
  auto w = ch01::block_weights({.d = 16, .hidden = 32});
  std::fill(w.w2.begin(), w.w2.end(), 0.0f);
  std::fill(w.b2.begin(), w.b2.end(), 0.25f);
  const auto x = ch01::make_input(w.shape, 2, 9);
  const auto y = ch01::block_forward_cpu(w, x, 2);
  for (std::size_t i = 0; i < x.size(); ++i) EXPECT_FLOAT_EQ(y[i], x[i] + 0.25f);
}

TEST(BlockCpu, GeluIsTheTanhApproximation) {
  EXPECT_FLOAT_EQ(ch01::gelu(0.0f), 0.0f);
  EXPECT_NEAR(ch01::gelu(1.0f), 0.841192f, 1e-5);
  EXPECT_NEAR(ch01::gelu(-1.0f), -0.158808f, 1e-5);
  EXPECT_NEAR(ch01::gelu(6.0f), 6.0f, 1e-5);
}

TEST(BlockCpu, RejectsBadArgumentsByName) {
  const auto w = ch01::block_weights({.d = 4, .hidden = 8});
  cudalab::testing::expect_throws_naming([] { ch01::block_weights({.d = 0}); }, "shape.d");
  cudalab::testing::expect_throws_naming(
      [&] { ch01::block_forward_cpu(w, std::vector<float>(5), 1); }, "x");
  cudalab::testing::expect_throws_naming([&] { ch01::make_input(w.shape, -1, 0); }, "batch");
  EXPECT_STREQ(ch01::mode_name(ch01::Mode::kGraph), "graph");
}

class LessonGpu : public ::testing::TestWithParam<ch01::Mode> {};

TEST_P(LessonGpu, EagerModesMatchTheOracle) {
  CUDALAB_REQUIRE_GPU();
  Stream s;
  const auto w = ch01::block_weights();
  ch01::Block block(w, 64);
  for (int batch : {1, 17, 64})
    EXPECT_TRUE(ch01_test::forward_matches(block, w, GetParam(), batch, s, "eager path"));
}

INSTANTIATE_TEST_SUITE_P(Modes, LessonGpu,
                         ::testing::Values(ch01::Mode::kEager, ch01::Mode::kEagerAlloc),
                         [](const auto& p) {
                           return p.param == ch01::Mode::kEager ? std::string("eager")
                                                                : std::string("eager_alloc");
                         });

class TimingGpu : public ::testing::Test {};

TEST_F(TimingGpu, SplitCountsKernelsAndSyncs) {
  CUDALAB_REQUIRE_GPU();
  Stream s;
  const auto w = ch01::block_weights({.d = 64, .hidden = 128});
  ch01::Block block(w, 8);
  for (auto mode : {ch01::Mode::kEager, ch01::Mode::kFused, ch01::Mode::kGraph}) {
    const auto t = ch01::time_forward(block, mode, 4, 5, s);
    const bool eager = mode == ch01::Mode::kEager;
    EXPECT_EQ(t.kernels, eager ? 7 : 3);
    EXPECT_EQ(t.host_syncs, eager ? 7 : 0);
    EXPECT_GT(t.total_us, 0.0);
    EXPECT_GT(t.kernel_us, 0.0);
    // The kernels' GPU time lies inside the forward's wall clock: a split that counts each
    // kernel's start-up separately exceeded a graph's whole forward on the H200 (negative
    // other_us), and this catches that.
    EXPECT_LE(t.kernel_us, t.total_us) << ch01::mode_name(mode);
    EXPECT_DOUBLE_EQ(t.other_us, t.total_us - t.kernel_us);
  }
  cudalab::testing::expect_throws_naming(
      [&] { ch01::time_forward(block, ch01::Mode::kFused, 9, 3, s); }, "batch");
  cudalab::testing::expect_throws_naming(
      [&] { ch01::time_forward(block, ch01::Mode::kFused, 1, 0, s); }, "reps");
}
