// Continuous against static batching (exercise 11.5's simulator) with the kernel costs measured on
// this GPU: the device copy bandwidth, the paged decode kernel's fraction of it (batch 64 x 8192
// tokens, one Llama-3-8B layer) and the cuBLASLt bf16 GEMM rate (8192^3) replace the cost model's
// defaults. Without a GPU it says so and uses the defaults (host.hpp). Prints Markdown; writes JSON
// when given a path. The default trace (1000 requests at 40/s, ~12k output tokens/s asked) is
// past what one H200 serves, on purpose: it shows how the policies degrade. --rate sets the
// arrival rate, e.g. a deployment's planned load (chapter 12's go-live checklist).
// --ttft-p99-ms X --tpot-p99-ms Y (both or neither) add each policy's goodput: the largest
// arrival rate whose TTFT p99 and TPOT p99 stay within the budget (skewed_goodput, batching.hpp),
// the figure to compare serving engines by.
//
//   ./build/gpu/chapters/11_llm_serving/ch11_serving_sim [out.json] [--rate PER_S] [--requests N]
//       [--ttft-p99-ms X --tpot-p99-ms Y]
// Exit status: 0, 1 an error, 2 a bad argument.
#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <exception>
#include <filesystem>
#include <fstream>
#include <numeric>
#include <random>
#include <stdexcept>
#include <string>
#include <vector>

#include "ch11/ch11.hpp"
#include "ch11/lt_gemm.hpp"
#include "cudalab/device.hpp"
#include "cudalab/memory.hpp"
#include "cudalab/timer.hpp"

using namespace cudalab;
using namespace cudalab::ch11;

namespace {

constexpr std::uint64_t kTraceSeed =
    2024;  // the skewed trace's, for the comparison and the goodput

struct Measured {
  bool on_gpu = false;
  double copy_gbps = 0, decode_gbps = 0, gemm_tflops = 0;
};

Measured measure() {
  Measured m;
  if (!has_gpu()) return m;
  m.on_gpu = true;
  {  // device copy, 1 GiB each way
    const std::size_t bytes = std::size_t{1} << 30;
    DeviceBuffer<unsigned char> a(bytes), b(bytes);
    const auto t = time_gpu([&](cudaStream_t s) {
      CUDALAB_CHECK(cudaMemcpyAsync(b.data(), a.data(), bytes, cudaMemcpyDeviceToDevice, s));
    });
    m.copy_gbps = t.per_second(2.0 * bytes) / 1e9;
  }
  {  // paged decode attention, batch 64 x 8192 tokens, 32 query / 8 KV heads, head_dim 128, fp16
    const int batch = 64, ctx = 8192, bs = 16, kv_heads = 8, dim = 128;
    const int max_blocks = ctx / bs, num_blocks = batch * max_blocks;
    const std::size_t nkv = static_cast<std::size_t>(num_blocks) * kv_heads * bs * dim;
    const std::size_t nq = static_cast<std::size_t>(batch) * 32 * dim;
    DeviceBuffer<std::uint16_t> q(nq), out(nq), k(nkv), v(nkv);
    fill_random(q.data(), nq, 1, DType::kF16, -1, 1);
    fill_random(k.data(), nkv, 2, DType::kF16, -1, 1);
    fill_random(v.data(), nkv, 3, DType::kF16, -1, 1);
    std::vector<int> tables(static_cast<std::size_t>(num_blocks));
    std::iota(tables.begin(), tables.end(), 0);
    std::mt19937_64 g(1);
    std::shuffle(tables.begin(), tables.end(), g);
    auto dt = to_device(tables);
    auto lens = to_device(std::vector<int>(static_cast<std::size_t>(batch), ctx));
    const PagedKv kv{k.data(), v.data(), dt.data(), lens.data(), num_blocks, bs, max_blocks};
    const DecodeShape shape{batch, 32, kv_heads, dim, 1.0f / std::sqrt(128.0f)};
    const auto t = time_gpu([&](cudaStream_t s) {
      decode_attention_paged(q.data(), kv, out.data(), shape, DType::kF16, s);
    });
    m.decode_gbps = t.per_second(2.0 * nkv * 2) / 1e9;
  }
  {  // bf16 GEMM through cuBLASLt
    const int n = 8192;
    const std::size_t e = static_cast<std::size_t>(n) * n;
    DeviceBuffer<std::uint16_t> a(e), b(e), c(e);
    fill_random(a.data(), e, 4, DType::kBF16, -1, 1);
    fill_random(b.data(), e, 5, DType::kBF16, -1, 1);
    LtGemm lt;
    const auto t =
        time_gpu([&](cudaStream_t s) { lt.bf16(a.data(), b.data(), c.data(), n, n, n, s); });
    m.gemm_tflops = t.per_second(2.0 * n * n * n) / 1e12;
  }
  return m;
}

std::string row(const char* name, const SimResult& r) {
  return fmt::format("| {} | {:.0f} | {:.1f} | {:.1f} | {:.2f} | {:.2f} | {} | {} |", name,
                     r.throughput_tok_s, r.ttft_p50_ms, r.ttft_p99_ms, r.tpot_p50_ms, r.tpot_p99_ms,
                     r.preemptions, r.iterations);
}

std::string json(const char* name, const SimResult& r) {
  return fmt::format(
      "\"{}\": {{\"throughput_tok_s\": {:.3f}, \"ttft_p50_ms\": {:.3f}, \"ttft_p99_ms\": {:.3f}, "
      "\"tpot_p50_ms\": {:.4f}, \"tpot_p99_ms\": {:.4f}, \"preemptions\": {}, \"iterations\": {}}}",
      name, r.throughput_tok_s, r.ttft_p50_ms, r.ttft_p99_ms, r.tpot_p50_ms, r.tpot_p99_ms,
      r.preemptions, r.iterations);
}

struct Options {
  std::string json;
  double rate = 40.0;
  int requests = 1000;
  double ttft_p99_ms = 0, tpot_p99_ms = 0;  // the goodput budget; 0: not asked
};

// Throws std::invalid_argument naming the bad argument.
Options parse(int argc, char** argv) {
  Options o;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    if (a == "--rate" || a == "--requests" || a == "--ttft-p99-ms" || a == "--tpot-p99-ms") {
      if (i + 1 >= argc) throw std::invalid_argument(a + ": needs a value");
      const std::string v = argv[++i];
      std::size_t used = 0;
      double x = 0;
      try {
        x = a == "--requests" ? std::stoi(v, &used) : std::stod(v, &used);
      } catch (const std::exception&) {
        used = 0;
      }
      if (used != v.size() || !(x > 0 && std::isfinite(x)))
        throw std::invalid_argument(a + " " + v + ": wants a positive number");
      if (a == "--rate") o.rate = x;
      if (a == "--requests") o.requests = static_cast<int>(x);
      if (a == "--ttft-p99-ms") o.ttft_p99_ms = x;
      if (a == "--tpot-p99-ms") o.tpot_p99_ms = x;
    } else if (!a.empty() && a[0] == '-') {
      throw std::invalid_argument(
          a + ": unknown option (--rate PER_S, --requests N, --ttft-p99-ms X --tpot-p99-ms Y)");
    } else if (o.json.empty()) {
      o.json = a;
    } else {
      throw std::invalid_argument(a + ": one output path only");
    }
  }
  if ((o.ttft_p99_ms > 0) != (o.tpot_p99_ms > 0))
    throw std::invalid_argument(std::string(o.ttft_p99_ms > 0 ? "--ttft-p99-ms" : "--tpot-p99-ms") +
                                ": goes with " +
                                (o.ttft_p99_ms > 0 ? "--tpot-p99-ms" : "--ttft-p99-ms") +
                                " (the goodput budget needs both)");
  return o;
}

std::string goodput_cell(const Goodput& g) {
  if (!g.met) return "none";
  return fmt::format("{}{:.2f}", g.at_bound ? ">= " : "", g.rate_per_s);
}

std::string goodput_row(const char* name, const Goodput& g) {
  return fmt::format("| {} | {} | {:.0f} | {:.1f} | {:.2f} | {} |", name, goodput_cell(g),
                     g.met ? g.result.throughput_tok_s : 0.0, g.result.ttft_p99_ms,
                     g.result.tpot_p99_ms, g.simulations);
}

std::string goodput_json(const char* name, const Goodput& g) {
  return fmt::format(
      "\"{}\": {{\"met\": {}, \"at_bound\": {}, \"rate_per_s\": {:.4f}, \"throughput_tok_s\": "
      "{:.3f}, \"ttft_p99_ms\": {:.3f}, \"tpot_p99_ms\": {:.4f}, \"simulations\": {}}}",
      name, g.met, g.at_bound, g.rate_per_s, g.met ? g.result.throughput_tok_s : 0.0,
      g.result.ttft_p99_ms, g.result.tpot_p99_ms, g.simulations);
}

}  // namespace

int main(int argc, char** argv) {
  Options opt;
  try {
    opt = parse(argc, argv);
    // The JSON's folder must exist before minutes of measuring, not be found missing after them.
    const std::filesystem::path dir = std::filesystem::path(opt.json).parent_path();
    if (!opt.json.empty() && !dir.empty() && !std::filesystem::is_directory(dir))
      throw std::invalid_argument(opt.json + ": no folder " + dir.string() + " to write it in");
  } catch (const std::invalid_argument& e) {
    std::fprintf(stderr, "ch11_serving_sim: %s\n", e.what());
    return 2;
  }
  try {
    const Measured m = measure();
    CostModel cost;
    if (m.on_gpu) {
      cost.bandwidth = m.copy_gbps * 1e9;
      cost.kv_efficiency = m.decode_gbps / m.copy_gbps;
      cost.peak_flops = m.gemm_tflops * 1e12;
      std::printf(
          "Measured on %s: copy %.0f GB/s, paged decode %.0f GB/s (%.2f of copy), bf16 GEMM %.0f "
          "TFLOP/s\n\n",
          device_info().name.c_str(), m.copy_gbps, m.decode_gbps, cost.kv_efficiency,
          m.gemm_tflops);
    } else {
      std::printf("%s: the cost model's defaults (host.hpp), nothing measured.\n\n",
                  no_gpu_reason().c_str());
    }
    const auto trace = skewed_trace(opt.requests, kTraceSeed, opt.rate);
    const SchedulerConfig config;
    const SimResult st = simulate_static(trace, config, cost);
    const SimResult co = simulate_continuous(trace, config, cost);
    std::printf(
        "Llama-3-8B cost model, skewed trace (%d requests, seed %llu, %g/s), 64 slots, 65536 KV "
        "tokens\n\n",
        opt.requests, static_cast<unsigned long long>(kTraceSeed), opt.rate);
    std::printf(
        "| policy | tok/s | TTFT p50 ms | TTFT p99 ms | TPOT p50 ms | TPOT p99 ms | preemptions | "
        "iterations |\n");
    std::printf("| --- | --- | --- | --- | --- | --- | --- | --- |\n%s\n%s\n\n",
                row("static", st).c_str(), row("continuous", co).c_str());
    std::printf("continuous / static throughput: %.2fx\n",
                co.throughput_tok_s / st.throughput_tok_s);
    const bool budgeted = opt.ttft_p99_ms > 0;
    const LatencyBudget budget{opt.ttft_p99_ms, opt.tpot_p99_ms};
    const RateSearch search;
    Goodput gst, gco;
    if (budgeted) {
      gst =
          skewed_goodput(&simulate_static, opt.requests, kTraceSeed, config, cost, budget, search);
      gco = skewed_goodput(&simulate_continuous, opt.requests, kTraceSeed, config, cost, budget,
                           search);
      std::printf(
          "\nGoodput: the largest arrival rate (requests/s, %g to %g, to %g) whose TTFT p99 <= %g "
          "ms and TPOT p99 <= %g ms, same trace otherwise; tok/s and p99s at that rate (at the "
          "lowest rate when none)\n\n",
          search.min_rate_per_s, search.max_rate_per_s, search.tolerance_per_s, opt.ttft_p99_ms,
          opt.tpot_p99_ms);
      std::printf(
          "| policy | goodput req/s | tok/s | TTFT p99 ms | TPOT p99 ms | simulations |\n"
          "| --- | --- | --- | --- | --- | --- |\n%s\n%s\n",
          goodput_row("static", gst).c_str(), goodput_row("continuous", gco).c_str());
    }
    if (!opt.json.empty()) {
      std::ofstream f(opt.json);
      f << "{\"measured\": " << (m.on_gpu ? "true" : "false") << ", \"rate_per_s\": " << opt.rate
        << ", \"requests\": " << opt.requests << ", \"copy_gbps\": " << m.copy_gbps
        << ", \"decode_gbps\": " << m.decode_gbps << ", \"gemm_tflops\": " << m.gemm_tflops << ", "
        << json("static", st) << ", " << json("continuous", co)
        << ", \"continuous_over_static\": " << co.throughput_tok_s / st.throughput_tok_s;
      if (budgeted)
        f << ", \"ttft_p99_budget_ms\": " << opt.ttft_p99_ms
          << ", \"tpot_p99_budget_ms\": " << opt.tpot_p99_ms << ", \"goodput\": {"
          << goodput_json("static", gst) << ", " << goodput_json("continuous", gco) << "}";
      f << "}\n";
      f.close();
      if (!f) throw std::runtime_error(opt.json + ": cannot write the JSON there");
    }
    return 0;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "ch11_serving_sim: %s\n", e.what());
    return 1;
  }
}
