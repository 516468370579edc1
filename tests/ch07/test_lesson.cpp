// Chapter 7's lesson pieces that are not exercises (reference track only): the overlap model, the
// oracles, the gate, priorities, the allocation loop, the MLP and the serving pipeline.
#include <gtest/gtest.h>

#include <chrono>
#include <cmath>
#include <cstdint>
#include <limits>
#include <string>
#include <vector>

#include "ch07/ch07.hpp"
#include "cudalab/random.hpp"
#include "cudalab/testing.hpp"
#include "streams_testing.hpp"

using namespace cudalab;
using namespace std::chrono_literals;

// ---- the overlap model (CPU)

TEST(OverlapModel, BalancedStagesTendToTheNumberOfStages) {
  const std::vector<double> s{1.0, 1.0, 1.0};
  EXPECT_DOUBLE_EQ(ch07::overlap_speedup_model(s, 1), 1.0);
  EXPECT_DOUBLE_EQ(ch07::overlap_speedup_model(s, 2), 1.5);  // 3 / (1.5 + 0.5)
  EXPECT_DOUBLE_EQ(ch07::overlap_speedup_model(s, 8), 2.4);  // 24 / 10
  EXPECT_NEAR(ch07::overlap_speedup_model(s, 1000000), 3.0, 1e-5);
  EXPECT_DOUBLE_EQ(ch07::pipelined_time_model(s, 4), 1.5);  // (3 + 3) / 4
}

TEST(OverlapModel, TheLargestStageBoundsTheSpeedup) {
  const std::vector<double> s{2.0, 8.0, 2.0};  // kernel-bound: at most 12 / 8 = 1.5
  EXPECT_DOUBLE_EQ(ch07::pipelined_time_model(s, 4), (12.0 + 3 * 8.0) / 4);
  EXPECT_LT(ch07::overlap_speedup_model(s, 64), 1.5);
  EXPECT_NEAR(ch07::overlap_speedup_model(s, 10000000), 1.5, 1e-6);
  for (int c = 1; c < 100; ++c)  // more chunks never hurt in the model (no per-chunk overhead)
    EXPECT_LE(ch07::overlap_speedup_model(s, c), ch07::overlap_speedup_model(s, c + 1));
  const std::vector<double> one{5.0};  // one stage: nothing to overlap
  EXPECT_DOUBLE_EQ(ch07::overlap_speedup_model(one, 16), 1.0);
  const std::vector<double> with_zero{1.0, 0.0, 1.0};
  EXPECT_DOUBLE_EQ(ch07::overlap_speedup_model(with_zero, 2), 2.0 / 1.5);
}

TEST(OverlapModel, RejectsBadArgumentsByName) {
  const std::vector<double> ok{1.0, 2.0}, none, negative{1.0, -1.0}, zeros{0.0, 0.0},
      nan{1.0, std::numeric_limits<double>::quiet_NaN()};
  cudalab::testing::expect_throws_naming([&] { ch07::overlap_speedup_model(ok, 0); }, "chunks");
  cudalab::testing::expect_throws_naming([&] { ch07::overlap_speedup_model(none, 2); }, "stage_ms");
  cudalab::testing::expect_throws_naming([&] { ch07::overlap_speedup_model(negative, 2); },
                                         "stage_ms");
  cudalab::testing::expect_throws_naming([&] { ch07::overlap_speedup_model(zeros, 2); },
                                         "stage_ms");
  cudalab::testing::expect_throws_naming([&] { ch07::pipelined_time_model(nan, 2); }, "stage_ms");
}

// ---- oracles and the MLP on the CPU

TEST(Oracles, ProcessAndChainAreFusedMultiplyAdds) {
  EXPECT_EQ(ch07::process_oracle(1.5f, 0), 1.5f);
  EXPECT_EQ(ch07::process_oracle(1.5f, 2),
            std::fma(std::fma(1.5f, ch07::kScale, ch07::kShift), ch07::kScale, ch07::kShift));
  EXPECT_EQ(ch07::chain_oracle(0.25f, 3, 2), ch07::chain_oracle(ch07::chain_oracle(0.25f, 3), 3));
  EXPECT_EQ(ch07::chain_scale(3), 1.0f);
  EXPECT_EQ(ch07::chain_shift(0), -2.0f / 256.0f);
}

TEST(MlpCpu, WeightsAndInputsAreDeterministicAndScaled) {
  const auto w = ch07::mlp_weights();
  const auto again = ch07::mlp_weights();
  EXPECT_EQ(w.w1, again.w1);
  EXPECT_EQ(w.w3, again.w3);
  EXPECT_NE(ch07::mlp_weights({}, 8).w1, w.w1);
  EXPECT_EQ(w.w1.size(), 512u * 256u);
  EXPECT_EQ(w.b3.size(), 10u);
  for (float v : w.w1) ASSERT_LE(std::abs(v), 1.0f / 16.0f);  // 1 / sqrt(256)
  const auto x = ch07::make_batch(w.shape, 4, 3);
  EXPECT_EQ(x, ch07::make_batch(w.shape, 4, 3));
  EXPECT_NE(x, ch07::make_batch(w.shape, 4, 2));
  const auto logits = ch07::mlp_forward_cpu(w, x, 4);
  ASSERT_EQ(logits.size(), 40u);
  double spread = 0;
  for (float v : logits) spread += std::abs(v);
  EXPECT_GT(spread, 0.1)
      << "the logits should not all be (near) zero: the weights are scaled 1/sqrt(fan_in)";
}

TEST(MlpCpu, RejectsBadArgumentsByName) {
  const auto w = ch07::mlp_weights({.in = 8, .hidden = 4, .classes = 3});
  cudalab::testing::expect_throws_naming([&] { ch07::mlp_weights({.in = 0}); }, "shape.in");
  cudalab::testing::expect_throws_naming(
      [&] { ch07::mlp_forward_cpu(w, std::vector<float>(7), 1); }, "x");
  cudalab::testing::expect_throws_naming([&] { ch07::make_batch(w.shape, -1, 0); }, "batch");
}

TEST(ServeResult, PercentilesAreNearestRank) {
  ch07::ServeResult r;
  for (int i = 1; i <= 100; ++i) r.latency_us.push_back(101 - i);
  r.batch = 4;
  r.seconds = 0.5;
  EXPECT_EQ(r.percentile_us(50), 50);
  EXPECT_EQ(r.percentile_us(99), 99);
  EXPECT_EQ(r.percentile_us(100), 100);
  EXPECT_EQ(r.percentile_us(0), 1);
  EXPECT_DOUBLE_EQ(r.samples_per_second(), 800.0);
  cudalab::testing::expect_throws_naming([&] { r.percentile_us(101); }, "p");
  cudalab::testing::expect_throws_naming([&] { ch07::ServeResult{}.percentile_us(50); },
                                         "latency_us");
}

TEST(ServeArgs, RejectsBadOptionsByName) {
  const auto w = ch07::mlp_weights({.in = 8, .hidden = 4, .classes = 3});
  cudalab::testing::expect_throws_naming([&] { ch07::serve(w, {.batch = 0}); }, "options.batch");
  cudalab::testing::expect_throws_naming([&] { ch07::serve(w, {.batches = -1}); },
                                         "options.batches");
  cudalab::testing::expect_throws_naming([&] { ch07::serve(w, {.slots = 0}); }, "options.slots");
  EXPECT_TRUE(ch07::serve(w, {.batches = 0}).latency_us.empty());
}

TEST(MlpArgs, RejectsImpossibleBatchesByName) {
  const auto w = ch07::mlp_weights({.in = 8, .hidden = 4, .classes = 3});
  cudalab::testing::expect_throws_naming([&] { ch07::Mlp m(w, 0); }, "max_batch");
  cudalab::testing::expect_throws_naming([&] { ch07::Mlp m(w, 65535 * 16 + 1); }, "max_batch");
  auto bad = w;
  bad.b1.pop_back();
  cudalab::testing::expect_throws_naming([&] { ch07::Mlp m(bad, 4); }, "w");
}

TEST(AllocLoopArgs, RejectsNegativeIterations) {
  cudalab::testing::expect_throws_naming(
      [] { ch07::alloc_loop(ch07::AllocMode::kMalloc, 16, -1, nullptr); }, "iterations");
}

// ---- on the GPU

class LessonGpu : public ::testing::Test {};

TEST_F(LessonGpu, ProcessAndSerialPipelineMatchTheOracle) {
  CUDALAB_REQUIRE_GPU();
  for (std::size_t n : {std::size_t{1}, std::size_t{1000}, (std::size_t{1} << 20) + 7}) {
    Rng rng;
    ch07::OverlapBuffers b(n);
    rng.fill_uniform<float>(b.host_in.span(), -3.0f, 3.0f);
    Stream s;
    ch07::run_serial(b, 9, s);
    s.synchronize();
    for (std::size_t i = 0; i < n; ++i)
      ASSERT_EQ(b.host_out.data()[i], ch07::process_oracle(b.host_in.data()[i], 9))
          << "i = " << i << ", n = " << n;
  }
}

TEST_F(LessonGpu, GateHoldsAStreamUntilOpened) {
  CUDALAB_REQUIRE_GPU();
  CH07_SKIP_IN_SYNC_BUILD();
  Stream s;
  ch07::Gate gate;
  gate.hold(s, 8.0);
  ch07::spin(1000, 1, s);
  EXPECT_FALSE(ch07_test::becomes_idle(s, 50ms));
  EXPECT_FALSE(gate.released());
  gate.open();
  s.synchronize();
  EXPECT_TRUE(gate.released());
  EXPECT_FALSE(gate.timed_out());
}

TEST_F(LessonGpu, GateTimesOutWhenNeverOpened) {
  CUDALAB_REQUIRE_GPU();
  Stream s;
  ch07::Gate gate;
  gate.hold(s, 0.05);
  s.synchronize();
  EXPECT_TRUE(gate.timed_out());
}

TEST_F(LessonGpu, PrioritiesAndAllocationLoopsRun) {
  CUDALAB_REQUIRE_GPU();
  const auto r = ch07::priority_range();
  EXPECT_LE(r.greatest, r.least) << "a lower number is a higher priority";
  Stream high(cudaStreamNonBlocking, r.greatest), low(cudaStreamNonBlocking, r.least);
  ch07::spin(10000, 4, low);
  ch07::spin(1000, 1, high);
  for (auto mode : {ch07::AllocMode::kMalloc, ch07::AllocMode::kMallocAsync}) {
    ch07::alloc_loop(mode, 1 << 20, 5, low);
    ch07::alloc_loop(mode, 3, 2, low);  // less than one float: allocates, launches nothing
  }
  high.synchronize();
  low.synchronize();
}

TEST_F(LessonGpu, PlainChainMatchesTheOracle) {
  CUDALAB_REQUIRE_GPU();
  Rng rng;
  const auto x0 = rng.uniform<float>(777, -2.0f, 2.0f);
  auto x = ch07_test::uploaded(x0);
  Stream s;
  ch07::KernelChain chain(x.data(), x0.size(), 25);
  chain.launch_plain(s);
  s.synchronize();
  std::vector<float> want(x0.size());
  for (std::size_t i = 0; i < want.size(); ++i) want[i] = ch07::chain_oracle(x0[i], 25);
  EXPECT_MATCHES(compare(x.to_host(), want, {}, "launch_plain"));
}

TEST_F(LessonGpu, MlpForwardMatchesTheCpu) {
  CUDALAB_REQUIRE_GPU();
  for (ch07::MlpShape shape :
       {ch07::MlpShape{}, ch07::MlpShape{.in = 33, .hidden = 17, .classes = 5}}) {
    const auto w = ch07::mlp_weights(shape);
    ch07::Mlp mlp(w, 70);
    for (int batch : {1, 3, 16, 17, 70}) {
      const auto x = ch07::make_batch(shape, batch, static_cast<std::uint64_t>(batch));
      auto dx = ch07_test::uploaded(x);
      DeviceBuffer<float> logits(static_cast<std::size_t>(batch) * shape.classes);
      Stream s;
      mlp.forward(dx.data(), logits.data(), batch, s);
      s.synchronize();
      EXPECT_MATCHES(compare(
          logits.to_host(), ch07::mlp_forward_cpu(w, x, batch), {.abs = 1e-4, .rel = 1e-4},
          "Mlp::forward, batch " + std::to_string(batch) + ", in " + std::to_string(shape.in)));
    }
    cudalab::testing::expect_throws_naming([&] { mlp.forward(nullptr, nullptr, 71, nullptr); },
                                           "batch");
  }
}

class ServeGpu : public ::testing::TestWithParam<bool> {};

TEST_P(ServeGpu, EveryBatchIsServedCorrectly) {
  CUDALAB_REQUIRE_GPU();
  const auto w = ch07::mlp_weights();
  ch07::ServeOptions o{
      .batch = 5, .batches = 23, .slots = 3, .graph = GetParam(), .keep_logits = true};
  const auto r = ch07::serve(w, o);
  ASSERT_EQ(r.latency_us.size(), 23u);
  EXPECT_EQ(r.streams_used, 3);
  for (double l : r.latency_us) EXPECT_GT(l, 0.0);
  EXPECT_GT(r.samples_per_second(), 0.0);
  const std::size_t per = 5 * 10;
  for (int i = 0; i < o.batches; ++i) {
    const auto want = ch07::mlp_forward_cpu(
        w, ch07::make_batch(w.shape, 5, static_cast<std::uint64_t>(i % ch07::kDistinctBatches)), 5);
    const std::vector<float> got(r.logits.begin() + static_cast<std::ptrdiff_t>(per * i),
                                 r.logits.begin() + static_cast<std::ptrdiff_t>(per * (i + 1)));
    EXPECT_MATCHES(compare(got, want, {.abs = 1e-4, .rel = 1e-4},
                           "serve: logits of batch " + std::to_string(i)));
  }
}

INSTANTIATE_TEST_SUITE_P(Modes, ServeGpu, ::testing::Values(false, true), [](const auto& p) {
  return p.param ? std::string("graph") : std::string("streams");
});
