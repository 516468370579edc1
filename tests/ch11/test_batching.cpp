// Exercise 11.5 — continuous batching against static batching, simulated on the CPU with the
// kernel-cost model (host.hpp), on the skewed trace with a fixed seed.
#include <gtest/gtest.h>

#include <cstdio>
#include <string>
#include <vector>

#include "ch11/host.hpp"
#include "cudalab/testing.hpp"

using namespace cudalab;
using namespace cudalab::ch11;

namespace {
// Every request done, in order: arrival <= first token <= finish; nothing else to check by hand.
void expect_complete(const SimResult& r, const std::vector<Request>& trace,
                     const SchedulerConfig& c) {
  ASSERT_EQ(r.first_token_ms.size(), trace.size());
  long tokens = 0;
  for (std::size_t i = 0; i < trace.size(); ++i) {
    EXPECT_GT(r.first_token_ms[i], trace[i].arrival_ms) << "request " << i;
    EXPECT_GE(r.finish_ms[i], r.first_token_ms[i]) << "request " << i;
    tokens += trace[i].output_tokens;
  }
  EXPECT_EQ(r.output_tokens, tokens);
  EXPECT_LE(r.max_running, c.max_batch);
  EXPECT_GT(r.throughput_tok_s, 0);
}
void print(const char* name, const SimResult& r) {
  std::printf(
      "%-11s %9.0f tok/s  TTFT p50 %8.1f ms p99 %8.1f ms  TPOT p50 %6.2f ms p99 %6.2f ms  "
      "preemptions %d  iterations %d  max batch %d\n",
      name, r.throughput_tok_s, r.ttft_p50_ms, r.ttft_p99_ms, r.tpot_p50_ms, r.tpot_p99_ms,
      r.preemptions, r.iterations, r.max_running);
}
}  // namespace

TEST(Trace, SkewedAndReproducible) {
  const auto a = skewed_trace(2000, 42, 20.0), b = skewed_trace(2000, 42, 20.0),
             c = skewed_trace(2000, 43, 20.0);
  ASSERT_EQ(a.size(), 2000u);
  int long_outputs = 0;
  for (std::size_t i = 0; i < a.size(); ++i) {
    EXPECT_EQ(a[i].prompt_tokens, b[i].prompt_tokens);
    EXPECT_EQ(a[i].output_tokens, b[i].output_tokens);
    EXPECT_EQ(a[i].arrival_ms, b[i].arrival_ms);
    EXPECT_GE(a[i].prompt_tokens, 16);
    EXPECT_LE(a[i].prompt_tokens, 4096);
    EXPECT_GE(a[i].output_tokens, 1);
    if (i) {
      EXPECT_GE(a[i].arrival_ms, a[i - 1].arrival_ms);
    }
    long_outputs += a[i].output_tokens >= 512;
  }
  EXPECT_NEAR(long_outputs / 2000.0, 0.2, 0.04);         // 20% long, binomial spread ~0.009
  EXPECT_NEAR(a.back().arrival_ms / 2000.0, 50.0, 5.0);  // mean gap 1 / 20 s
  int same = 0;
  for (std::size_t i = 0; i < a.size(); ++i) same += a[i].prompt_tokens == c[i].prompt_tokens;
  EXPECT_LT(same, 200);
}

TEST(CostModel, MemoryBoundThenComputeBound) {
  const CostModel m;
  // 16.06e9 bytes of weights at 4.2e12 B/s: 3.824 ms however few tokens.
  EXPECT_NEAR(m.iteration_ms(1, 0), 3.8238, 1e-3);
  EXPECT_DOUBLE_EQ(m.iteration_ms(100, 0), m.iteration_ms(1, 0));
  // Compute-bound past 600e12 / 4.2e12 * 16.06e9 / 16.06e9 = 142.9 tokens.
  EXPECT_GT(m.iteration_ms(200, 0), m.iteration_ms(142, 0));
  // 1e6 cached tokens of 128 KiB at 0.8 * 4.2e12 B/s: 39.0 ms of attention.
  EXPECT_NEAR(m.iteration_ms(1, 1'000'000) - m.iteration_ms(1, 0), 39.01, 0.01);
}

TEST(Batching, ContinuousBeatsStaticTwiceOnTheSkewedTrace) {
  const auto trace = skewed_trace(1000, 2024, 40.0);  // more than the GPU can serve: a queue forms
  const SchedulerConfig c;                            // 64 slots, 4096 blocks of 16 = 65536 tokens
  const CostModel m;
  const SimResult st = simulate_static(trace, c, m);
  const SimResult co = simulate_continuous(trace, c, m);
  print("static", st);
  print("continuous", co);
  expect_complete(st, trace, c);
  expect_complete(co, trace, c);
  RecordProperty("continuous_over_static_throughput",
                 std::to_string(co.throughput_tok_s / st.throughput_tok_s));
  EXPECT_GE(co.throughput_tok_s, 2.0 * st.throughput_tok_s)
      << "the issue's goal: >= 2x static throughput";
  EXPECT_LT(co.ttft_p50_ms, st.ttft_p50_ms);
}

TEST(Batching, PreemptsWhenTheCacheIsFullAndStillFinishesEverything) {
  std::vector<Request> trace;
  for (int i = 0; i < 24; ++i) trace.push_back({i, 0.0, 100, 300});
  SchedulerConfig c;
  c.max_batch = 24;
  c.kv_blocks = 100;  // 1600 tokens: 14 prompts fit, but not their growth
  c.block_size = 16;
  const SimResult r = simulate_continuous(trace, c, CostModel{});
  expect_complete(r, trace, c);
  EXPECT_GT(r.preemptions, 0);
}

TEST(Batching, OneRequestAndEmptyTrace) {
  const std::vector<Request> one{{0, 5.0, 10, 3}};
  const SchedulerConfig c;
  const CostModel m;
  const SimResult r = simulate_continuous(one, c, m);
  expect_complete(r, one, c);
  EXPECT_EQ(r.iterations, 3);  // prefill (token 1) and two decode steps
  EXPECT_DOUBLE_EQ(r.first_token_ms[0],
                   5.0 + m.iteration_ms(10, 10));  // attention reads the prompt
  const SimResult s = simulate_static(one, c, m);
  EXPECT_DOUBLE_EQ(s.finish_ms[0], r.finish_ms[0]);  // alone, both policies are the same
  EXPECT_EQ(simulate_continuous({}, c, m).output_tokens, 0);
  EXPECT_EQ(simulate_static({}, c, m).makespan_ms, 0);
}

TEST(Batching, ArgumentsAreNamed) {
  SchedulerConfig c;
  c.kv_blocks = 4;
  const std::vector<Request> big{{0, 0.0, 60, 10}};  // 70 tokens > 64
  cudalab::testing::expect_throws_naming([&] { simulate_continuous(big, c, CostModel{}); },
                                         "trace");
  cudalab::testing::expect_throws_naming([&] { simulate_static(big, c, CostModel{}); }, "trace");
  c.max_batch = 0;
  cudalab::testing::expect_throws_naming([&] { simulate_continuous({}, c, CostModel{}); },
                                         "config");
  const std::vector<Request> unsorted{{0, 5.0, 1, 1}, {1, 1.0, 1, 1}};
  cudalab::testing::expect_throws_naming(
      [&] { simulate_continuous(unsorted, SchedulerConfig{}, CostModel{}); }, "trace");
  cudalab::testing::expect_throws_naming([] { skewed_trace(3, 1, 0.0); }, "rate_per_s");
}
