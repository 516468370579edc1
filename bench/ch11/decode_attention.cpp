// Chapter 11 benchmarks, a file per topic, registered in this order: decode_attention.cpp,
// lt_gemm.cpp, gemv_int8.cpp, prefill.cpp, serve.cpp; the rows of all of them are listed here.
// Decode attention is a stream over the KV cache, so every row reports the GB/s of KV it reads and
// is timed beside something that moves the same bytes (bench::run_vs, interleaved; vs_base = base
// time / row time):
//   BM_kv_copy/<shape>                          cudaMemcpy D2D of the KV bytes (the ceiling), alone
//   BM_decode/{paged,contiguous}/<shape>        base: that copy (vs_base = fraction of copy GB/s)
//   BM_decode_paged_vs_contiguous/<shape>       base: the contiguous kernel (vs_base = contiguous
//                                               time / paged time: the cost of the indirection)
//   BM_decode_split_k/s<splits>/<shape>         few long sequences (b2_ctx131072) or too few blocks
//                                               (b16_ctx32768); base: the paged kernel without
//                                               split (vs_base = the split-K speedup)
//   BM_decode_auto/<shape>                      decode_attention_paged_auto, the split planned
//                                               for this GPU (counter splits); base: the copy
//   BM_gemv/fp16/<rows>x<cols>                  base: a copy of the weight bytes
//   BM_gemv/int8/<rows>x<cols>                  base: the fp16 GEMV (vs_base = INT8 speedup)
//   BM_gemv/cublas/<rows>x<cols>                cublasGemmEx fp16 GEMV (n = 1); base: the copy
//   BM_gemv_int8_vs_copy/<rows>x<cols>          the INT8 GEMV; base: a copy of its weight bytes
//   BM_gemv_copy/int8/<rows>x<cols>             that copy alone (the ratio's vendor row)
//   BM_lt_gemm/bf16/<size>                      cuBLASLt bf16 GEMM, size^3, TN (the linear layer)
//   BM_lt_gemm/{int8,fp8,fp8_fast,fp8_e5m2x}/<size>  cuBLASLt INT8 (int32 out), FP8 E4M3 (bf16
//                                               out; fast: Hopper's fast accumulation; e5m2x:
//                                               activations in E5M2, a backward pass's); base: the
//                                               bf16 GEMM (vs_base = speedup). FP8 rows are errors
//                                               below compute capability 8.9, with the reason.
//   BM_prefill/b1_len<len>                      causal flash prefill (prefill_attention), one
//                                               sequence of one Llama-3-8B layer; TFLOP/s, alone
//   BM_prefill_tc/b1_len<len>                   the same on tensor cores (flash_prefill_attention,
//                                               mma.sync), up to 16384 tokens; TFLOP/s, alone
//   BM_prefill_tc/d64_b1_len<len>               the same at head_dim 64 (32 rows a warp on grids
//                                               of several waves: prefill_plan.hpp); TFLOP/s
//   BM_serve/{static,continuous}/skewed         the tiny decoder (ch11/decoder.hpp) serving the
//                                               skewed trace end to end with either scheduler;
//                                               the row's time is the makespan on the engine's
//                                               clock (GPU time per iteration), counters
//                                               tokens/s, TTFT and TPOT percentiles. Same trace,
//                                               same output tokens: continuous / static speed is
//                                               the throughput ratio (bench/ch11/ch11.toml).
// Shapes: one Llama-3-8B layer (32 query heads, 8 KV heads, head_dim 128), fp16, 2 GiB of KV per
// shape (>> 60 MB of L2), block size 16, block tables shuffled (a fragmented cache). Each row
// checks its output once before timing (bench::verify): the first and the last sequence against the
// double oracle (ch11/host.hpp), inputs recomputed on the host (ch11::random_at).
// The ratios and speed goals are declared in bench/ch11/ch11.toml.
#include <cuda_fp16.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <functional>
#include <map>
#include <numeric>
#include <random>
#include <string>
#include <tuple>
#include <vector>

#include "ch11/ch11.hpp"
#include "ch11_bench.hpp"
#include "cudalab/bench.hpp"
#include "cudalab/check.hpp"
#include "cudalab/memory.hpp"

using namespace cudalab;
using namespace cudalab::ch11;
using namespace cudalab::bench_ch11;

namespace {

struct Shape {
  int batch, ctx;
  std::string name() const {
    std::string n = "b";  // appended step by step: GCC 12 -Wrestrict misfires on "b" + std::string
    n += std::to_string(batch);
    n += "_ctx";
    n += std::to_string(ctx);
    return n;
  }
  double kv_bytes() const { return 2.0 * batch * ctx * kKvHeads * kDim * 2; }
  // q.k and p.v: two multiply-adds per query head, cached token and dimension.
  double flops() const { return 4.0 * batch * kQHeads * ctx * kDim; }
};

// One decode problem in both layouts. Paged: [num_blocks][kv_heads][block_size][dim] with a
// shuffled table; contiguous: [batch][kv_heads][ctx][dim]. Same seeds, different element indices:
// each layout is checked against the oracle of its own values.
struct Decode {
  Shape s;
  DecodeShape shape;
  int max_blocks, num_blocks;
  std::vector<int> tables;
  DeviceBuffer<std::uint16_t> q, out, kp, vp, kc, vc;
  DeviceBuffer<int> dtables, lens;

  Decode(Shape sh, bool paged, bool contiguous) : s(sh) {
    shape = {s.batch, kQHeads, kKvHeads, kDim, 1.0f / std::sqrt(static_cast<float>(kDim))};
    max_blocks = s.ctx / kBlockSize;
    num_blocks = s.batch * max_blocks;
    tables.resize(static_cast<std::size_t>(num_blocks));
    std::iota(tables.begin(), tables.end(), 0);
    std::mt19937_64 g(2024);
    std::shuffle(tables.begin(), tables.end(), g);
    const std::size_t nq = static_cast<std::size_t>(s.batch) * kQHeads * kDim;
    const std::size_t nkv = static_cast<std::size_t>(s.batch) * s.ctx * kKvHeads * kDim;
    q = DeviceBuffer<std::uint16_t>(nq);
    out = DeviceBuffer<std::uint16_t>(nq);
    fill_random(q.data(), nq, kSeedQ, kType, -1, 1);
    if (paged) {
      kp = DeviceBuffer<std::uint16_t>(nkv);
      vp = DeviceBuffer<std::uint16_t>(nkv);
      fill_random(kp.data(), nkv, kSeedK, kType, -1, 1);
      fill_random(vp.data(), nkv, kSeedV, kType, -1, 1);
    }
    if (contiguous) {
      kc = DeviceBuffer<std::uint16_t>(nkv);
      vc = DeviceBuffer<std::uint16_t>(nkv);
      fill_random(kc.data(), nkv, kSeedK, kType, -1, 1);
      fill_random(vc.data(), nkv, kSeedV, kType, -1, 1);
    }
    dtables = to_device(tables);
    lens = to_device(std::vector<int>(static_cast<std::size_t>(s.batch), s.ctx));
  }
  PagedKv paged_kv() const {
    return {kp.data(), vp.data(), dtables.data(), lens.data(), num_blocks, kBlockSize, max_blocks};
  }
  void run_paged(cudaStream_t st) {
    decode_attention_paged(q.data(), paged_kv(), out.data(), shape, kType, st);
  }
  void run_contiguous(cudaStream_t st) {
    decode_attention_contiguous(q.data(), kc.data(), vc.data(), lens.data(), s.ctx, out.data(),
                                shape, kType, st);
  }
  // The double oracle of sequence b in one layout. It costs seconds at 131072 tokens (every K and
  // V element recomputed by random_at), and the split-K rows share their shape: computed once per
  // (shape, layout, sequence) for the process.
  std::vector<double> oracle(bool paged, int b) const {
    static std::map<std::tuple<int, int, bool, int>, std::vector<double>> cache;
    const auto key = std::make_tuple(s.batch, s.ctx, paged, b);
    if (const auto it = cache.find(key); it != cache.end()) return it->second;
    std::vector<float> qb(static_cast<std::size_t>(kQHeads) * kDim);
    for (std::size_t i = 0; i < qb.size(); ++i)
      qb[i] = random_at(kSeedQ, b * qb.size() + i, kType, -1, 1);
    const std::size_t per = static_cast<std::size_t>(kKvHeads) * s.ctx * kDim;
    std::vector<float> k(per), v(per);
    for (int h = 0; h < kKvHeads; ++h)
      for (int t = 0; t < s.ctx; ++t)
        for (int d = 0; d < kDim; ++d) {
          std::size_t idx;
          if (paged) {
            const int blk = tables[static_cast<std::size_t>(b) * max_blocks + t / kBlockSize];
            idx = ((static_cast<std::size_t>(blk) * kKvHeads + h) * kBlockSize + t % kBlockSize) *
                      kDim +
                  d;
          } else {
            idx = ((static_cast<std::size_t>(b) * kKvHeads + h) * s.ctx + t) * kDim + d;
          }
          const std::size_t dst = (static_cast<std::size_t>(h) * s.ctx + t) * kDim + d;
          k[dst] = random_at(kSeedK, idx, kType, -1, 1);
          v[dst] = random_at(kSeedV, idx, kType, -1, 1);
        }
    return cache[key] =
               decode_attention_oracle(qb, k, v, kQHeads, kKvHeads, kDim, s.ctx, shape.scale);
  }
  // "" when sequences 0 and batch-1 of `out` match the oracle (tolerance: tests/ch11, fp16 1e-3).
  std::string check(bool paged) const {
    const std::vector<std::uint16_t> got = bench::download(out.data(), out.size());
    for (int b : {0, s.batch - 1}) {
      const std::vector<double> want = oracle(paged, b);
      std::vector<float> g(want.size()), w(want.size());
      for (std::size_t i = 0; i < want.size(); ++i) {
        __half_raw r;
        r.x = got[b * want.size() + i];
        g[i] = __half2float(__half(r));
        w[i] = static_cast<float>(want[i]);
      }
      const std::string m = bench::mismatch(
          g, w, {1e-3, 0}, "decode attention " + s.name() + ", sequence " + std::to_string(b));
      if (!m.empty()) return m;
    }
    return "";
  }
};

const Shape kBatchShapes[] = {{64, 8192}, {16, 32768}};
const Shape kFewLong{2, 131072};

void BM_kv_copy(benchmark::State& state, Shape s) {
  const bench::CopyBase copy(s.kv_bytes());
  bench::run(state, std::cref(copy), {.bytes = s.kv_bytes()});
}

// One decode step `work` over d's cache: checked once against the oracle (d.check(paged)), then
// timed beside `base` with the step's KV bytes and FLOPs. False when the check failed (the row is
// then an error row, nothing timed).
template <class Work, class Base>
bool check_and_time(benchmark::State& state, const std::string& key, const Decode& d, Shape s,
                    bool paged, Work work, Base base) {
  if (!bench::verify(state, key, [&] {
        work(nullptr);
        CUDALAB_CHECK(cudaDeviceSynchronize());
        return d.check(paged);
      }))
    return false;
  bench::run_vs(state, work, base, {.bytes = s.kv_bytes(), .flops = s.flops()});
  return true;
}

void BM_decode(benchmark::State& state, Shape s, bool paged) {
  Decode d(s, paged, !paged);
  auto work = [&](cudaStream_t st) { paged ? d.run_paged(st) : d.run_contiguous(st); };
  const bench::CopyBase copy(s.kv_bytes());
  check_and_time(state, std::string(paged ? "paged/" : "contiguous/") + s.name(), d, s, paged, work,
                 std::cref(copy));
}

void BM_decode_paged_vs_contiguous(benchmark::State& state, Shape s) {
  Decode d(s, true, true);
  if (!bench::verify(state, "paged_vs_contiguous/" + s.name(), [&] {
        d.run_paged(nullptr);
        CUDALAB_CHECK(cudaDeviceSynchronize());
        std::string m = d.check(true);
        if (!m.empty()) return m;
        d.run_contiguous(nullptr);
        CUDALAB_CHECK(cudaDeviceSynchronize());
        return d.check(false);
      }))
    return;
  bench::run_vs(
      state, [&](cudaStream_t st) { d.run_paged(st); },
      [&](cudaStream_t st) { d.run_contiguous(st); }, {.bytes = s.kv_bytes(), .flops = s.flops()});
}

void BM_decode_split_k(benchmark::State& state, Shape s, int splits) {
  Decode d(s, true, false);
  DeviceBuffer<float> ws(split_k_workspace_floats(d.shape, splits));
  auto work = [&](cudaStream_t st) {
    decode_attention_paged_split_k(d.q.data(), d.paged_kv(), d.out.data(), d.shape, kType, splits,
                                   ws.data(), ws.size(), st);
  };
  check_and_time(state, "split_k/" + std::to_string(splits) + "/" + s.name(), d, s, true, work,
                 [&](cudaStream_t st) { d.run_paged(st); });
}

// The split planned for this GPU (plan_decode_splits): no count chosen by hand.
void BM_decode_auto(benchmark::State& state, Shape s) {
  Decode d(s, true, false);
  DeviceBuffer<float> ws(decode_auto_workspace_floats(d.shape, d.paged_kv()));
  auto work = [&](cudaStream_t st) {
    decode_attention_paged_auto(d.q.data(), d.paged_kv(), d.out.data(), d.shape, kType, ws.data(),
                                ws.size(), st);
  };
  const bench::CopyBase copy(s.kv_bytes());
  if (check_and_time(state, "auto/" + s.name(), d, s, true, work, std::cref(copy)))
    state.counters["splits"] = decode_auto_splits(d.shape, d.paged_kv());
}

using bench::add;  // cudalab/bench.hpp

[[maybe_unused]] const bool kRegistered = [] {
  for (const Shape& s : kBatchShapes) {
    add("BM_kv_copy/" + s.name(), [s](benchmark::State& st) { BM_kv_copy(st, s); });
    add("BM_decode/paged/" + s.name(), [s](benchmark::State& st) { BM_decode(st, s, true); });
    add("BM_decode/contiguous/" + s.name(), [s](benchmark::State& st) { BM_decode(st, s, false); });
    add("BM_decode_paged_vs_contiguous/" + s.name(),
        [s](benchmark::State& st) { BM_decode_paged_vs_contiguous(st, s); });
    add("BM_decode_auto/" + s.name(), [s](benchmark::State& st) { BM_decode_auto(st, s); });
  }
  const Shape f = kFewLong;
  add("BM_kv_copy/" + f.name(), [f](benchmark::State& st) { BM_kv_copy(st, f); });
  add("BM_decode/paged/" + f.name(), [f](benchmark::State& st) { BM_decode(st, f, true); });
  for (int splits : {8, 32, 64})
    add("BM_decode_split_k/s" + std::to_string(splits) + "/" + f.name(),
        [f, splits](benchmark::State& st) { BM_decode_split_k(st, f, splits); });
  add("BM_decode_auto/" + f.name(), [f](benchmark::State& st) { BM_decode_auto(st, f); });
  const Shape mid = kBatchShapes[1];  // 16 x 8 = 128 blocks: one per SM, too few loads in flight
  for (int splits : {4, 8})
    add("BM_decode_split_k/s" + std::to_string(splits) + "/" + mid.name(),
        [mid, splits](benchmark::State& st) { BM_decode_split_k(st, mid, splits); });
  return true;
}();

}  // namespace

CUDALAB_BENCH_MAIN()
