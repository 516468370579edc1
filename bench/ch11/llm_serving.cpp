// Chapter 11 benchmarks: decode attention is a stream over the KV cache, so every row reports the
// GB/s of KV it reads and is timed beside something that moves the same bytes (bench::run_vs,
// interleaved; vs_base = base time / row time):
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
#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <exception>
#include <map>
#include <numeric>
#include <random>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include "ch11/ch11.hpp"
#include "ch11/decoder.hpp"
#include "ch11/lt_gemm.hpp"
#include "cudalab/bench.hpp"
#include "cudalab/cublas.hpp"
#include "cudalab/memory.hpp"
#include "cudalab/timer.hpp"

using namespace cudalab;
using namespace cudalab::ch11;

namespace {

constexpr int kQHeads = 32, kKvHeads = 8, kDim = 128, kBlockSize = 16;
constexpr DType kType = DType::kF16;
constexpr std::uint64_t kSeedQ = 11, kSeedK = 12, kSeedV = 13;

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

// GEMV: weights rows x cols (a Llama-3-8B MLP projection is 14336 x 4096), x and y fp16.
struct Gemv {
  int rows, cols;
  std::string name() const { return std::to_string(rows) + "x" + std::to_string(cols); }
};
const Gemv kGemvs[] = {{4096, 4096}, {14336, 4096}, {8192, 8192}, {28672, 8192}};

// Host inputs, made once per shape and kept for the process (each repetition re-runs the row).
struct GemvHost {
  Int8Matrix m;
  std::vector<float> wf, xf;  // fp16-rounded weights and input
  std::vector<__half> wh, xh;
};
const GemvHost& gemv_host(Gemv g) {
  static std::map<std::pair<int, int>, GemvHost> cache;
  const auto key = std::make_pair(g.rows, g.cols);
  if (auto it = cache.find(key); it != cache.end()) return it->second;
  GemvHost h;
  std::mt19937_64 rng(7);
  std::uniform_real_distribution<float> u(-1, 1);
  const std::size_t n = static_cast<std::size_t>(g.rows) * g.cols;
  std::vector<float> raw(n);
  for (float& e : raw) e = u(rng);
  h.m = quantize_int8_per_channel(raw, g.rows, g.cols);
  h.wh.resize(n);
  h.xh.resize(static_cast<std::size_t>(g.cols));
  h.wf.resize(n);
  h.xf.resize(h.xh.size());
  for (std::size_t i = 0; i < n; ++i) h.wf[i] = __half2float(h.wh[i] = __float2half_rn(raw[i]));
  for (std::size_t i = 0; i < h.xh.size(); ++i)
    h.xf[i] = __half2float(h.xh[i] = __float2half_rn(u(rng)));
  return cache.emplace(key, std::move(h)).first->second;
}

struct GemvData {
  Gemv g;
  const GemvHost& h;
  const Int8Matrix& m;
  const std::vector<float>& wf;
  const std::vector<float>& xf;
  DeviceBuffer<std::int8_t> q;
  DeviceBuffer<float> scale;
  DeviceBuffer<__half> w, x, y;
  explicit GemvData(Gemv gg)
      : g(gg),
        h(gemv_host(gg)),
        m(h.m),
        wf(h.wf),
        xf(h.xf),
        q(to_device(h.m.q)),
        scale(to_device(h.m.scale)),
        w(to_device(h.wh)),
        x(to_device(h.xh)),
        y(static_cast<std::size_t>(gg.rows)) {}
  void int8(cudaStream_t st) {
    gemv_int8_weight_only(q.data(), scale.data(), x.data(), y.data(), g.rows, g.cols, st);
  }
  void fp16(cudaStream_t st) { gemv_fp16(w.data(), x.data(), y.data(), g.rows, g.cols, st); }
  // Within the tests' tolerance of the double oracle of the weights the kernel reads.
  std::string check(bool quantized) const {
    const std::vector<__half> got = bench::download(y.data(), y.size());
    for (int r = 0; r < g.rows; ++r) {
      double exact = 0, abs_terms = 0;
      for (int c = 0; c < g.cols; ++c) {
        const std::size_t i = static_cast<std::size_t>(r) * g.cols + c;
        const double wv =
            quantized ? static_cast<double>(m.q[i]) * m.scale[static_cast<std::size_t>(r)] : wf[i];
        exact += wv * xf[static_cast<std::size_t>(c)];
        abs_terms += std::fabs(wv * xf[static_cast<std::size_t>(c)]);
      }
      const double e = std::fabs(__half2float(got[static_cast<std::size_t>(r)]) - exact);
      if (e > 1e-3 * std::fabs(exact) + 1e-5 * abs_terms + 1e-7)
        return (quantized ? std::string("int8") : std::string("fp16")) + " GEMV " + g.name() +
               ": row " + std::to_string(r) + " off by " + std::to_string(e);
    }
    return "";
  }
};

void BM_gemv_fp16(benchmark::State& state, Gemv g) {
  GemvData d(g);
  if (!bench::verify(state, "gemv_fp16/" + g.name(), [&] {
        d.fp16(nullptr);
        CUDALAB_CHECK(cudaDeviceSynchronize());
        return d.check(false);
      }))
    return;
  const double bytes = 2.0 * g.rows * g.cols;
  const bench::CopyBase copy(bytes);
  bench::run_vs(state, [&](cudaStream_t st) { d.fp16(st); }, std::cref(copy),
                {.bytes = bytes, .flops = 2.0 * g.rows * g.cols});
}

// The vendor's fp16 GEMV: cublasGemmEx with n = 1 (fp16 in and out, fp32 compute). W row-major
// rows x cols is column-major cols x rows: y = op(A) x with op = T, lda = cols. Beside a copy of
// the weight bytes, as BM_gemv/fp16.
void BM_gemv_cublas(benchmark::State& state, Gemv g) {
  GemvData d(g);
  const CublasHandle handle;  // per row: a static one would be destroyed after the runtime
  const float one = 1.0f, zero = 0.0f;
  auto work = [&](cudaStream_t st) {
    CUDALAB_CHECK_CUBLAS(cublasSetStream(handle, st));
    CUDALAB_CHECK_CUBLAS(cublasGemmEx(handle, CUBLAS_OP_T, CUBLAS_OP_N, g.rows, 1, g.cols, &one,
                                      d.w.data(), CUDA_R_16F, g.cols, d.x.data(), CUDA_R_16F,
                                      g.cols, &zero, d.y.data(), CUDA_R_16F, g.rows,
                                      CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT));
  };
  if (!bench::verify(state, "gemv_cublas/" + g.name(), [&] {
        work(nullptr);
        CUDALAB_CHECK(cudaDeviceSynchronize());
        return d.check(false);
      }))
    return;
  const double bytes = 2.0 * g.rows * g.cols;
  const bench::CopyBase copy(bytes);
  bench::run_vs(state, work, std::cref(copy), {.bytes = bytes, .flops = 2.0 * g.rows * g.cols});
}
// A copy that moves the INT8 weight bytes (rows x cols: half read, half written), alone: the
// vendor row of the INT8 GEMV's fraction of copy bandwidth.
void BM_gemv_copy_int8(benchmark::State& state, Gemv g) {
  const bench::CopyBase copy(1.0 * g.rows * g.cols);
  bench::run(state, std::cref(copy), {.bytes = 1.0 * g.rows * g.cols});
}
// The INT8 GEMV beside the fp16 one (the speed-up), or, with vs_copy, beside a copy of its own
// weight bytes (half the fp16 row's): how close the dequantizing kernel comes to the bandwidth its
// bytes allow.
void BM_gemv_int8(benchmark::State& state, Gemv g, bool vs_copy = false) {
  GemvData d(g);
  if (!bench::verify(state, (vs_copy ? "gemv_int8_vs_copy/" : "gemv_int8/") + g.name(), [&] {
        d.int8(nullptr);
        CUDALAB_CHECK(cudaDeviceSynchronize());
        return d.check(true);
      }))
    return;
  const double bytes = 1.0 * g.rows * g.cols;
  auto work = [&](cudaStream_t st) { d.int8(st); };
  if (vs_copy) {
    const bench::CopyBase copy(bytes);
    bench::run_vs(state, work, std::cref(copy), {.bytes = bytes, .flops = 2.0 * g.rows * g.cols});
  } else {
    bench::run_vs(state, work, [&](cudaStream_t st) { d.fp16(st); },
                  {.bytes = bytes, .flops = 2.0 * g.rows * g.cols});
  }
}

// cuBLASLt GEMMs, m = n = k = size. Inputs made on the host; each row checks 256 sampled outputs
// against the double oracle (tolerances of tests/ch11/test_lt_gemm.cpp).
struct LtHost {
  std::vector<std::int8_t> wi, xi;
  std::vector<__nv_bfloat16> wb, xb;
  Fp8Tensor wf, xf, xf5;  // xf5: the activations in E5M2
};
const LtHost& lt_host(int s) {
  static std::map<int, LtHost> cache;
  if (auto it = cache.find(s); it != cache.end()) return it->second;
  LtHost h;
  const std::size_t n = static_cast<std::size_t>(s) * s;
  std::mt19937_64 g(99);
  std::uniform_int_distribution<int> ui(-127, 127);
  std::uniform_real_distribution<float> uf(-1, 1);
  std::vector<float> fw(n), fx(n);
  h.wi.resize(n);
  h.xi.resize(n);
  h.wb.resize(n);
  h.xb.resize(n);
  for (std::size_t i = 0; i < n; ++i) {
    h.wi[i] = static_cast<std::int8_t>(ui(g));
    h.xi[i] = static_cast<std::int8_t>(ui(g));
    fw[i] = uf(g) * 0.05f;  // weight-like
    fx[i] = uf(g) * 4.0f;   // activation-like
    h.wb[i] = __float2bfloat16_rn(fw[i]);
    h.xb[i] = __float2bfloat16_rn(fx[i]);
  }
  h.wf = quantize_fp8(fw, Fp8Format::kE4M3);
  h.xf = quantize_fp8(fx, Fp8Format::kE4M3);
  h.xf5 = quantize_fp8(fx, Fp8Format::kE5M2);
  return cache.emplace(s, std::move(h)).first->second;
}

struct LtData {
  int size;
  const LtHost& h;
  const std::vector<std::int8_t>& wi;
  const std::vector<std::int8_t>& xi;
  const std::vector<__nv_bfloat16>& wb;
  const std::vector<__nv_bfloat16>& xb;
  const Fp8Tensor& wf;
  const Fp8Tensor& xf;
  DeviceBuffer<std::int8_t> dwi, dxi;
  DeviceBuffer<__nv_bfloat16> dwb, dxb, yb;
  DeviceBuffer<std::uint8_t> dwf, dxf, dxf5;
  DeviceBuffer<float> ws, xs, xs5;
  DeviceBuffer<std::int32_t> yi;
  LtGemm lt;
  explicit LtData(int s)
      : size(s),
        h(lt_host(s)),
        wi(h.wi),
        xi(h.xi),
        wb(h.wb),
        xb(h.xb),
        wf(h.wf),
        xf(h.xf),
        dwi(to_device(h.wi)),
        dxi(to_device(h.xi)),
        dwb(to_device(h.wb)),
        dxb(to_device(h.xb)),
        yb(static_cast<std::size_t>(s) * static_cast<std::size_t>(s)),
        dwf(to_device(h.wf.codes)),
        dxf(to_device(h.xf.codes)),
        dxf5(to_device(h.xf5.codes)),
        ws(to_device(std::vector<float>{h.wf.scale})),
        xs(to_device(std::vector<float>{h.xf.scale})),
        xs5(to_device(std::vector<float>{h.xf5.scale})),
        yi(static_cast<std::size_t>(s) * static_cast<std::size_t>(s)) {}
  void bf16(cudaStream_t st) { lt.bf16(dwb.data(), dxb.data(), yb.data(), size, size, size, st); }
  void int8(cudaStream_t st) { lt.int8(dwi.data(), dxi.data(), yi.data(), size, size, size, st); }
  void fp8(cudaStream_t st, bool fast, bool e5m2) {
    lt.fp8(dwf.data(), e5m2 ? dxf5.data() : dxf.data(), ws.data(), e5m2 ? xs5.data() : xs.data(),
           yb.data(), size, size, size, fast, st, e5m2 ? Fp8Format::kE5M2 : Fp8Format::kE4M3);
  }
  // kind: 0 bf16, 1 int8, 2 fp8, 3 fp8 fast, 4 fp8 with E5M2 activations.
  std::string check(int kind) const {
    const std::size_t s = static_cast<std::size_t>(size);
    const auto gotb =
        kind == 1 ? std::vector<__nv_bfloat16>() : bench::download(yb.data(), yb.size());
    const auto goti =
        kind == 1 ? bench::download(yi.data(), yi.size()) : std::vector<std::int32_t>();
    const bool e5m2 = kind == 4;
    const Fp8Tensor& x8 = e5m2 ? h.xf5 : xf;
    const Fp8Format x_format = e5m2 ? Fp8Format::kE5M2 : Fp8Format::kE4M3;
    std::mt19937_64 g(5);
    for (int sample = 0; sample < 256; ++sample) {
      const std::size_t o = g() % s, t = g() % s;  // output feature o of token t: Y[t][o]
      double want = 0, a = 0;
      for (std::size_t i = 0; i < s; ++i) {
        double p;
        if (kind == 1)
          p = static_cast<double>(wi[o * s + i]) * xi[t * s + i];
        else if (kind == 0)
          p = double{__bfloat162float(wb[o * s + i])} * __bfloat162float(xb[t * s + i]);
        else
          p = double{fp8_to_float(wf.codes[o * s + i], Fp8Format::kE4M3)} * wf.scale *
              fp8_to_float(x8.codes[t * s + i], x_format) * x8.scale;
        want += p;
        a += std::fabs(p);
      }
      const double got = kind == 1 ? goti[t * s + o] : __bfloat162float(gotb[t * s + o]);
      const double tol =
          kind == 1 ? 0 : std::ldexp(std::fabs(want), -8) + (kind == 3 ? 1e-3 : 1e-5) * a;
      if (std::fabs(got - want) > tol)
        return "GEMM " + std::to_string(size) + ": Y[" + std::to_string(t) + "][" +
               std::to_string(o) + "] = " + std::to_string(got) + ", want " + std::to_string(want);
    }
    return "";
  }
};

void BM_lt_gemm(benchmark::State& state, int size, int kind) {
  static const char* names[] = {"bf16", "int8", "fp8", "fp8_fast", "fp8_e5m2x"};
  if (kind >= 2) {
    if (std::string why; !fp8_supported(&why)) {
      state.SkipWithError(why.c_str());
      return;
    }
  }
  LtData d(size);
  auto work = [&](cudaStream_t st) {
    if (kind == 0)
      d.bf16(st);
    else if (kind == 1)
      d.int8(st);
    else
      d.fp8(st, kind == 3, kind == 4);
  };
  if (!bench::verify(state, std::string("lt_gemm/") + names[kind] + "/" + std::to_string(size),
                     [&] {
                       work(nullptr);
                       CUDALAB_CHECK(cudaDeviceSynchronize());
                       return d.check(kind);
                     }))
    return;
  const double flops = 2.0 * size * size * size;
  if (kind == 0)
    bench::run(state, work, {.flops = flops});
  else
    bench::run_vs(state, work, [&](cudaStream_t st) { d.bf16(st); }, {.flops = flops});
}

// ---- prefill: causal flash attention over one prompt (q_heads 32, kv_heads 8, head_dim 128)

void BM_prefill(benchmark::State& state, int len) {
  const DecodeShape shape{1, kQHeads, kKvHeads, kDim, 1.0f / std::sqrt(static_cast<float>(kDim))};
  const std::size_t nq = static_cast<std::size_t>(len) * kQHeads * kDim,
                    nkv = static_cast<std::size_t>(len) * kKvHeads * kDim;
  DeviceBuffer<std::uint16_t> q(nq), k(nkv), v(nkv), out(nq);
  fill_random(q.data(), nq, kSeedQ, kType, -1, 1);
  fill_random(k.data(), nkv, kSeedK, kType, -1, 1);
  fill_random(v.data(), nkv, kSeedV, kType, -1, 1);
  auto work = [&](cudaStream_t st) {
    prefill_attention(q.data(), k.data(), v.data(), out.data(), shape, len, kType, st);
  };
  // Checked rows: the first, a middle and the last query, every head, against the decode oracle
  // over that query's keys 0..i (a causal row is one decode step; the whole prefill oracle would
  // take minutes at len 4096).
  if (!bench::verify(state, "prefill/" + std::to_string(len), [&] {
        work(nullptr);
        CUDALAB_CHECK(cudaDeviceSynchronize());
        const auto got = bench::download(out.data(), out.size());
        for (int i : {0, len / 2 + 1, len - 1}) {
          const std::size_t keys = static_cast<std::size_t>(i) + 1;
          std::vector<float> qi(static_cast<std::size_t>(kQHeads) * kDim),
              ki(static_cast<std::size_t>(kKvHeads) * keys * kDim), vi(ki.size());
          for (std::size_t e = 0; e < qi.size(); ++e)
            qi[e] = random_at(kSeedQ, static_cast<std::size_t>(i) * qi.size() + e, kType, -1, 1);
          for (std::size_t kh = 0; kh < kKvHeads;
               ++kh)  // [token][kv head][dim] -> [kv head][token][dim]
            for (std::size_t j = 0; j < keys; ++j)
              for (std::size_t e = 0; e < kDim; ++e) {
                const std::size_t src = (j * kKvHeads + kh) * kDim + e,
                                  dst = (kh * keys + j) * kDim + e;
                ki[dst] = random_at(kSeedK, src, kType, -1, 1);
                vi[dst] = random_at(kSeedV, src, kType, -1, 1);
              }
          const std::vector<double> want = decode_attention_oracle(
              qi, ki, vi, kQHeads, kKvHeads, kDim, static_cast<int>(keys), shape.scale);
          for (std::size_t e = 0; e < want.size(); ++e) {
            __half_raw r;
            r.x = got[static_cast<std::size_t>(i) * want.size() + e];
            const double g = __half2float(__half(r));
            if (std::fabs(g - want[e]) > 1e-3)  // tests/ch11: fp16 1e-3
              return "prefill " + std::to_string(len) + ": query " + std::to_string(i) + ", head " +
                     std::to_string(e / kDim) + ", dim " + std::to_string(e % kDim) + ": " +
                     std::to_string(g) + ", want " + std::to_string(want[e]);
          }
        }
        return std::string();
      }))
    return;
  // QK^T and PV over the causal half: 2 * 2 * head_dim FLOPs per (query, key) pair and head.
  bench::run(state, work, {.flops = 4.0 * kDim * kQHeads * (0.5 * len * (len + 1.0))});
}

// ---- serving end to end: the tiny decoder and the two schedulers

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
  for (int size : {4096, 8192})
    for (int kind = 0; kind < 5; ++kind) {
      static const char* names[] = {"bf16", "int8", "fp8", "fp8_fast", "fp8_e5m2x"};
      add("BM_lt_gemm/" + std::string(names[kind]) + "/" + std::to_string(size),
          [size, kind](benchmark::State& st) { BM_lt_gemm(st, size, kind); });
    }
  for (const Gemv& g : kGemvs) {
    add("BM_gemv/fp16/" + g.name(), [g](benchmark::State& st) { BM_gemv_fp16(st, g); });
    add("BM_gemv/int8/" + g.name(), [g](benchmark::State& st) { BM_gemv_int8(st, g); });
    add("BM_gemv/cublas/" + g.name(), [g](benchmark::State& st) { BM_gemv_cublas(st, g); });
    add("BM_gemv_int8_vs_copy/" + g.name(),
        [g](benchmark::State& st) { BM_gemv_int8(st, g, true); });
    add("BM_gemv_copy/int8/" + g.name(), [g](benchmark::State& st) { BM_gemv_copy_int8(st, g); });
  }
  for (int len : {1024, 4096})
    add("BM_prefill/b1_len" + std::to_string(len),
        [len](benchmark::State& st) { BM_prefill(st, len); });
  for (Batching b : {Batching::kStatic, Batching::kContinuous})
    add(std::string("BM_serve/") + batching_name(b) + "/skewed",
        [b](benchmark::State& st) { BM_serve(st, b); });
  return true;
}();

}  // namespace

CUDALAB_BENCH_MAIN()
