// Exercise 7.2 — fork_join: the side streams wait for main (fork), main waits for both (join), and
// the host never waits. Each dependency is checked by holding one stream with a Gate and verifying
// that what must wait has not finished (a bounded poll fails fast; the result check backs it up).
#include <gtest/gtest.h>

#include <chrono>
#include <cmath>
#include <string>
#include <vector>

#include "ch07/ch07.hpp"
#include "cudalab/random.hpp"
#include "cudalab/testing.hpp"
#include "streams_testing.hpp"

using namespace cudalab;
using namespace std::chrono_literals;
using ch07_test::becomes_idle;
using ch07_test::Streams;

namespace {

constexpr std::size_t kWarmN = 1000;

struct Arrays {
  std::size_t n;
  std::vector<float> x_host;
  DeviceBuffer<float> x_src, x, a, b, out;
  Arrays(std::size_t n_, Rng& rng)
      : n(n_),
        x_host(rng.uniform<float>(n_, -3.0f, 3.0f)),
        x_src(to_device(x_host)),
        x(n_),
        a(n_),
        b(n_),
        out(n_) {
    for (auto* buf : {&x, &a, &b, &out}) poison_device(buf->data(), buf->bytes());
    CUDALAB_CHECK(cudaDeviceSynchronize());
  }
  // x = x_src, enqueued on `stream` (x is "produced on main").
  void produce_x(cudaStream_t stream) {
    CUDALAB_CHECK(cudaMemcpyAsync(x.data(), x_src.data(), n * sizeof(float),
                                  cudaMemcpyDeviceToDevice, stream));
  }
  ::testing::AssertionResult check(const char* what) const {
    std::vector<float> want_a(n), want_b(n), want_out(n);
    for (std::size_t i = 0; i < n; ++i) {
      want_a[i] = x_host[i] * x_host[i];
      want_b[i] = std::fma(2.0f, x_host[i], 1.0f);
      want_out[i] = want_a[i] + want_b[i];
    }
    for (auto [got, want, name] : {std::tuple{&a, &want_a, "a"}, std::tuple{&b, &want_b, "b"},
                                   std::tuple{&out, &want_out, "out"}}) {
      const auto r = compare(got->to_host(), *want, {},
                             std::string("fork_join ") + name + " (exercise 7.2, " + what +
                                 ", n = " + std::to_string(n) + ")");
      if (!r.ok()) return ::testing::AssertionFailure() << r.message;
    }
    return ::testing::AssertionSuccess();
  }
};

// produce_x and fork_join once on other arrays, nothing held (ch07_test::warm_up says why).
void warm_up_fork_join(Streams& s, Rng& rng) {
  Arrays w(kWarmN, rng);
  ch07_test::warm_up([&] {
    w.produce_x(s.raw[0]);
    ch07::fork_join(w.x.data(), w.a.data(), w.b.data(), w.out.data(), w.n, s.raw[0], s.raw[1],
                    s.raw[2]);
  });
}

}  // namespace

class ForkJoinGpu : public ::testing::TestWithParam<std::size_t> {};

TEST_P(ForkJoinGpu, MatchesOracle) {
  CUDALAB_REQUIRE_GPU();
  Rng rng;
  Arrays v(GetParam(), rng);
  Streams s(3);
  v.produce_x(s.raw[0]);
  ch07::fork_join(v.x.data(), v.a.data(), v.b.data(), v.out.data(), v.n, s.raw[0], s.raw[1],
                  s.raw[2]);
  s.owned[0].synchronize();  // the join: main's completion implies the side streams'
  EXPECT_TRUE(v.check("after synchronizing main only"));
}

INSTANTIATE_TEST_SUITE_P(Sizes, ForkJoinGpu, ::testing::Values(1, 255, 257, 10000, (1u << 20) + 1),
                         [](const auto& p) { return "n_" + std::to_string(p.param); });

class ForkJoinOrderGpu : public ::testing::Test {};

TEST_F(ForkJoinOrderGpu, SideStreamsWaitForMain) {
  CUDALAB_REQUIRE_GPU();
  CH07_SKIP_IN_SYNC_BUILD();
  Rng rng;
  Arrays v(50000, rng);
  Streams s(3);
  warm_up_fork_join(s, rng);
  ch07::Gate gate;
  gate.hold(s.raw[0], 8.0);
  v.produce_x(s.raw[0]);  // x exists only after the gate opens
  ch07::fork_join(v.x.data(), v.a.data(), v.b.data(), v.out.data(), v.n, s.raw[0], s.raw[1],
                  s.raw[2]);
  EXPECT_FALSE(gate.released()) << "fork_join waited on the host while main was held";
  for (int k = 1; k <= 2; ++k)
    EXPECT_FALSE(becomes_idle(s.raw[k], 100ms))
        << "side" << k - 1 << " finished while main was held: its kernel did not wait for x "
        << "(wait on an event recorded in main before launching)";
  gate.open();
  s.owned[0].synchronize();
  EXPECT_FALSE(gate.timed_out());
  EXPECT_TRUE(v.check("main held, then released"));
}

class ForkJoinJoinGpu : public ::testing::TestWithParam<int> {};

TEST_P(ForkJoinJoinGpu, MainWaitsForTheSideStream) {
  CUDALAB_REQUIRE_GPU();
  CH07_SKIP_IN_SYNC_BUILD();
  const int side = GetParam();
  Rng rng;
  Arrays v(50000, rng);
  Streams s(3);
  warm_up_fork_join(s, rng);
  v.produce_x(s.raw[0]);
  s.owned[0].synchronize();
  ch07::Gate gate;
  gate.hold(s.raw[1 + side], 8.0);
  ch07::fork_join(v.x.data(), v.a.data(), v.b.data(), v.out.data(), v.n, s.raw[0], s.raw[1],
                  s.raw[2]);
  EXPECT_FALSE(gate.released()) << "fork_join waited on the host while side" << side << " was held";
  EXPECT_FALSE(becomes_idle(s.raw[0], 100ms))
      << "main finished while side" << side << " was held: out = a + b did not wait for side"
      << side << " (join: main must wait on an event recorded in side" << side
      << " after its kernel)";
  gate.open();
  s.owned[0].synchronize();  // only main: the join must carry the side streams' completion
  EXPECT_FALSE(gate.timed_out());
  EXPECT_TRUE(v.check("a side stream held, then released"));
  s.synchronize();
}

INSTANTIATE_TEST_SUITE_P(Sides, ForkJoinJoinGpu, ::testing::Values(0, 1),
                         [](const auto& p) { return "side" + std::to_string(p.param); });

TEST(ForkJoinArgs, RejectsBadArgumentsByName) {
  auto s1 = reinterpret_cast<cudaStream_t>(0x1), s2 = reinterpret_cast<cudaStream_t>(0x2),
       s3 = reinterpret_cast<cudaStream_t>(0x3);
  float* p = nullptr;
  cudalab::testing::expect_throws_naming([&] { ch07::fork_join(p, p, p, p, 0, nullptr, s2, s3); },
                                         "main");
  cudalab::testing::expect_throws_naming([&] { ch07::fork_join(p, p, p, p, 0, s1, nullptr, s3); },
                                         "side0");
  cudalab::testing::expect_throws_naming([&] { ch07::fork_join(p, p, p, p, 0, s1, s2, nullptr); },
                                         "side1");
  cudalab::testing::expect_throws_naming([&] { ch07::fork_join(p, p, p, p, 0, s1, s1, s3); },
                                         "side0");
  cudalab::testing::expect_throws_naming([&] { ch07::fork_join(p, p, p, p, 10, s1, s2, s3); }, "x");
}
