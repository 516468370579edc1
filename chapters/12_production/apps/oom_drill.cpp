// The OOM drill on a real GPU: the budget of exercise 12.1 predicts the largest batch from this
// GPU's memory and its measured CUDA context; the prediction is checked by allocating it; then
// exercise 12.2's policy is driven past the limit (a batch twice too large) through cudaMalloc and
// through a stream-ordered pool, and free memory is compared before and after (a leak shows).
//
//   ch12_oom_drill [--model llama3-8b] [--context 8192] [--json OUT]
// Exit status: 0 the drill held (prediction fits, degraded batch found, nothing leaked); 1 it did
// not (what failed is printed); 2 a bad argument; 77 no GPU (nothing to drill).
#include <fmt/format.h>

#include <cstdio>
#include <cstdlib>
#include <exception>
#include <fstream>
#include <string>
#include <vector>

#include "args.hpp"
#include "ch12/ch12.hpp"
#include "cudalab/check.hpp"
#include "cudalab/device.hpp"

using namespace cudalab;
using namespace cudalab::ch12;

namespace {

struct Drill {
  std::string allocator;
  std::uint64_t requested = 0, got = 0;
  int attempts = 0;
  bool trimmed = false;
  std::string refused;  // allocate_batch's OutOfMemory message when not even min_batch fit
  std::size_t free_before = 0, free_released = 0, free_after = 0;
  std::uint64_t pool_reserved_after = 0;  // what the pool still holds after its trim
};

// A JSON string literal (the refusal message).
std::string json_string(const std::string& v) {
  std::string out = "\"";
  for (const char c : v) {
    if (c == '"' || c == '\\') out += '\\';
    if (static_cast<unsigned char>(c) >= 0x20) out += c;
  }
  return out + "\"";
}

// Free memory once all queued work (the pool's frees included) has finished: the baseline and the
// after are taken the same way, so only memory the drill still holds can tell them apart.
std::size_t settled_free_bytes() {
  CUDALAB_CHECK(cudaDeviceSynchronize());
  return device_free_bytes();
}

Drill drill(Allocator& alloc, const char* name, const BatchRequest& r, PoolAllocator* pool) {
  Drill d;
  d.allocator = name;
  d.requested = r.batch;
  d.free_before = settled_free_bytes();
  try {
    BatchAllocation got = allocate_batch(alloc, r);
    d.got = got.batch();
    d.attempts = got.attempts();
    d.trimmed = got.trimmed();
  } catch (const OutOfMemory& e) {  // recorded, not fatal: the leak check still runs
    d.refused = e.what();
  }  // released here
  d.free_released = settled_free_bytes();
  if (pool != nullptr) {
    pool->trim();  // the pool keeps what was freed until trimmed
    d.pool_reserved_after = pool->reserved_bytes();
  }
  d.free_after = settled_free_bytes();
  return d;
}

}  // namespace

int main(int argc, char** argv) {
  try {
    const Args a(argc, argv, {{"model", "llama3-8b"}, {"context", "8192"}, {"json", ""}});
    const ServedModel m = model_by_name(a.str("model"));
    const std::uint64_t context = a.u64("context");
    if (!has_gpu()) {
      std::printf("ch12_oom_drill: %s — nothing to drill\n", no_gpu_reason().c_str());
      return 77;
    }
    CUDALAB_CHECK(cudaFree(nullptr));  // the context exists from here on
    std::size_t free0 = 0, total = 0;
    CUDALAB_CHECK(cudaMemGetInfo(&free0, &total));
    BudgetInputs in = serving_inputs(m, total, context);
    const std::uint64_t estimated_context = in.cuda_context_bytes;
    in.cuda_context_bytes = total - free0;  // measured: the context plus whatever else holds memory
    const MemoryBudget b = memory_budget(in);
    const double gib = 1 << 30;
    fmt::print(
        "{} on {:.1f} GiB: CUDA context measured {:.2f} GiB (estimate {:.2f}); predicted largest "
        "batch {} of {} tokens ({:.3f} GiB each)\n",
        m.config.name, total / gib, in.cuda_context_bytes / gib, estimated_context / gib,
        b.max_batch, context, b.per_sequence / gib);

    // 1. The prediction, allocated: weights + workspace + prefill activations + max_batch
    // sequences.
    CudaMallocAllocator cm;
    BatchRequest predicted{.batch = b.max_batch,
                           .min_batch = b.max_batch,
                           .bytes_per_item = b.per_sequence,
                           .fixed_bytes = b.weights + b.workspace + b.prefill_activations};
    bool prediction_fits = false;
    std::size_t free_at_prediction = 0;
    std::uint64_t extra_in_reserve = 0;
    if (b.max_batch > 0) {
      try {
        BatchAllocation held = allocate_batch(cm, predicted);
        prediction_fits = held.batch() == b.max_batch;
        free_at_prediction = device_free_bytes();
        // How many more sequences the reserve still holds (it is left free on purpose).
        std::vector<void*> extra;
        while (void* p = cm.allocate(b.per_sequence)) extra.push_back(p);
        extra_in_reserve = extra.size();
        for (void* p : extra) cm.deallocate(p);
      } catch (const OutOfMemory& e) {
        // Free memory after the refusal tells a budget that is wrong (free back near free0) from
        // memory that did not come back (free far below free0).
        fmt::print("prediction did NOT fit: {}; free after the refusal {:.2f} GiB\n", e.what(),
                   settled_free_bytes() / gib);
      }
    }
    fmt::print(
        "prediction allocated: {}; free at the prediction {:.2f} GiB (reserve {:.2f} GiB): {} more "
        "sequences would have fit\n",
        prediction_fits ? "yes" : "NO", free_at_prediction / gib, b.reserve / gib,
        extra_in_reserve);

    // 2. The drill: twice the prediction plus one, through both allocators.
    BatchRequest over = predicted;
    over.batch = 2 * b.max_batch + 1;
    over.min_batch = 1;
    PoolAllocator pool;
    std::vector<Drill> drills = {drill(cm, "cudaMalloc", over, nullptr),
                                 drill(pool, "pool", over, &pool)};
    // cudaMemGetInfo is device-wide: free memory that moved between the start and the end, when
    // this process holds only its context at both, is a leak of this process or another process
    // using the GPU meanwhile (which also starves the prediction and the drills); the figures
    // cannot tell which, so the run says both and fails.
    const std::size_t free_end = settled_free_bytes();
    const long long moved = static_cast<long long>(free_end) - static_cast<long long>(free0);
    const bool moved_much = std::llabs(moved) > (256ll << 20);  // past the allocator's rounding
    if (moved_much)
      fmt::print(
          "free memory moved by {:+.2f} GiB between the start and the end: a leak, or another "
          "process using this GPU during the drill (the drill needs the GPU to itself)\n",
          moved / gib);
    bool ok = prediction_fits && !moved_much;
    for (const Drill& d : drills) {
      const bool leaked = d.free_after != d.free_before || d.pool_reserved_after != 0;
      ok = ok && !leaked && d.got > 0 && d.got < d.requested;
      if (!d.refused.empty()) fmt::print("drill {:10}: REFUSED: {}\n", d.allocator, d.refused);
      fmt::print(
          "drill {:10}: asked {} -> got {} after {} attempt(s){}; free before {:.3f} GiB, after "
          "release "
          "{:.3f}, after trim {:.3f}: {}\n",
          d.allocator, d.requested, d.got, d.attempts, d.trimmed ? " (trimmed)" : "",
          d.free_before / gib, d.free_released / gib, d.free_after / gib,
          leaked ? fmt::format("LEAK of {} bytes", static_cast<long long>(d.free_before) -
                                                       static_cast<long long>(d.free_after))
                 : "nothing leaked");
    }
    if (!a.str("json").empty()) {
      std::ofstream f(a.str("json"));
      f << fmt::format(
          R"({{"model": "{}", "context": {}, "total": {}, "free_at_start": {}, )"
          R"("context_estimate": {}, "budget": {}, "prediction_fits": {}, "free_at_prediction": {}, )"
          R"("extra_sequences_in_reserve": {}, "drills": [)",
          m.config.name, context, total, free0, estimated_context, budget_json(b),
          prediction_fits ? "true" : "false", free_at_prediction, extra_in_reserve);
      for (std::size_t i = 0; i < drills.size(); ++i) {
        const Drill& d = drills[i];
        f << fmt::format(
            R"({}{{"allocator": "{}", "requested": {}, "got": {}, "attempts": {}, "trimmed": {}, )"
            R"("refused": {}, "free_before": {}, "free_after_release": {}, "free_after": {}, )"
            R"("pool_reserved_after": {}}})",
            i ? ", " : "", d.allocator, d.requested, d.got, d.attempts,
            d.trimmed ? "true" : "false", json_string(d.refused), d.free_before, d.free_released,
            d.free_after, d.pool_reserved_after);
      }
      f << fmt::format(R"(], "free_at_end": {}, "ok": {}}})", free_end, ok ? "true" : "false")
        << "\n";
      if (!f) throw std::invalid_argument("--json " + a.str("json") + ": cannot write");
    }
    fmt::print("oom drill: {}\n", ok ? "OK" : "FAILED");
    return ok ? 0 : 1;
  } catch (const std::invalid_argument& e) {
    std::fprintf(stderr, "ch12_oom_drill: %s\n", e.what());
    return 2;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "ch12_oom_drill: %s\n", e.what());
    return 1;
  }
}
