// Exercise 7.4 — KernelChain::set_data: the instantiated graph runs on the new array, without a
// new capture or instantiation. (Needs 7.3: there is no graph to update before it.)
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "ch07/ch07.hpp"
#include "cudalab/delay.hpp"
#include "cudalab/random.hpp"
#include "cudalab/stream.hpp"
#include "cudalab/testing.hpp"
#include "streams_testing.hpp"

using namespace cudalab;

namespace {
std::vector<float> oracle(const std::vector<float>& x0, int length, int replays) {
  std::vector<float> y(x0.size());
  for (std::size_t i = 0; i < x0.size(); ++i) y[i] = ch07::chain_oracle(x0[i], length, replays);
  return y;
}
}  // namespace

class KernelChainUpdateGpu : public ::testing::TestWithParam<int> {};

TEST_P(KernelChainUpdateGpu, SetDataRetargetsTheInstantiatedGraph) {
  CUDALAB_REQUIRE_GPU();
  const int length = GetParam();
  const std::size_t n = 3001;
  Rng rng;
  const auto x0 = rng.uniform<float>(n, -2.0f, 2.0f), y0 = rng.uniform<float>(n, -2.0f, 2.0f);
  auto x = ch07_test::uploaded(x0), y = ch07_test::uploaded(y0);
  Stream stream;
  ch07::KernelChain chain(x.data(), n, length);
  chain.launch_graph(stream);  // capture + instantiate (exercise 7.3)
  stream.synchronize();
  ASSERT_EQ(chain.instantiations(), 1) << "exercise 7.3 first: launch_graph must instantiate once";
  const std::string where = " (exercise 7.4, length = " + std::to_string(length) + ")";

  chain.set_data(y.data());
  chain.launch_graph(stream);
  stream.synchronize();
  EXPECT_MATCHES(compare(y.to_host(), oracle(y0, length, 1), {},
                         "y after set_data(y) and one replay" + where));
  EXPECT_MATCHES(compare(x.to_host(), oracle(x0, length, 1), {},
                         "x, which the replay on y must not touch" + where));

  chain.set_data(x.data());
  chain.launch_graph(stream);
  chain.launch_plain(stream);  // plain launches follow set_data too
  stream.synchronize();
  EXPECT_MATCHES(compare(x.to_host(), oracle(x0, length, 3), {},
                         "x after set_data(x), a replay and a plain run" + where));
  EXPECT_MATCHES(compare(y.to_host(), oracle(y0, length, 1), {}, "y, untouched since" + where));
  EXPECT_EQ(chain.instantiations(), 1)
      << "set_data must update the executable graph, not build a new one" << where;
  EXPECT_EQ(chain.graph_kernel_nodes(), static_cast<std::size_t>(length)) << where;
}

INSTANTIATE_TEST_SUITE_P(Lengths, KernelChainUpdateGpu, ::testing::Values(1, 7, 200),
                         [](const auto& p) { return "length_" + std::to_string(p.param); });

// Identity and ordering: retargeted with set_data to a second array of the same size, whose
// contents arrive on the replay's stream behind a 20 ms delay (cudalab/delay.hpp). The replay
// must run on y as it is then, on that stream, and leave x alone.
TEST(KernelChainStreamsGpu, SetDataThenReplayOnAnotherStream) {
  CUDALAB_REQUIRE_GPU();
  const int length = 7;
  const std::size_t n = 4099;
  Rng rng;
  const auto x0 = rng.uniform<float>(n, -2.0f, 2.0f), y_new = rng.uniform<float>(n, -2.0f, 2.0f),
             y0 = rng.uniform<float>(n, -2.0f, 2.0f);
  auto x = ch07_test::uploaded(x0), fresh = ch07_test::uploaded(y_new), y = ch07_test::uploaded(y0);
  Stream a, b;
  ch07::KernelChain chain(x.data(), n, length);
  chain.launch_graph(a);  // captured on a: x0 -> one replay
  a.synchronize();
  chain.set_data(y.data());
  delay_stream(b, kOrderingDelayUs);
  CUDALAB_CHECK(cudaMemcpyAsync(y.data(), fresh.data(), y.bytes(), cudaMemcpyDeviceToDevice, b));
  chain.launch_graph(b);
  CUDALAB_CHECK(cudaDeviceSynchronize());
  EXPECT_MATCHES(compare(y.to_host(), oracle(y_new, length, 1), {},
                         "y after set_data(y), new contents on stream b and a replay on b "
                         "(exercise 7.4)"));
  EXPECT_MATCHES(compare(x.to_host(), oracle(x0, length, 1), {},
                         "x, which the replay on y must not touch (exercise 7.4)"));
  EXPECT_EQ(chain.instantiations(), 1);
}

TEST(KernelChainArgs, RejectsBadArgumentsByName) {
  float* fake = reinterpret_cast<float*>(0x100);
  cudalab::testing::expect_throws_naming([&] { ch07::KernelChain c(fake, 10, 0); }, "length");
  cudalab::testing::expect_throws_naming([&] { ch07::KernelChain c(nullptr, 10, 3); }, "x");
  ch07::KernelChain chain(fake, 10, 3);
  cudalab::testing::expect_throws_naming([&] { chain.set_data(nullptr); }, "x");
  cudalab::testing::expect_throws_naming([&] { chain.launch_graph(nullptr); }, "stream");
  EXPECT_EQ(chain.graph_kernel_nodes(), 0u);
  EXPECT_EQ(chain.instantiations(), 0);
}
