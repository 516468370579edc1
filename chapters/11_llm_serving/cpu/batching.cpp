// Continuous batching, host side (host.hpp): the skewed trace, the cost model, the statistics and
// the static-batching baseline. The continuous scheduler is exercise 11.5
// (reference/scheduler.cpp).
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <deque>
#include <limits>
#include <random>

#include "ch11/host.hpp"
#include "cudalab/check.hpp"

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

SimResult simulate_static(const std::vector<Request>& trace, const SchedulerConfig& c,
                          const CostModel& cost) {
  check_simulation_args(trace, c);
  SimResult r;
  r.first_token_ms.assign(trace.size(), 0);
  r.finish_ms.assign(trace.size(), 0);
  const long capacity = static_cast<long>(c.kv_blocks) * c.block_size;
  std::size_t next = 0;
  double now = trace.empty() ? 0 : trace[0].arrival_ms;
  while (next < trace.size()) {
    now = std::max(now, trace[next].arrival_ms);
    // The batch: arrived requests, up to max_batch, each reserving prompt + output tokens.
    std::vector<std::size_t> batch;
    long reserved = 0, prompt = 0;
    while (next < trace.size() && trace[next].arrival_ms <= now &&
           static_cast<int>(batch.size()) < c.max_batch) {
      const Request& q = trace[next];
      const long need = q.prompt_tokens + q.output_tokens;
      if (reserved + need > capacity) break;  // (no prefill budget: static batches prefill at once)
      reserved += need;
      prompt += q.prompt_tokens;
      batch.push_back(next++);
    }
    r.max_running = std::max(r.max_running, static_cast<int>(batch.size()));
    long kv = prompt;
    now += cost.iteration_ms(prompt, kv);  // prefill (attention over the prompts): the first tokens
    ++r.iterations;
    int steps = 0;
    for (std::size_t i : batch) {
      r.first_token_ms[i] = now;
      steps = std::max(steps, trace[i].output_tokens - 1);
    }
    for (int s = 1; s <= steps; ++s) {  // every slot runs until the longest output is done
      kv +=
          static_cast<long>(batch.size());  // each step appends one token per slot, then reads all
      now += cost.iteration_ms(static_cast<long>(batch.size()), kv);
      ++r.iterations;
      for (std::size_t i : batch)
        if (trace[i].output_tokens - 1 == s) r.finish_ms[i] = now;
    }
    for (std::size_t i : batch)
      if (trace[i].output_tokens == 1) r.finish_ms[i] = r.first_token_ms[i];
  }
  summarize(r, trace);
  return r;
}

}  // namespace cudalab::ch11
