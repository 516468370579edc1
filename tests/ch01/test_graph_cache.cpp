// Exercise 1.2 — the graph path: equals the oracle, replays without capturing again, one graph per
// (batch, x, y), the legacy stream refused.
#include <gtest/gtest.h>

#include <cstddef>
#include <span>

#include "block_testing.hpp"

using namespace cudalab;

class GraphForwardGpu : public ::testing::Test {};

TEST_F(GraphForwardGpu, MatchesTheOracleAndCachesOneGraphPerShape) {
  CUDALAB_REQUIRE_GPU();
  const auto w = ch01::block_weights();
  ch01::Block block(w, 64);
  Stream s;
  EXPECT_TRUE(
      ch01_test::forward_matches(block, w, ch01::Mode::kGraph, 1, s, "exercise 1.2, first call"));
  EXPECT_EQ(block.instantiations(), 1);

  // Same key twice: one graph, replayed; the replay recomputes (y poisoned in between).
  const int batch = 17;
  const auto x = ch01::make_input(w.shape, batch, 5);
  auto dx = to_device(x);
  DeviceBuffer<float> y(static_cast<std::size_t>(batch) * w.shape.d);
  const auto want = ch01::block_forward_cpu(w, x, batch);
  for (int round = 0; round < 3; ++round) {
    poison_device(y.data(), y.bytes());
    CUDALAB_CHECK(cudaDeviceSynchronize());
    block.forward(ch01::Mode::kGraph, dx.data(), y.data(), batch, s);
    s.synchronize();
    EXPECT_MATCHES(compare(y.to_host(), want, ch01_test::kTol,
                           "graph replay " + std::to_string(round) + " (exercise 1.2)"));
  }
  EXPECT_EQ(block.graphs_cached(), 2u) << "one graph per (batch, x, y): batch 1 and batch 17";
  EXPECT_EQ(block.instantiations(), 2) << "a hit must replay, not capture and instantiate again";

  // Another batch size with the same buffers is another graph. y still holds 17 rows: the batch-16
  // graph writes rows 0..15 only, so those are compared with the batch-16 oracle and row 16 must
  // still hold what the batch-17 replay wrote.
  const auto rows16 = static_cast<std::size_t>(16) * w.shape.d;
  block.forward(ch01::Mode::kGraph, dx.data(), y.data(), 16, s);
  s.synchronize();
  EXPECT_EQ(block.graphs_cached(), 3u);
  const auto got16 = y.to_host();
  EXPECT_MATCHES(compare(
      std::span<const float>(got16).first(rows16),
      std::span<const float>(ch01::block_forward_cpu(
          w, std::vector<float>(x.begin(), x.begin() + static_cast<std::ptrdiff_t>(rows16)), 16)),
      ch01_test::kTol, "graph at batch 16 (exercise 1.2)"));
  EXPECT_MATCHES(
      compare(std::span<const float>(got16).subspan(rows16),
              std::span<const float>(want).subspan(rows16), ch01_test::kTol,
              "graph at batch 16, row 16 (exercise 1.2): not written by a batch-16 graph"));
  cudaStreamCaptureStatus status{};
  ASSERT_EQ(cudaStreamIsCapturing(s, &status), cudaSuccess);
  EXPECT_EQ(status, cudaStreamCaptureStatusNone) << "the stream must not be left capturing";
}

class GraphForwardArgsGpu : public ::testing::Test {};

TEST_F(GraphForwardArgsGpu, LegacyStreamIsRefused) {
  CUDALAB_REQUIRE_GPU();
  const auto w = ch01::block_weights({.d = 8, .hidden = 16});
  ch01::Block block(w, 4);
  DeviceBuffer<float> x(8), y(8);
  cudalab::testing::expect_throws_naming(
      [&] { block.forward(ch01::Mode::kGraph, x.data(), y.data(), 1, nullptr); }, "stream");
}
