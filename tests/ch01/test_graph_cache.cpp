// Exercise 1.2 — the graph path: equals the oracle, replays without capturing again, one graph per
// (batch, x, y), the legacy stream refused.
#include <gtest/gtest.h>

#include <cstddef>
#include <span>
#include <string>

#include "block_testing.hpp"
#include "cudalab/delay.hpp"

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

// Identity: a cached graph has its pointers baked in, so the cache key must hold everything the
// graph depends on. Same batch, other buffers and other contents: each call must compute from the
// x it is given into the y it is given (a key without x replays the old input; a key without y
// writes the old output), and leave every other buffer alone.
TEST(GraphForwardIdentityGpu, SameBatchOtherBuffersAndContents) {
  CUDALAB_REQUIRE_GPU();
  const auto w = ch01::block_weights();
  ch01::Block block(w, 32);
  Stream s;
  const int batch = 9;
  const std::size_t rows = static_cast<std::size_t>(batch) * w.shape.d;
  const auto x1 = ch01::make_input(w.shape, batch, 101), x2 = ch01::make_input(w.shape, batch, 202);
  const auto want1 = ch01::block_forward_cpu(w, x1, batch),
             want2 = ch01::block_forward_cpu(w, x2, batch);
  auto dx1 = to_device(x1), dx2 = to_device(x2);
  cudalab::testing::GuardedOutput<float> y1(rows), y2(rows);
  const std::string what = "graph forward (exercise 1.2, batch 9)";

  block.forward(ch01::Mode::kGraph, dx1.data(), y1.data(), batch, s);  // (x1, y1)
  block.forward(ch01::Mode::kGraph, dx2.data(), y2.data(), batch, s);  // (x2, y2): other input
  s.synchronize();
  EXPECT_MATCHES(compare(y1.result(), want1, ch01_test::kTol, what + ", x1 -> y1"));
  EXPECT_MATCHES(compare(y2.result(), want2, ch01_test::kTol,
                         what + ", x2 -> y2 after x1 -> y1 (a graph keyed without x or y?)"));

  // (x2, y1): an input and an output seen before, never together.
  block.forward(ch01::Mode::kGraph, dx2.data(), y1.data(), batch, s);
  s.synchronize();
  EXPECT_MATCHES(compare(y1.result(), want2, ch01_test::kTol, what + ", x2 -> y1"));
  EXPECT_TRUE(y1.guard_intact());
  // New contents in x1, same pointer: a replay reads the buffer as it is now.
  CUDALAB_CHECK(cudaMemcpy(dx1.data(), dx2.data(), dx1.bytes(), cudaMemcpyDeviceToDevice));
  poison_device(y2.data(), rows * sizeof(float));
  CUDALAB_CHECK(cudaDeviceSynchronize());  // the poison (legacy stream) lands before s runs
  block.forward(ch01::Mode::kGraph, dx1.data(), y2.data(), batch, s);
  s.synchronize();
  EXPECT_MATCHES(compare(y2.result(), want2, ch01_test::kTol,
                         what + ", x1 (now holding x2) -> y2: a replay must read x1 again"));
  EXPECT_TRUE(y2.guard_intact());
  EXPECT_EQ(block.graphs_cached(), 4u) << "one graph per (batch, x, y)";
}

// Ordering: a cached graph replayed on another stream must run on that stream, after what the
// caller enqueued there. The input is produced on stream b behind a 20 ms delay
// (cudalab/delay.hpp); a graph launched anywhere but on b (the stream of the first capture, the
// legacy stream) runs before the input is there and computes from stale data.
TEST(GraphForwardIdentityGpu, ReplayOnAnotherStreamWaitsForThatStream) {
  CUDALAB_REQUIRE_GPU();
  const auto w = ch01::block_weights();
  ch01::Block block(w, 32);
  Stream a, b;
  const int batch = 5;
  const std::size_t rows = static_cast<std::size_t>(batch) * w.shape.d;
  const auto x_old = ch01::make_input(w.shape, batch, 7),
             x_new = ch01::make_input(w.shape, batch, 8);
  auto dx = to_device(x_old), dx_new = to_device(x_new);
  DeviceBuffer<float> y(rows);
  block.forward(ch01::Mode::kGraph, dx.data(), y.data(), batch, a);  // captured on a
  a.synchronize();
  poison_device(y.data(), y.bytes());
  CUDALAB_CHECK(cudaDeviceSynchronize());
  delay_stream(b, kOrderingDelayUs);
  CUDALAB_CHECK(cudaMemcpyAsync(dx.data(), dx_new.data(), dx.bytes(), cudaMemcpyDeviceToDevice, b));
  block.forward(ch01::Mode::kGraph, dx.data(), y.data(), batch, b);  // a hit, replayed on b
  b.synchronize();
  CUDALAB_CHECK(cudaDeviceSynchronize());
  EXPECT_EQ(block.instantiations(), 1);
  EXPECT_MATCHES(compare(y.to_host(), ch01::block_forward_cpu(w, x_new, batch), ch01_test::kTol,
                         "graph replay on another stream (exercise 1.2, batch 5): must run on "
                         "the caller's stream, after the input it produced there"));
}
