// The serving engine (decoder.hpp: serve; not an exercise): the schedulers of batching.hpp driving
// the tiny decoder on the GPU, one forward pass per iteration.
//
// The loop is the simulation's (batching.hpp: drive, as simulate_continuous runs it) with the cost
// model replaced by the GPU: each iteration's plan becomes one TinyDecoder::forward over its decode
// steps and prefills, timed by two CUDA events, and the clock advances by that time. Tokens never
// come back to the host during the run: each request owns a slice of one device token array
// (prompt, then its outputs), the argmax writes each new token where the next step reads it, and
// the scheduler needs only lengths (every request generates exactly its output_tokens). What the
// host uploads per iteration is the metadata: positions, cache slots, block tables.
#include <algorithm>
#include <chrono>
#include <cstdint>
#include <numeric>
#include <vector>

#include "ch11/decoder.hpp"
#include "cudalab/check.hpp"
#include "cudalab/memory.hpp"
#include "cudalab/nvtx.hpp"
#include "cudalab/stream.hpp"

namespace cudalab::ch11 {
namespace {

template <class Scheduler>
ServeResult run(TinyDecoder& model, Scheduler& s, const SchedulerConfig& config,
                cudaStream_t stream) {
  const auto t0 = std::chrono::steady_clock::now();
  const std::vector<Request>& trace = s.trace();
  const std::size_t n = trace.size();
  const DecoderConfig& mc = model.config();
  ServeResult out;
  // Request i's tokens live at offset[i] .. offset[i] + prompt + output.
  std::vector<long> offset(n + 1, 0);
  for (std::size_t i = 0; i < n; ++i)
    offset[i + 1] = offset[i] + trace[i].prompt_tokens + trace[i].output_tokens;
  const auto total = static_cast<std::size_t>(offset[n]);
  std::vector<int> host_tokens(total, -1);
  for (std::size_t i = 0; i < n; ++i) {
    const auto p = prompt_tokens(trace[i].id, trace[i].prompt_tokens, mc.vocab);
    std::copy(p.begin(), p.end(), host_tokens.begin() + offset[i]);
  }
  DeviceBuffer<int> tokens = to_device(host_tokens);
  DeviceBuffer<float> margins(std::max<std::size_t>(total, 1));
  PagedKvCache cache(mc, s.cache_blocks(), config.block_size);
  // The most tokens one pass can carry: a batch's prompts (static batching has no prefill budget)
  // and a decode per slot; sized once so that no iteration allocates.
  std::vector<long> longest;
  for (const Request& q : trace) longest.push_back(q.prompt_tokens + q.output_tokens);
  std::sort(longest.rbegin(), longest.rend());
  const long worst = std::accumulate(
      longest.begin(), longest.begin() + std::min<long>(config.max_batch, longest.size()), 0L);
  model.reserve(static_cast<int>(std::min<long>(worst, offset[n])), config.max_batch);

  Event start, stop;
  std::vector<SeqStep> steps;
  out.stats = drive(s, [&](const IterationPlan& p) {
    // One range per serving iteration on the host timeline (nsys, or chapter 9's CUPTI trace).
    NvtxRange range("ch11 serving iteration");
    steps.clear();
    for (std::size_t i : p.decode) {  // the newest token, at the end of the sequence's KV
      const int pos = static_cast<int>(s.kv_length(i)) - 1;
      steps.push_back({pos, 1, offset[i] + pos, offset[i] + pos + 1, s.block_table(i)});
    }
    for (std::size_t i : p.prefill) {  // prompt + tokens generated before a preemption
      const int len = trace[i].prompt_tokens + s.generated(i);
      steps.push_back({0, len, offset[i], offset[i] + len, s.block_table(i)});
    }
    start.record(stream);
    model.forward(steps, cache, tokens.data(), total, margins.data(), nullptr, stream);
    stop.record(stream);
    stop.synchronize();
    const float ms = stop.elapsed_ms_since(start);
    out.iteration_ms.push_back(ms);
    return static_cast<double>(ms);
  });
  const std::vector<int> got = tokens.to_host();
  const std::vector<float> marg = margins.to_host();
  for (std::size_t i = 0; i < n; ++i) {
    const long b = offset[i] + trace[i].prompt_tokens, e = offset[i + 1];
    out.tokens.emplace_back(got.begin() + b, got.begin() + e);
    out.margins.emplace_back(marg.begin() + b, marg.begin() + e);
  }
  out.wall_ms =
      std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
  return out;
}

}  // namespace

ServeResult serve(TinyDecoder& model, const std::vector<Request>& trace,
                  const SchedulerConfig& config, Batching batching, cudaStream_t stream) {
  if (batching == Batching::kStatic) {
    StaticScheduler s(trace, config);  // checks 'trace' and 'config' before any device work
    return run(model, s, config, stream);
  }
  ContinuousScheduler s(trace, config);
  return run(model, s, config, stream);
}

}  // namespace cudalab::ch11
