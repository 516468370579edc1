// Exercise 7.3 — KernelChain::launch_graph: the captured chain computes what the plain launches
// compute, replays apply it again, the graph holds one kernel node per link, and it is
// instantiated once.
#include <gtest/gtest.h>

#include <string>
#include <tuple>
#include <vector>

#include "ch07/ch07.hpp"
#include "cudalab/delay.hpp"
#include "cudalab/random.hpp"
#include "cudalab/stream.hpp"
#include "cudalab/testing.hpp"
#include "streams_testing.hpp"

using namespace cudalab;

namespace {
using Case = std::tuple<std::size_t, int>;  // n, length
std::vector<float> oracle(const std::vector<float>& x0, int length, int replays) {
  std::vector<float> y(x0.size());
  for (std::size_t i = 0; i < x0.size(); ++i) y[i] = ch07::chain_oracle(x0[i], length, replays);
  return y;
}
}  // namespace

class KernelChainGraphGpu : public ::testing::TestWithParam<Case> {};

TEST_P(KernelChainGraphGpu, ReplaysMatchTheOracle) {
  CUDALAB_REQUIRE_GPU();
  const auto [n, length] = GetParam();
  Rng rng;
  const auto x0 = rng.uniform<float>(n, -2.0f, 2.0f);
  auto x = ch07_test::uploaded(x0);
  Stream stream;
  ch07::KernelChain chain(x.data(), n, length);
  const std::string where =
      "(exercise 7.3, n = " + std::to_string(n) + ", length = " + std::to_string(length) + ")";
  chain.launch_graph(stream);
  stream.synchronize();
  ASSERT_MATCHES(
      compare(x.to_host(), oracle(x0, length, 1), {},
              "after the first launch_graph, which must run the chain exactly once " + where));
  chain.launch_graph(stream);
  chain.launch_graph(stream);
  stream.synchronize();
  EXPECT_MATCHES(
      compare(x.to_host(), oracle(x0, length, 3), {}, "after three launch_graph calls " + where));
  EXPECT_EQ(chain.graph_kernel_nodes(), static_cast<std::size_t>(length))
      << "the captured graph must hold one kernel node per link of the chain " << where;
  EXPECT_EQ(chain.instantiations(), 1) << "capture and instantiate once, then replay " << where;
}

INSTANTIATE_TEST_SUITE_P(Shapes, KernelChainGraphGpu,
                         ::testing::Values(Case{1, 1}, Case{1000, 1}, Case{1000, 10},
                                           Case{257, 100}, Case{70001, 37}, Case{4096, 1000}),
                         [](const auto& p) {
                           return "n_" + std::to_string(std::get<0>(p.param)) + "_length_" +
                                  std::to_string(std::get<1>(p.param));
                         });

class KernelChainMixGpu : public ::testing::Test {};

TEST_F(KernelChainMixGpu, GraphAndPlainLaunchesInterleaveInStreamOrder) {
  CUDALAB_REQUIRE_GPU();
  const std::size_t n = 5000;
  Rng rng;
  const auto x0 = rng.uniform<float>(n, -2.0f, 2.0f);
  auto x = ch07_test::uploaded(x0);
  Stream stream;
  ch07::KernelChain chain(x.data(), n, 12);
  chain.launch_plain(stream);
  chain.launch_graph(stream);
  chain.launch_plain(stream);
  chain.launch_graph(stream);
  stream.synchronize();
  EXPECT_MATCHES(compare(
      x.to_host(), oracle(x0, 12, 4), {},
      "plain, graph, plain, graph (exercise 7.3: capturing must not run or skip anything)"));
  // The stream is usable after the capture (a capture left open refuses ordinary work).
  cudaStreamCaptureStatus status{};
  ASSERT_EQ(cudaStreamIsCapturing(stream, &status), cudaSuccess);
  EXPECT_EQ(status, cudaStreamCaptureStatusNone);
}

// Identity and ordering: the graph is instantiated once, on the stream of the first call; a
// replay on another stream must run there, after what the caller enqueued on it. The new contents
// of x arrive on stream b behind a 20 ms delay (cudalab/delay.hpp): a replay on any other stream
// (the capture's, the legacy one) runs on the old contents, every time.
TEST(KernelChainStreamsGpu, ReplayOnAnotherStreamFollowsThatStream) {
  CUDALAB_REQUIRE_GPU();
  const int length = 7;
  const std::size_t n = 4099;
  Rng rng;
  const auto x_old = rng.uniform<float>(n, -2.0f, 2.0f), x_new = rng.uniform<float>(n, -2.0f, 2.0f);
  auto x = ch07_test::uploaded(x_old), fresh = ch07_test::uploaded(x_new);
  Stream a, b;
  ch07::KernelChain chain(x.data(), n, length);
  chain.launch_graph(a);  // captured on a
  a.synchronize();
  delay_stream(b, kOrderingDelayUs);
  CUDALAB_CHECK(cudaMemcpyAsync(x.data(), fresh.data(), x.bytes(), cudaMemcpyDeviceToDevice, b));
  chain.launch_graph(b);
  CUDALAB_CHECK(cudaDeviceSynchronize());
  EXPECT_MATCHES(compare(x.to_host(), oracle(x_new, length, 1), {},
                         "x after new contents on stream b (behind a delay) and a replay on b "
                         "(exercise 7.3: the replay must run on the caller's stream)"));
  EXPECT_EQ(chain.instantiations(), 1);
}
