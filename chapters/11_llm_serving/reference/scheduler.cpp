// Exercise 11.5 — continuous (iteration-level) batching over the paged KV cache, simulated.
//
// Static batching holds a batch until its longest request is done: with skewed output lengths
// most slots idle for most steps, and each request reserves KV for its longest possible length.
// Iteration-level scheduling (Orca, OSDI 2022; vLLM, SOSP 2023) re-forms the batch every forward
// pass: finished sequences leave at once, waiting ones join as soon as blocks and slots allow, and
// blocks are taken one at a time as sequences grow (exercise 11.1). When the cache runs out, the
// most recently admitted sequence is preempted: its blocks are freed and it is recomputed later
// (its prompt and the tokens it had generated are prefilled again), as vLLM does by default.
#include <algorithm>
#include <deque>
#include <vector>

#include "ch11/host.hpp"
#include "cudalab/check.hpp"

namespace cudalab::ch11 {

SimResult simulate_continuous(const std::vector<Request>& trace, const SchedulerConfig& c,
                              const CostModel& cost) {
  check_simulation_args(trace, c);
  SimResult r;
  const std::size_t n = trace.size();
  r.first_token_ms.assign(n, 0);
  r.finish_ms.assign(n, 0);
  BlockAllocator kv(c.kv_blocks, c.block_size);
  const int watermark =
      std::max(1, c.kv_blocks / 100);  // blocks kept free for running sequences to grow
  std::vector<int> generated(n, 0);    // tokens produced so far (kept across a preemption)
  std::deque<std::size_t> waiting;     // trace indices; preempted ones go back to the front
  std::vector<std::size_t> running;    // in admission order: the back is the most recent
  std::size_t next = 0, done = 0;
  double now = n ? trace[0].arrival_ms : 0;
  while (done < n) {
    while (next < n && trace[next].arrival_ms <= now) waiting.push_back(next++);
    if (running.empty() && waiting.empty()) {
      now = trace[next].arrival_ms;  // idle until the next arrival
      continue;
    }
    std::vector<char> fresh(n, 0);  // admitted (prefilled) in this iteration
    long prefill = 0;
    // BEGIN EXERCISE 11.5
    // TODO(11.5): one iteration's scheduling decisions, before the clock advances below.
    //   Contract: (1) admission, first come first served (preempted sequences first): a queued
    //   request joins while a batch slot is free, the prompt tokens of this iteration stay within
    //   the prefill budget (a lone request joins whatever its length) and the allocator holds
    //   blocks for its tokens (prompt + already generated) beyond the watermark (none needed when
    //   nothing runs). A joining request gets its sequence in the allocator (SeqId = its trace
    //   index), its mark in `fresh`, its place at the back of the running list, and its tokens
    //   count towards `prefill`. (2) every sequence already running appends one token; when the
    //   cache is full, the most recently admitted one is preempted (its blocks freed, queued
    //   again at the head, counted in r.preemptions), then retry; a sequence that has itself
    //   been preempted stops there.
    //   Constraints: no sequence is ever lost or duplicated; never more than max_batch running.
    //   Goal: >= 2x the static batching throughput on the skewed trace (tests/ch11). Hints:
    //   scripts/lab hint 11.5
    // STARTER: (void)watermark;
    // STARTER: throw NotImplemented("Exercise 11.5: the scheduler step (chapters/11_llm_serving/starter/scheduler.cpp)");
    while (!waiting.empty() && static_cast<int>(running.size()) < c.max_batch) {
      const std::size_t i = waiting.front();
      const long tokens = trace[i].prompt_tokens + generated[i];
      if (prefill > 0 && prefill + tokens > c.max_prefill_tokens) break;
      const int reserve = running.empty() ? 0 : watermark;
      if (kv.blocks_for(static_cast<std::size_t>(tokens)) + reserve > kv.free_blocks()) break;
      kv.add_sequence(static_cast<int>(i), static_cast<std::size_t>(tokens));
      waiting.pop_front();
      running.push_back(i);
      fresh[i] = 1;
      prefill += tokens;
    }
    for (std::size_t k = 0; k < running.size(); ++k) {
      const std::size_t i = running[k];
      if (fresh[i]) continue;
      bool preempted_self = false;
      while (!kv.can_append(static_cast<int>(i))) {
        const std::size_t victim = running.back();
        running.pop_back();
        kv.free_sequence(static_cast<int>(victim));
        waiting.push_front(victim);
        ++r.preemptions;
        if (victim == i) {
          preempted_self = true;
          break;
        }
      }
      if (preempted_self) break;  // i was the last one: nothing after it to append
      kv.append_token(static_cast<int>(i));
    }
    // END EXERCISE
    long kv_tokens = 0;
    for (std::size_t i : running) kv_tokens += static_cast<long>(kv.length(static_cast<int>(i)));
    const long decodes =
        static_cast<long>(running.size()) -
        std::count_if(running.begin(), running.end(), [&](std::size_t i) { return fresh[i] != 0; });
    r.max_running = std::max(r.max_running, static_cast<int>(running.size()));
    now += cost.iteration_ms(prefill + decodes, kv_tokens);
    ++r.iterations;
    // Every running sequence produced one token in this pass.
    std::vector<std::size_t> still;
    for (std::size_t i : running) {
      if (++generated[i] == 1) r.first_token_ms[i] = now;
      if (generated[i] == trace[i].output_tokens) {
        r.finish_ms[i] = now;
        kv.free_sequence(static_cast<int>(i));
        ++done;
      } else {
        still.push_back(i);
      }
    }
    running = std::move(still);
  }
  summarize(r, trace);
  return r;
}

}  // namespace cudalab::ch11
