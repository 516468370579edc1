// Chapter 11 benchmarks, serving end to end: the tiny decoder and the two schedulers (rows:
// decode_attention.cpp's header):
//   BM_serve/{static,continuous}/skewed
// The ratios and speed goals are declared in bench/ch11/ch11.toml.
#include <algorithm>
#include <cstdint>
#include <exception>
#include <numeric>
#include <string>
#include <utility>
#include <vector>

#include "ch11/ch11.hpp"
#include "ch11/decoder.hpp"
#include "cudalab/bench.hpp"
#include "cudalab/timer.hpp"

using namespace cudalab;
using namespace cudalab::ch11;

namespace {

// The engine's tokens against the CPU oracle: the two shortest prompts' greedy paths, up to the
// oracle's first near tie (margin 0.05, twice the logits' tolerance of tests/ch11/test_decoder.cpp;
// past it either token is right), at most 24 tokens.
std::string check_serve(const ServeResult& r, const std::vector<Request>& trace,
                        const DecoderWeights& w) {
  std::vector<std::size_t> idx(trace.size());
  std::iota(idx.begin(), idx.end(), 0);
  std::stable_sort(idx.begin(), idx.end(), [&](std::size_t a, std::size_t b) {
    return trace[a].prompt_tokens < trace[b].prompt_tokens;
  });
  for (std::size_t n = 0; n < 2 && n < idx.size(); ++n) {
    const Request& q = trace[idx[n]];
    const auto& got = r.tokens[idx[n]];
    if (got.size() != static_cast<std::size_t>(q.output_tokens))
      return "request " + std::to_string(q.id) + ": " + std::to_string(got.size()) + " tokens";
    DecoderOracle o(w);
    std::vector<double> logits;
    for (int t : prompt_tokens(q.id, q.prompt_tokens, w.config.vocab)) logits = o.step(t);
    for (std::size_t j = 0; j < got.size() && j < 24; ++j) {
      const Greedy g = greedy_argmax(std::span<const double>(logits));
      if (g.margin < 0.05) break;
      if (got[j] != g.token)
        return "request " + std::to_string(q.id) + ", output token " + std::to_string(j) + ": " +
               std::to_string(got[j]) + ", the oracle's greedy choice " + std::to_string(g.token);
      logits = o.step(g.token);
    }
  }
  for (std::size_t i = 0; i < trace.size(); ++i)
    for (int t : r.tokens[i])
      if (t < 0 || t >= w.config.vocab)
        return "request " + std::to_string(trace[i].id) + ": token " + std::to_string(t);
  return "";
}

void BM_serve(benchmark::State& state, Batching b) {
  try {
    constexpr std::uint64_t kModelSeed = 11;  // tests/ch11/test_decoder.cpp's model
    TinyDecoder model(DecoderConfig{}, kModelSeed);
    const auto trace = serve_bench_trace();  // ch11/decoder.hpp
    const SchedulerConfig config = serve_bench_config();
    if (!bench::verify(state, std::string("serve/") + batching_name(b), [&] {
          const ServeResult r = serve(model, trace, config, b);
          return check_serve(r, trace, decoder_weights(DecoderConfig{}, kModelSeed));
        }))
      return;
    // (verify's run was the warm-up: cuBLAS's first calls; each serve() allocates before its clock)
    std::vector<float> makespan;
    ServeResult last;
    for (auto _ : state) {
      last = serve(model, trace, config, b);
      state.SetIterationTime(last.stats.makespan_ms * 1e-3);
      makespan.push_back(static_cast<float>(last.stats.makespan_ms));
    }
    const double ms = summarize(std::move(makespan)).median_ms;
    state.counters["median_us"] = ms * 1e3;
    state.counters["tokens/s"] =
        ms > 0 ? static_cast<double>(last.stats.output_tokens) / ms * 1e3 : 0;
    state.counters["ttft_p50_ms"] = last.stats.ttft_p50_ms;
    state.counters["ttft_p99_ms"] = last.stats.ttft_p99_ms;
    state.counters["tpot_p50_ms"] = last.stats.tpot_p50_ms;
    state.counters["tpot_p99_ms"] = last.stats.tpot_p99_ms;
    state.counters["iterations"] = last.stats.iterations;
    state.counters["preemptions"] = last.stats.preemptions;
    state.counters["max_batch"] = last.stats.max_running;
    state.counters["wall_ms"] = last.wall_ms;  // host wall clock: planning and syncs included
  } catch (const std::exception& e) {
    state.SkipWithError(e.what());
  }
}

using bench::add;  // cudalab/bench.hpp

[[maybe_unused]] const bool kRegistered = [] {
  for (Batching b : {Batching::kStatic, Batching::kContinuous})
    add(std::string("BM_serve/") + batching_name(b) + "/skewed",
        [b](benchmark::State& st) { BM_serve(st, b); });
  return true;
}();

}  // namespace
