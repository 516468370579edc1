// Chapter 11, host side: continuous and static batching, simulated on the CPU with a kernel-cost
// model.
// Runs on the CPU (CI tests it without a GPU); bad arguments throw std::invalid_argument naming
// the argument.
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <deque>
#include <functional>
#include <stdexcept>
#include <vector>

#include "ch11/block_allocator.hpp"

namespace cudalab::ch11 {

// ---------------------------------------------------------------------------------------------
// Continuous batching, simulated on the CPU with a kernel-cost model.
struct Request {
  int id = 0;
  double arrival_ms = 0;
  int prompt_tokens = 0;
  int output_tokens = 0;  // tokens to generate, >= 1
};
// A skewed trace, the same on every platform for a seed (own generators over std::mt19937_64's
// raw output, whose sequence the standard fixes): Poisson arrivals at `rate_per_s`; prompt
// lengths log-normal (median 256, clipped to [16, 4096]); output lengths 80% short (exponential,
// mean 64, at least 1) and 20% long (uniform in [512, 2048]).
std::vector<Request> skewed_trace(int n, std::uint64_t seed, double rate_per_s);

// The cost of one iteration (one forward pass over the running batch), from what the chapter
// measures: the weights are read once per step (memory-bound GEMVs: weight_bytes / bandwidth)
// unless the batch's tokens make it compute-bound (tokens * flops_per_token / peak); attention
// reads every cached token's KV (kv_bytes_per_token / (kv_efficiency * bandwidth)).
struct CostModel {
  double weight_bytes = 16.06e9;        // Llama-3-8B, bf16
  double flops_per_token = 2 * 8.03e9;  // one multiply-add per weight
  double kv_bytes_per_token = 131072;   // Llama-3-8B, bf16 (kv_bytes_per_token())
  double bandwidth = 4.2e12;            // bytes/s, assumed: about an H200's device copy
  double kv_efficiency = 0.8;           // decode attention's fraction of copy bandwidth (11.2 goal)
  double peak_flops = 600e12;  // dense bf16 GEMM, assumed (cuBLAS's rate: ch06 BM_tc_gemm_cublas)
  // Milliseconds for an iteration that processes `tokens` new tokens (decodes + prompt tokens)
  // and reads `kv_tokens` cached tokens.
  double iteration_ms(long tokens, long kv_tokens) const;
};

struct SchedulerConfig {
  int max_batch = 64;             // sequences in one iteration at most
  int kv_blocks = 4096;           // the KV cache, in blocks
  int block_size = 16;            // tokens per block
  int max_prefill_tokens = 8192;  // prompt tokens admitted per iteration at most (chunking aside)
};

struct SimResult {
  double makespan_ms = 0;  // first arrival to last token
  long output_tokens = 0;
  double throughput_tok_s = 0;              // output tokens per second of makespan
  double ttft_p50_ms = 0, ttft_p99_ms = 0;  // arrival to first token
  double tpot_p50_ms = 0, tpot_p99_ms = 0;  // per output token after the first, per request
  int preemptions = 0;  // sequences evicted for lack of KV blocks (recomputed later)
  int iterations = 0;
  int max_running = 0;                            // the largest batch seen
  std::vector<double> first_token_ms, finish_ms;  // per request (trace order)
};

// Fills makespan, output_tokens, throughput and the percentiles (nearest rank) from
// first_token_ms and finish_ms (both sized like the trace).
void summarize(SimResult& r, const std::vector<Request>& trace);

// The argument checks shared by both simulators (the errors listed below).
void check_simulation_args(const std::vector<Request>& trace, const SchedulerConfig& config);

// The schedulers as objects: the CPU simulation (simulate_*, below) and the GPU engine
// (ch11/decoder.hpp: serve) drive the same policy, iteration by iteration:
//
//   while (!s.done()) {
//     if (!s.ready(now)) { now = s.next_arrival_ms(); continue; }  // idle until an arrival
//     const IterationPlan p = s.plan();   // who is prefilled, who decodes, who is preempted
//     now += <the iteration's cost: the cost model, or the GPU's measured time>;
//     const Progress done = s.complete(); // every computed sequence produced one token
//   }
//
// Sequences are trace indices (SeqId in the allocator). A sequence's KV holds its prompt and the
// tokens it generated except the newest (which the next decode step appends): a prefill covers
// prompt + generated tokens (generated > 0 after a preemption: recompute), a decode step appends
// one token (position kv().length(i) - 1) and reads the whole sequence.
struct IterationPlan {
  std::vector<std::size_t> prefill;    // (re)admitted now, prefilled whole, in admission order
  std::vector<std::size_t> decode;     // one token appended each, in admission order
  std::vector<std::size_t> preempted;  // evicted now (blocks freed, queued again), in order
  long tokens = 0;     // new tokens the cost model charges (prompt + decode tokens; see below)
  long kv_tokens = 0;  // cached tokens the iteration's attention reads (cost model)
  int running = 0;     // sequences holding a batch slot in this iteration
};
// What complete() reports: the sequences whose first token came out of this iteration, and those
// that produced their last one (their blocks are freed).
struct Progress {
  std::vector<std::size_t> first_token, finished;
};

// Exercise 11.5 — iteration-level scheduling (Orca, vLLM): every iteration admits waiting
// sequences while blocks, batch slots and the prefill budget allow, appends one token to every
// running sequence (preempting the most recently admitted one, its KV freed and its tokens
// recomputed later, when the cache is full); complete() retires the finished ones. KV lives in a
// BlockAllocator of config.kv_blocks blocks. Throws std::invalid_argument naming 'trace' when a
// request could never fit the cache alone (prompt + output tokens), 'config' when a field is not
// positive (check_simulation_args).
class ContinuousScheduler {
 public:
  ContinuousScheduler(std::vector<Request> trace, const SchedulerConfig& config);
  bool done() const noexcept { return done_ == trace_.size(); }
  // Queues the requests that arrived by now_ms; whether an iteration can run (something runs or
  // waits).
  bool ready(double now_ms);
  double next_arrival_ms() const;  // of the next request not queued yet (precondition: one is left)
  IterationPlan plan();            // one iteration's decisions (exercise 11.5)
  Progress complete();             // after the iteration: one token per running sequence
  const BlockAllocator& kv() const noexcept { return kv_; }
  int generated(std::size_t i) const { return generated_.at(i); }  // tokens produced so far
  int preemptions() const noexcept { return preemptions_; }
  const std::vector<Request>& trace() const noexcept { return trace_; }
  // What the GPU engine reads: a running sequence's KV length and block table, and the blocks
  // its paged cache needs.
  std::size_t kv_length(std::size_t i) const { return kv_.length(static_cast<int>(i)); }
  const std::vector<int>& block_table(std::size_t i) const {
    return kv_.block_table(static_cast<int>(i));
  }
  int cache_blocks() const noexcept { return config_.kv_blocks; }

 private:
  std::vector<Request> trace_;
  SchedulerConfig config_;
  BlockAllocator kv_;
  int watermark_;                     // blocks kept free for running sequences to grow
  std::vector<int> generated_;        // tokens produced so far (kept across a preemption)
  std::deque<std::size_t> waiting_;   // trace indices; preempted ones go back to the front
  std::vector<std::size_t> running_;  // in admission order: the back is the most recent
  std::size_t next_ = 0, done_ = 0;
  int preemptions_ = 0;
};

// Static batching, the baseline: take up to max_batch arrived requests, each reserving KV for its
// whole prompt + output (a contiguous cache's reservation, in tokens; generous: a real server
// reserves the longest allowed length, not the actual one), prefill them together (no
// max_prefill_tokens budget), decode until the LAST one finishes (finished ones keep their slot),
// then take the next batch. The cost model charges every slot of a decode step (a static batch
// computes its finished sequences' padding too); plan().decode lists only the unfinished ones
// (what the GPU engine computes, which can only favour static batching). The reservation is a
// contiguous cache's, so no BlockAllocator (and no exercise 11.1): each sequence of a batch gets
// the next ceil((prompt + output) / block_size) blocks, all returned when the batch leaves; the
// paged cache needs kv_blocks + max_batch blocks (each sequence rounds up by less than one).
// Errors: as ContinuousScheduler.
class StaticScheduler {
 public:
  StaticScheduler(std::vector<Request> trace, const SchedulerConfig& config);
  bool done() const noexcept { return batch_.empty() && next_ == trace_.size(); }
  bool ready(double now_ms);  // a batch is running, or the next request arrived by now_ms
  double next_arrival_ms() const;
  IterationPlan plan();
  Progress complete();
  int generated(std::size_t i) const { return generated_.at(i); }
  int preemptions() const noexcept { return 0; }
  const std::vector<Request>& trace() const noexcept { return trace_; }
  std::size_t kv_length(std::size_t i) const { return length_.at(i); }  // 0 outside a batch
  const std::vector<int>& block_table(std::size_t i) const { return tables_.at(i); }
  int cache_blocks() const noexcept { return config_.kv_blocks + config_.max_batch; }

 private:
  std::vector<Request> trace_;
  SchedulerConfig config_;
  std::vector<int> generated_;
  std::vector<std::size_t> length_;       // KV tokens of each sequence of the running batch
  std::vector<std::vector<int>> tables_;  // their block tables (empty outside the batch)
  std::vector<std::size_t> batch_;        // the running batch (empty between batches)
  std::size_t next_ = 0;
  int step_ = 0;         // 0: the batch's prefill; s >= 1: its s-th decode step
  int steps_ = 0;        // decode steps of the batch: its longest output - 1
  long kv_charged_ = 0;  // cached tokens the cost model charges (every slot grows every step)
  double now_ = 0;
};

// The loop above, once for the CPU simulation and the GPU engine: `iteration(plan)` runs (or
// charges) one iteration and returns its time in ms. Fills every field of the result
// (summarize).
template <class Scheduler, class Iteration>
SimResult drive(Scheduler& s, Iteration&& iteration) {
  const std::vector<Request>& trace = s.trace();
  SimResult r;
  r.first_token_ms.assign(trace.size(), 0);
  r.finish_ms.assign(trace.size(), 0);
  double now = trace.empty() ? 0 : trace[0].arrival_ms;
  while (!s.done()) {
    if (!s.ready(now)) {
      now = s.next_arrival_ms();  // idle until the next arrival
      continue;
    }
    const IterationPlan p = s.plan();
    now += iteration(p);
    r.max_running = std::max(r.max_running, p.running);
    ++r.iterations;
    const Progress done = s.complete();
    for (std::size_t i : done.first_token) r.first_token_ms[i] = now;
    for (std::size_t i : done.finished) r.finish_ms[i] = now;
  }
  r.preemptions = s.preemptions();
  summarize(r, trace);
  return r;
}

// The CPU simulation: the loop above with the cost model's time per iteration. Errors: as the
// schedulers'.
SimResult simulate_continuous(const std::vector<Request>& trace, const SchedulerConfig& config,
                              const CostModel& cost);
SimResult simulate_static(const std::vector<Request>& trace, const SchedulerConfig& config,
                          const CostModel& cost);

// ---------------------------------------------------------------------------------------------
// Goodput: the largest arrival rate a policy serves within a latency budget (TTFT p99 and TPOT
// p99), the engine-neutral figure to compare serving stacks by (throughput alone rewards letting
// the queue grow).
struct LatencyBudget {
  double ttft_p99_ms = 0;
  double tpot_p99_ms = 0;
  bool met_by(const SimResult& r) const {
    return r.ttft_p99_ms <= ttft_p99_ms && r.tpot_p99_ms <= tpot_p99_ms;
  }
};
struct RateSearch {
  double min_rate_per_s = 0.1;  // the search's bounds, requests per second
  double max_rate_per_s = 1000;
  double tolerance_per_s = 0.05;  // bisection stops when the bracket is this narrow
};
struct Goodput {
  bool met = false;         // false: not even min_rate_per_s meets the budget ("none")
  bool at_bound = false;    // max_rate_per_s meets it: the goodput is at least that
  double rate_per_s = 0;    // the rate found (meets the budget); 0 when none
  double failed_per_s = 0;  // the lowest rate above it seen to fail (within tolerance_per_s);
                            // 0 when at_bound; min_rate_per_s when none
  SimResult result;         // at rate_per_s (at min_rate_per_s when none)
  int simulations = 0;
};

// The search, over any rate -> simulation: doubles the rate from min_rate_per_s until it fails
// the budget (or reaches max_rate_per_s), then bisects between the last rate that met it and the
// first that failed until they are tolerance_per_s apart. Latency need not grow monotonically
// with the rate (preemption, and where a finite trace's bursts fall), so the result is a
// boundary, not a guarantee about every rate: rate_per_s was verified to meet the budget,
// failed_per_s (within tolerance above it) to fail it, and a rate between two evaluated points
// is never looked at (a failing window the doubling steps over, or a meeting one above
// failed_per_s, is not seen). The same arguments give the same result. Throws
// std::invalid_argument naming 'budget' (a p99 <= 0 or NaN) or 'search' (a bound <= 0 or not
// finite, min > max, a tolerance <= 0).
Goodput find_goodput(const std::function<SimResult(double rate_per_s)>& simulate,
                     const LatencyBudget& budget, const RateSearch& search = {});

// The chapter's goodput: `requests` of skewed_trace(requests, seed, rate) through a policy
// (simulate_static or simulate_continuous) with the cost model. The trace is finite, so the
// queue it builds is too: with few requests even an unbounded rate meets a loose budget (a burst
// of the whole trace is served in time) and the search ends at_bound; a thousand requests make
// the queue, not the burst, decide. Errors: find_goodput's, 'requests' (< 1), 'policy' (null),
// and the policy's.
using Policy = SimResult (*)(const std::vector<Request>&, const SchedulerConfig&, const CostModel&);
Goodput skewed_goodput(Policy policy, int requests, std::uint64_t seed,
                       const SchedulerConfig& config, const CostModel& cost,
                       const LatencyBudget& budget, const RateSearch& search = {});

}  // namespace cudalab::ch11
