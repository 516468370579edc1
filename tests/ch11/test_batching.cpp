// Exercise 11.5 — continuous batching against static batching, simulated on the CPU with the
// kernel-cost model (batching.hpp), on the skewed trace with a fixed seed.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <deque>
#include <limits>
#include <string>
#include <vector>

#include "ch11/batching.hpp"
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

// The numbers the simulation gave before the schedulers became objects (the loops of
// simulate_static and simulate_continuous moved into StaticScheduler / ContinuousScheduler; the
// results must not move with them).
TEST(Batching, SimulationResultsArePinned) {
  const auto trace = skewed_trace(1000, 2024, 40.0);
  const SimResult st = simulate_static(trace, SchedulerConfig{}, CostModel{});
  const SimResult co = simulate_continuous(trace, SchedulerConfig{}, CostModel{});
  EXPECT_EQ(st.iterations, 30935);
  EXPECT_EQ(st.max_running, 64);
  EXPECT_NEAR(st.makespan_ms, 227294.882877676, 1e-6);
  EXPECT_EQ(co.iterations, 6679);
  EXPECT_EQ(co.preemptions, 61);
  EXPECT_NEAR(co.makespan_ms, 46691.2126521905, 1e-6);
  std::vector<Request> flat;
  for (int i = 0; i < 24; ++i) flat.push_back({i, 0.0, 100, 300});
  SchedulerConfig c;
  c.max_batch = 24;
  c.kv_blocks = 100;
  const SimResult pre = simulate_continuous(flat, c, CostModel{});
  EXPECT_EQ(pre.iterations, 1348);
  EXPECT_EQ(pre.preemptions, 33);
}

namespace {
std::vector<std::size_t> ids(std::initializer_list<std::size_t> l) {
  return l;
}
}  // namespace

TEST(Scheduler, ContinuousAdmitsFirstComeFirstServedWithinSlotsAndBudget) {
  // Five requests at t = 0, prompts of 100 tokens; 3 slots, 250 prompt tokens per iteration.
  std::vector<Request> trace;
  for (int i = 0; i < 5; ++i) trace.push_back({i, 0.0, 100, i == 1 ? 1 : 4});
  SchedulerConfig c;
  c.max_batch = 3;
  c.max_prefill_tokens = 250;
  ContinuousScheduler s(trace, c);
  ASSERT_TRUE(s.ready(0.0));
  IterationPlan p = s.plan();
  EXPECT_EQ(p.prefill, ids({0, 1}));  // a third prompt would pass the budget
  EXPECT_TRUE(p.decode.empty());
  EXPECT_EQ(p.tokens, 200);
  EXPECT_EQ(p.kv_tokens, 200);
  EXPECT_EQ(s.kv().length(0), 100u);
  Progress g = s.complete();
  EXPECT_EQ(g.first_token, ids({0, 1}));
  EXPECT_EQ(g.finished, ids({1}));  // one output token: done after its prefill, blocks freed
  EXPECT_FALSE(s.kv().has_sequence(1));
  p = s.plan();
  EXPECT_EQ(p.decode, ids({0}));  // its first token appended: 101 tokens
  EXPECT_EQ(p.prefill, ids({2, 3}));
  EXPECT_EQ(s.kv().length(0), 101u);
  EXPECT_EQ(p.tokens, 201);
  EXPECT_EQ(p.running, 3);
  s.complete();
  p = s.plan();  // full: request 4 waits for a slot
  EXPECT_EQ(p.decode, ids({0, 2, 3}));
  EXPECT_TRUE(p.prefill.empty());
  EXPECT_EQ(s.generated(0), 2);
}

TEST(Scheduler, ContinuousPreemptsTheMostRecentAndRecomputesItFirst) {
  // 6 blocks of 4 tokens; three requests of 4 prompt tokens and 20 outputs, all admitted at once:
  // the cache runs out as they grow, so the queue holds preempted sequences only.
  std::vector<Request> trace;
  for (int i = 0; i < 3; ++i) trace.push_back({i, 0.0, 4, 20});
  SchedulerConfig c;
  c.max_batch = 3;
  c.kv_blocks = 6;
  c.block_size = 4;
  ContinuousScheduler s(trace, c);
  std::vector<std::size_t> order;  // running, in admission order, after the previous plan
  std::deque<std::size_t> queue;   // the expected waiting queue: the last preempted at its head
  int it = 0;
  ASSERT_TRUE(s.ready(0.0));
  order = s.plan().prefill;
  EXPECT_EQ(order, ids({0, 1, 2}));
  s.complete();
  while (!s.done() && it++ < 1000) {
    ASSERT_TRUE(s.ready(0.0));
    const IterationPlan p = s.plan();
    for (std::size_t v : p.preempted) {
      EXPECT_FALSE(s.kv().has_sequence(static_cast<int>(v)));
      queue.push_front(v);
    }
    if (!p.preempted.empty()) {  // victims come off the back of the admission order
      std::vector<std::size_t> tail(order.end() - static_cast<long>(p.preempted.size()),
                                    order.end());
      std::reverse(tail.begin(), tail.end());
      EXPECT_EQ(p.preempted, tail) << "the most recently admitted goes first";
    }
    for (std::size_t i : p.prefill) {  // readmitted from the head, prompt + generated recomputed
      ASSERT_FALSE(queue.empty());
      EXPECT_EQ(i, queue.front()) << "a preempted sequence is readmitted first";
      queue.pop_front();
      EXPECT_EQ(s.kv().length(static_cast<int>(i)),
                static_cast<std::size_t>(trace[i].prompt_tokens + s.generated(i)));
    }
    order = p.decode;
    order.insert(order.end(), p.prefill.begin(), p.prefill.end());
    EXPECT_LE(p.running, c.max_batch);
    s.complete();
  }
  EXPECT_TRUE(s.done());
  EXPECT_GT(s.preemptions(), 0);
  EXPECT_EQ(s.kv().free_blocks(), 6);  // every block back
}

TEST(Scheduler, StaticKeepsItsBatchUntilTheLongestIsDone) {
  const std::vector<Request> trace{{0, 0.0, 10, 1}, {1, 0.0, 20, 3}, {2, 0.0, 5, 2}};
  SchedulerConfig c;
  c.max_batch = 2;
  StaticScheduler s(trace, c);
  ASSERT_TRUE(s.ready(0.0));
  IterationPlan p = s.plan();
  EXPECT_EQ(p.prefill, ids({0, 1}));
  EXPECT_EQ(p.tokens, 30);
  Progress g = s.complete();
  EXPECT_EQ(g.first_token, ids({0, 1}));
  EXPECT_EQ(g.finished, ids({0}));
  p = s.plan();  // request 0 is done but keeps its slot; the cost model charges it
  EXPECT_EQ(p.decode, ids({1}));
  EXPECT_EQ(p.tokens, 2);
  EXPECT_EQ(p.kv_tokens, 32);
  EXPECT_EQ(s.kv_length(1), 21u);
  EXPECT_EQ(s.block_table(1), (std::vector<int>{1, 2}));  // after request 0's one block
  EXPECT_TRUE(s.complete().finished.empty());
  p = s.plan();
  EXPECT_EQ(p.decode, ids({1}));
  EXPECT_EQ(s.complete().finished, ids({1}));
  EXPECT_TRUE(s.block_table(1).empty());  // the batch left with its blocks
  p = s.plan();
  EXPECT_EQ(p.prefill, ids({2}));
  EXPECT_EQ(s.block_table(2), (std::vector<int>{0}));  // the next batch starts over
  s.complete();
  s.plan();
  EXPECT_EQ(s.complete().finished, ids({2}));
  EXPECT_TRUE(s.done());
}

TEST(Scheduler, ArgumentsAreNamed) {
  SchedulerConfig c;
  c.kv_blocks = 4;
  const std::vector<Request> big{{0, 0.0, 60, 10}};  // 70 tokens > 64
  cudalab::testing::expect_throws_naming([&] { ContinuousScheduler s(big, c); }, "trace");
  cudalab::testing::expect_throws_naming([&] { StaticScheduler s(big, c); }, "trace");
  c.block_size = 0;
  cudalab::testing::expect_throws_naming([&] { ContinuousScheduler s({}, c); }, "config");
}

// Goodput: the largest arrival rate within a TTFT p99 and TPOT p99 budget (find_goodput). A
// search simulates the 1000-request trace about 20 times, a fraction of a second here; fewer
// requests would let a burst of the whole trace meet the budget (the queue a finite trace builds
// is bounded), so 1000 it is.
namespace {
constexpr int kGoodputRequests = 1000;
constexpr std::uint64_t kGoodputSeed = 2024;
Goodput skewed(Policy policy, const LatencyBudget& b) {
  return skewed_goodput(policy, kGoodputRequests, kGoodputSeed, SchedulerConfig{}, CostModel{}, b);
}
SimResult at_rate(Policy policy, double rate) {
  return policy(skewed_trace(kGoodputRequests, kGoodputSeed, rate), SchedulerConfig{}, CostModel{});
}
void print(const char* name, const Goodput& g) {
  std::printf(
      "%-11s goodput %.3f req/s (fails at %.3f), %.0f tok/s, TTFT p99 %.1f ms, TPOT p99 "
      "%.2f ms, %d simulations\n",
      name, g.rate_per_s, g.failed_per_s, g.result.throughput_tok_s, g.result.ttft_p99_ms,
      g.result.tpot_p99_ms, g.simulations);
}
// TTFT p99 10 s, TPOT p99 50 ms: loose enough for static batching, whose TTFT p99 cannot go under
// a batch's longest output (up to 2048 tokens of ~4 ms: ~8 s); at 2 s it has none (below).
const LatencyBudget kBudget{10000.0, 50.0};
}  // namespace

TEST(Goodput, TheRateMeetsTheBudgetAndOneAToleranceAboveDoesNot) {
  const RateSearch search;
  for (Policy policy : {&simulate_static, &simulate_continuous}) {
    const Goodput g = skewed(policy, kBudget);
    print(policy == &simulate_static ? "static" : "continuous", g);
    ASSERT_TRUE(g.met);
    ASSERT_FALSE(g.at_bound);
    EXPECT_TRUE(kBudget.met_by(g.result));
    const SimResult again = at_rate(policy, g.rate_per_s);  // deterministic: the same result
    EXPECT_EQ(again.ttft_p99_ms, g.result.ttft_p99_ms);
    EXPECT_EQ(again.tpot_p99_ms, g.result.tpot_p99_ms);
    EXPECT_GT(g.failed_per_s, g.rate_per_s);
    EXPECT_LE(g.failed_per_s - g.rate_per_s, search.tolerance_per_s);
    EXPECT_FALSE(kBudget.met_by(at_rate(policy, g.failed_per_s)));
  }
}

TEST(Goodput, ContinuousServesMoreThanStaticWithinTheBudget) {
  const Goodput st = skewed(&simulate_static, kBudget);
  const Goodput co = skewed(&simulate_continuous, kBudget);
  RecordProperty("continuous_over_static_goodput", std::to_string(co.rate_per_s / st.rate_per_s));
  EXPECT_GT(co.rate_per_s, 2 * st.rate_per_s);
  // An interactive budget: static batching meets none, continuous batching still serves a load.
  const LatencyBudget interactive{2000.0, 50.0};
  EXPECT_FALSE(skewed(&simulate_static, interactive).met);
  EXPECT_TRUE(skewed(&simulate_continuous, interactive).met);
}

TEST(Goodput, NoneWhenNoRateMeetsTheBudget) {
  // A 1 ms TTFT: no prompt is prefilled that fast (the weights alone take 3.8 ms to read).
  const Goodput g = skewed(&simulate_continuous, {1.0, 50.0});
  EXPECT_FALSE(g.met);
  EXPECT_EQ(g.rate_per_s, 0);
  EXPECT_EQ(g.simulations, 1);
  EXPECT_GT(g.result.ttft_p99_ms, 1.0);  // the result at min_rate_per_s, to say by how much
}

TEST(Goodput, ATighterBudgetNeverGivesAHigherRate) {
  const LatencyBudget budgets[] = {{500, 20}, {1000, 30}, {2000, 50}, {5000, 100}};  // tight first
  for (Policy policy : {&simulate_static, &simulate_continuous}) {
    double previous = 0;
    for (const LatencyBudget& b : budgets) {
      const Goodput g = skewed(policy, b);
      EXPECT_GE(g.rate_per_s, previous) << "TTFT " << b.ttft_p99_ms << " TPOT " << b.tpot_p99_ms;
      previous = g.rate_per_s;
    }
  }
}

TEST(Goodput, ANonMonotonePointIsSteppedOverAndTheBoundaryIsVerified) {
  // Meets the budget up to 2/s, fails in (2, 3], meets again up to 5.3/s: the doubling (1, 2, 4,
  // 8) never evaluates the failing window and bisects [4, 8] to the boundary at 5.3.
  const auto meets = [](double rate) { return rate <= 2 || (rate > 3 && rate <= 5.3); };
  const auto simulate = [&](double rate) {
    SimResult r;
    r.ttft_p99_ms = meets(rate) ? 100 : 1e6;
    r.tpot_p99_ms = 10;
    return r;
  };
  RateSearch search;
  search.min_rate_per_s = 1;
  const Goodput g = find_goodput(simulate, kBudget, search);
  ASSERT_TRUE(g.met);
  EXPECT_LE(g.rate_per_s, 5.3);
  EXPECT_GT(g.rate_per_s, 5.3 - search.tolerance_per_s);
  EXPECT_GT(g.failed_per_s, 5.3);
  EXPECT_LE(g.failed_per_s, 5.3 + search.tolerance_per_s);
  // With the upper bound inside the second meeting window: the bound itself, said so.
  search.max_rate_per_s = 3.5;
  const Goodput b = find_goodput(simulate, kBudget, search);
  EXPECT_TRUE(b.at_bound);
  EXPECT_EQ(b.rate_per_s, 3.5);
  EXPECT_EQ(b.simulations, 3);  // 1, 2, 3.5
}

TEST(Goodput, ArgumentsAreNamed) {
  const auto run = [](const LatencyBudget& b, const RateSearch& s = {}) {
    return
        [b, s] { skewed_goodput(&simulate_static, 10, 1, SchedulerConfig{}, CostModel{}, b, s); };
  };
  const double nan = std::numeric_limits<double>::quiet_NaN();
  cudalab::testing::expect_throws_naming(run({0, 50}), "budget");
  cudalab::testing::expect_throws_naming(run({2000, -1}), "budget");
  cudalab::testing::expect_throws_naming(run({nan, 50}), "budget");
  cudalab::testing::expect_throws_naming(run({2000, nan}), "budget");
  cudalab::testing::expect_throws_naming(run(kBudget, {0, 10, 0.1}), "search");
  cudalab::testing::expect_throws_naming(run(kBudget, {-1, 10, 0.1}), "search");
  cudalab::testing::expect_throws_naming(run(kBudget, {5, 2, 0.1}), "search");
  cudalab::testing::expect_throws_naming(run(kBudget, {1, nan, 0.1}), "search");
  cudalab::testing::expect_throws_naming(run(kBudget, {1, 10, 0}), "search");
  cudalab::testing::expect_throws_naming(
      [] { skewed_goodput(&simulate_static, 0, 1, SchedulerConfig{}, CostModel{}, kBudget); },
      "requests");
}
