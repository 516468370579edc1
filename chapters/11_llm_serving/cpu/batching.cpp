// Continuous batching, host side (host.hpp): the skewed trace, the cost model, the statistics and
// the static-batching baseline (StaticScheduler and its simulation), and the goodput search. The
// continuous scheduler is exercise 11.5 (reference/scheduler.cpp).
#include "ch11/batching.hpp"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <deque>
#include <limits>
#include <random>
#include <utility>

#include "cudalab/check.hpp"
#include "cudalab/math.hpp"

namespace cudalab::ch11 {

namespace {
// Uniform in (0, 1) from the engine's raw 64 bits (the standard fixes mt19937_64's sequence, not
// the distributions').
double uniform01(std::mt19937_64& g) {
  return (static_cast<double>(g() >> 11) + 0.5) * 0x1.0p-53;
}
double normal(std::mt19937_64& g) {  // Box-Muller
  const double u1 = uniform01(g), u2 = uniform01(g);
  return std::sqrt(-2.0 * std::log(u1)) * std::cos(2.0 * 3.14159265358979323846 * u2);
}
double percentile(std::vector<double> v, double p) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  const auto rank = static_cast<std::size_t>(std::ceil(p / 100.0 * static_cast<double>(v.size())));
  return v[std::min(v.size() - 1, rank == 0 ? 0 : rank - 1)];
}
}  // namespace

std::vector<Request> skewed_trace(int n, std::uint64_t seed, double rate_per_s) {
  require(n >= 0, "n", "must not be negative");
  require(rate_per_s > 0, "rate_per_s", "must be positive");
  std::mt19937_64 g(seed);
  std::vector<Request> trace;
  double t = 0;
  for (int i = 0; i < n; ++i) {
    t += -std::log(uniform01(g)) / rate_per_s * 1e3;
    Request r;
    r.id = i;
    r.arrival_ms = t;
    r.prompt_tokens =
        static_cast<int>(std::clamp(std::round(256.0 * std::exp(0.8 * normal(g))), 16.0, 4096.0));
    if (uniform01(g) < 0.8)
      r.output_tokens = std::max(1, static_cast<int>(std::round(-64.0 * std::log(uniform01(g)))));
    else
      r.output_tokens = 512 + static_cast<int>(uniform01(g) * 1537.0);
    trace.push_back(r);
  }
  return trace;
}

double CostModel::iteration_ms(long tokens, long kv_tokens) const {
  const double weights_s = weight_bytes / bandwidth;
  const double compute_s = static_cast<double>(tokens) * flops_per_token / peak_flops;
  const double kv_s =
      static_cast<double>(kv_tokens) * kv_bytes_per_token / (kv_efficiency * bandwidth);
  return 1e3 * (std::max(weights_s, compute_s) + kv_s);
}

void summarize(SimResult& r, const std::vector<Request>& trace) {
  r.output_tokens = 0;
  std::vector<double> ttft, tpot;
  double first = std::numeric_limits<double>::infinity(), last = 0;
  for (std::size_t i = 0; i < trace.size(); ++i) {
    r.output_tokens += trace[i].output_tokens;
    first = std::min(first, trace[i].arrival_ms);
    last = std::max(last, r.finish_ms[i]);
    ttft.push_back(r.first_token_ms[i] - trace[i].arrival_ms);
    if (trace[i].output_tokens > 1)
      tpot.push_back((r.finish_ms[i] - r.first_token_ms[i]) / (trace[i].output_tokens - 1));
  }
  r.makespan_ms = trace.empty() ? 0 : last - first;
  r.throughput_tok_s =
      r.makespan_ms > 0 ? static_cast<double>(r.output_tokens) / (r.makespan_ms * 1e-3) : 0;
  r.ttft_p50_ms = percentile(ttft, 50);
  r.ttft_p99_ms = percentile(ttft, 99);
  r.tpot_p50_ms = percentile(tpot, 50);
  r.tpot_p99_ms = percentile(tpot, 99);
}

void check_simulation_args(const std::vector<Request>& trace, const SchedulerConfig& c) {
  require(c.max_batch > 0 && c.kv_blocks > 0 && c.block_size > 0 && c.max_prefill_tokens > 0,
          "config", "max_batch, kv_blocks, block_size and max_prefill_tokens must be positive");
  const long capacity = static_cast<long>(c.kv_blocks) * c.block_size;
  for (std::size_t i = 0; i < trace.size(); ++i) {
    const Request& r = trace[i];
    require(r.prompt_tokens >= 1 && r.output_tokens >= 1, "trace",
            "every request needs a prompt and an output token");
    require(i == 0 || r.arrival_ms >= trace[i - 1].arrival_ms, "trace",
            "must be sorted by arrival");
    require(static_cast<long>(r.prompt_tokens) + r.output_tokens <= capacity, "trace",
            "request " + std::to_string(r.id) + " cannot fit the KV cache alone");
    require(r.prompt_tokens <= c.max_prefill_tokens, "trace",
            "request " + std::to_string(r.id) + "'s prompt exceeds max_prefill_tokens");
  }
}

StaticScheduler::StaticScheduler(std::vector<Request> trace, const SchedulerConfig& c)
    : trace_((check_simulation_args(trace, c), std::move(trace))),
      config_(c),
      generated_(trace_.size(), 0),
      length_(trace_.size(), 0),
      tables_(trace_.size()) {}

bool StaticScheduler::ready(double now_ms) {
  now_ = now_ms;
  return !batch_.empty() || (next_ < trace_.size() && trace_[next_].arrival_ms <= now_ms);
}

double StaticScheduler::next_arrival_ms() const {
  require(next_ < trace_.size(), "next_arrival_ms", "every request has arrived");
  return trace_[next_].arrival_ms;
}

IterationPlan StaticScheduler::plan() {
  IterationPlan p;
  if (batch_.empty()) {
    // The batch: arrived requests, up to max_batch, each reserving prompt + output tokens.
    const long capacity = static_cast<long>(config_.kv_blocks) * config_.block_size;
    long reserved = 0, prompt = 0;
    int block = 0;  // the batch's blocks are handed out in order
    while (next_ < trace_.size() && trace_[next_].arrival_ms <= now_ &&
           static_cast<int>(batch_.size()) < config_.max_batch) {
      const Request& q = trace_[next_];
      const long need = q.prompt_tokens + q.output_tokens;
      if (reserved + need > capacity) break;  // (no prefill budget: static batches prefill at once)
      reserved += need;
      prompt += q.prompt_tokens;
      const int blocks = static_cast<int>(ceil_div<long>(need, config_.block_size));
      for (int b = 0; b < blocks; ++b) tables_[next_].push_back(block++);
      length_[next_] = static_cast<std::size_t>(q.prompt_tokens);
      batch_.push_back(next_++);
    }
    steps_ = 0;
    for (std::size_t i : batch_) steps_ = std::max(steps_, trace_[i].output_tokens - 1);
    step_ = 0;
    kv_charged_ = prompt;
    p.prefill = batch_;  // the prefill (attention over the prompts) gives the first tokens
    p.tokens = prompt;
  } else {
    // A decode step: every slot runs until the longest output is done; each appends one token,
    // then attention reads all of them (the cost model's view).
    ++step_;
    kv_charged_ += static_cast<long>(batch_.size());
    for (std::size_t i : batch_)
      if (generated_[i] < trace_[i].output_tokens) {
        ++length_[i];
        p.decode.push_back(i);
      }
    p.tokens = static_cast<long>(batch_.size());
  }
  p.kv_tokens = kv_charged_;
  p.running = static_cast<int>(batch_.size());
  return p;
}

Progress StaticScheduler::complete() {
  Progress out;
  for (std::size_t i : batch_) {
    if (generated_[i] >= trace_[i].output_tokens) continue;  // finished: keeps its slot, idle
    if (++generated_[i] == 1) out.first_token.push_back(i);
    if (generated_[i] == trace_[i].output_tokens) out.finished.push_back(i);
  }
  if (step_ == steps_) {  // the longest is done: the batch leaves, its blocks with it
    for (std::size_t i : batch_) {
      tables_[i].clear();
      length_[i] = 0;
    }
    batch_.clear();
  }
  return out;
}

SimResult simulate_static(const std::vector<Request>& trace, const SchedulerConfig& c,
                          const CostModel& cost) {
  StaticScheduler s(trace, c);
  return drive(s, [&](const IterationPlan& p) { return cost.iteration_ms(p.tokens, p.kv_tokens); });
}

Goodput find_goodput(const std::function<SimResult(double rate_per_s)>& simulate,
                     const LatencyBudget& budget, const RateSearch& search) {
  require(budget.ttft_p99_ms > 0 && budget.tpot_p99_ms > 0, "budget",
          "ttft_p99_ms and tpot_p99_ms must be positive numbers");
  const double lo_bound = search.min_rate_per_s, hi_bound = search.max_rate_per_s;
  require(
      lo_bound > 0 && std::isfinite(lo_bound) && std::isfinite(hi_bound) && lo_bound <= hi_bound,
      "search", "needs 0 < min_rate_per_s <= max_rate_per_s, both finite");
  require(search.tolerance_per_s > 0 && std::isfinite(search.tolerance_per_s), "search",
          "tolerance_per_s must be positive");
  Goodput g;
  const auto meets = [&](double rate, SimResult& r) {
    ++g.simulations;
    r = simulate(rate);
    return budget.met_by(r);
  };
  SimResult lo_result;
  if (!meets(lo_bound, lo_result)) {  // none: the budget is out of reach even at the lowest rate
    g.failed_per_s = lo_bound;
    g.result = std::move(lo_result);
    return g;
  }
  g.met = true;
  double lo = lo_bound, hi = lo_bound;
  for (;;) {  // bracket: double until a rate fails or the bound meets the budget
    if (lo == hi_bound) {
      g.at_bound = true;
      g.rate_per_s = lo;
      g.result = std::move(lo_result);
      return g;
    }
    hi = std::min(2 * lo, hi_bound);
    SimResult r;
    if (!meets(hi, r)) break;
    lo = hi;
    lo_result = std::move(r);
  }
  while (hi - lo > search.tolerance_per_s) {  // bisect: lo meets, hi fails
    const double mid = lo + (hi - lo) / 2;
    SimResult r;
    if (meets(mid, r)) {
      lo = mid;
      lo_result = std::move(r);
    } else {
      hi = mid;
    }
  }
  g.rate_per_s = lo;
  g.failed_per_s = hi;
  g.result = std::move(lo_result);
  return g;
}

Goodput skewed_goodput(Policy policy, int requests, std::uint64_t seed, const SchedulerConfig& c,
                       const CostModel& cost, const LatencyBudget& budget,
                       const RateSearch& search) {
  require(requests >= 1, "requests", "must be at least 1");
  require(policy != nullptr, "policy", "must be simulate_static or simulate_continuous");
  return find_goodput(
      [&](double rate) { return policy(skewed_trace(requests, seed, rate), c, cost); }, budget,
      search);
}

}  // namespace cudalab::ch11
