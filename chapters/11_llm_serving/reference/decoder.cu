// The tiny decoder on the GPU (decoder.hpp; not an exercise: it runs the chapter's kernels end to
// end). One forward pass packs every token of the iteration into one matrix, decode steps first:
//
//   tokens T = decode steps + the prompts being prefilled; S = sequences (one logits row each)
//   h[T][d] fp32      = embed[token]                                     (embed_kernel)
//   per layer:  x     = rmsnorm(h) * attn_norm                  fp16     (rmsnorm_kernel)
//               qkv   = x Wqkv^T                                fp16     (cublasGemmEx)
//               q,k,v = rope(qkv); K, V appended to the paged cache     (rope_append_kernel)
//               attn  = decode_attention_paged (decode rows, from the cache) and
//                       prefill_attention (each prompt, within itself)     fp16
//               h    += attn Wo^T                  (fp32 GEMM output, beta = 1: the residual)
//               x     = rmsnorm(h) * ffn_norm;  gu = x Wgu^T;  a = silu(gate) * up   (swiglu)
//               h    += a Wdown^T
//   xl[S][d] = rmsnorm(h[last token of each sequence]) * final_norm;  logits = xl lm_head^T (fp32)
//   greedy argmax per row -> tokens[dst], margins[dst]                       (argmax_kernel)
//
// The per-token metadata (token index, position, cache slot, the decode block tables and lengths,
// the last rows) goes up in one copy from pinned memory per forward. The GEMMs are small (T x 256
// by 256 x 512...): at this size a pass is mostly launch latency, which is the point of the
// comparison the engine makes (serve.cpp): iteration counts, not kernel speed, separate the two
// schedulers.
#include <cublas_v2.h>
#include <cuda_fp16.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "ch11/ch11.hpp"
#include "ch11/decoder.hpp"
#include "cudalab/block_reduce.cuh"
#include "cudalab/check.hpp"
#include "cudalab/cublas.hpp"
#include "cudalab/math.hpp"
#include "cudalab/memory.hpp"
#include "cudalab/stream.hpp"

namespace cudalab::ch11 {
namespace {

constexpr int kThreads = 256;  // every row kernel: one block of 256 threads per row
static_assert(kThreads % 32 == 0 && kThreads <= 1024);

// h[t][:] = embed[tokens[tok_idx[t]]][:] (fp32). A token outside [0, vocab) gives NaN (device
// data is not checked on the host: the NaN makes a bad token visible in the logits).
__global__ void __launch_bounds__(kThreads)
    embed_kernel(const __half* __restrict__ embed, const int* __restrict__ tokens,
                 const int* __restrict__ tok_idx, float* __restrict__ h, int d, int vocab) {
  const int t = blockIdx.x;
  const int tok = tokens[tok_idx[t]];
  const bool ok = tok >= 0 && tok < vocab;
  for (int i = threadIdx.x; i < d; i += kThreads)
    h[static_cast<std::size_t>(t) * d + i] =
        ok ? __half2float(embed[static_cast<std::size_t>(tok) * d + i]) : NAN;
}

// out[r][:] = fp16(h[row][:] / sqrt(mean(h[row]^2) + eps) * gain), row = rows ? rows[r] : r.
__global__ void __launch_bounds__(kThreads)
    rmsnorm_kernel(const float* __restrict__ h, const int* __restrict__ rows,
                   const __half* __restrict__ gain, __half* __restrict__ out, int d, float eps) {
  __shared__ float smem[kThreads / 32];
  const int r = blockIdx.x, row = rows ? rows[r] : r;
  const float* x = h + static_cast<std::size_t>(row) * d;
  float ss = 0;
  for (int i = threadIdx.x; i < d; i += kThreads) ss += x[i] * x[i];
  const float inv = rsqrtf(block_sum(ss, smem) / static_cast<float>(d) + eps);
  for (int i = threadIdx.x; i < d; i += kThreads)
    out[static_cast<std::size_t>(r) * d + i] = __float2half_rn(x[i] * inv * __half2float(gain[i]));
}

// Rotary positions on q and k (rotate-half pairs (i, i + hd/2), angle pos * theta^(-2i/hd) in
// double: at position 4096 a float angle would be off by ~1e-3 rad), q/k/v split into their own
// arrays (what the attention kernels read), and K, V written into the paged cache at the token's
// slot (physical block slot / block_size, row slot % block_size). One block per token; thread j
// handles pair j % (hd/2) of head j / (hd/2).
__global__ void __launch_bounds__(kThreads)
    rope_append_kernel(const __half* __restrict__ qkv, const int* __restrict__ pos,
                       const int* __restrict__ slot, __half* __restrict__ q, __half* __restrict__ k,
                       __half* __restrict__ v, __half* __restrict__ kc, __half* __restrict__ vc,
                       int q_heads, int kv_heads, int hd, int block_size, double log2_theta) {
  const int t = blockIdx.x, half_hd = hd / 2, heads = q_heads + 2 * kv_heads;
  const __half* in = qkv + static_cast<std::size_t>(t) * heads * hd;
  const int p = pos[t], s = slot[t], blk = s / block_size, row = s % block_size;
  for (int j = threadIdx.x; j < heads * half_hd; j += kThreads) {
    const int head = j / half_hd, i = j % half_hd;
    const float x0 = __half2float(in[head * hd + i]),
                x1 = __half2float(in[head * hd + i + half_hd]);
    float y0 = x0, y1 = x1;
    if (head < q_heads + kv_heads) {  // q and k rotate, v does not
      double sn, cs;
      sincos(p * exp2(-2.0 * i / hd * log2_theta), &sn, &cs);
      y0 = static_cast<float>(x0 * cs - x1 * sn);
      y1 = static_cast<float>(x1 * cs + x0 * sn);
    }
    const __half h0 = __float2half_rn(y0), h1 = __float2half_rn(y1);
    __half* dst;
    __half* cache = nullptr;
    if (head < q_heads) {
      dst = q + (static_cast<std::size_t>(t) * q_heads + head) * hd;
    } else if (head < q_heads + kv_heads) {
      const int kh = head - q_heads;
      dst = k + (static_cast<std::size_t>(t) * kv_heads + kh) * hd;
      cache = kc + ((static_cast<std::size_t>(blk) * kv_heads + kh) * block_size + row) * hd;
    } else {
      const int kh = head - q_heads - kv_heads;
      dst = v + (static_cast<std::size_t>(t) * kv_heads + kh) * hd;
      cache = vc + ((static_cast<std::size_t>(blk) * kv_heads + kh) * block_size + row) * hd;
    }
    dst[i] = h0;
    dst[i + half_hd] = h1;
    if (cache) {
      cache[i] = h0;
      cache[i + half_hd] = h1;
    }
  }
}

// a[t][j] = fp16(silu(gate) * up), gate = gu[t][j], up = gu[t][ffn + j].
__global__ void __launch_bounds__(kThreads)
    swiglu_kernel(const __half* __restrict__ gu, __half* __restrict__ a, std::size_t n, int ffn) {
  const std::size_t idx = std::size_t{blockIdx.x} * blockDim.x + threadIdx.x;
  if (idx >= n) return;
  const std::size_t t = idx / ffn, j = idx % ffn;
  const float g = __half2float(gu[t * 2 * ffn + j]), u = __half2float(gu[t * 2 * ffn + ffn + j]);
  a[idx] = __float2half_rn(g / (1.0f + expf(-g)) * u);
}

// Greedy argmax of a row: the largest value, the lowest index among equal ones, and the runner-up
// (a tie leaves margin 0). Each thread scans a strided slice, then a shared-memory tree merges.
struct Best {
  float v, second;
  int i;
};
__device__ __forceinline__ Best merge(Best a, Best b) {
  const bool a_wins = a.v > b.v || (a.v == b.v && a.i < b.i);
  const Best w = a_wins ? a : b, l = a_wins ? b : a;
  return {w.v, fmaxf(w.second, l.v), w.i};
}
__global__ void __launch_bounds__(kThreads)
    argmax_kernel(const float* __restrict__ logits, int vocab, const int* __restrict__ dst,
                  int* __restrict__ tokens, float* __restrict__ margins) {
  __shared__ Best s[kThreads];
  const int r = blockIdx.x;
  const float* x = logits + static_cast<std::size_t>(r) * vocab;
  Best b{-INFINITY, -INFINITY, vocab};
  for (int i = threadIdx.x; i < vocab; i += kThreads) b = merge(b, Best{x[i], -INFINITY, i});
  s[threadIdx.x] = b;
  for (int w = kThreads / 2; w > 0; w /= 2) {
    __syncthreads();  // the previous level's results are in s
    if (threadIdx.x < w) s[threadIdx.x] = merge(s[threadIdx.x], s[threadIdx.x + w]);
  }
  if (threadIdx.x == 0) {
    const int o = dst ? dst[r] : r;
    if (o < 0) return;
    tokens[o] = s[0].i;
    if (margins) margins[o] = s[0].v - s[0].second;
  }
}

// Y[rows][out] = X[rows][in] W[out][in]^T (+ Y when accumulate): in cuBLAS's column-major terms
// Y^T (out x rows) = W^T (op T on the column-major in x out view of W) times X^T.
void gemm(cublasHandle_t handle, const __half* x, const __half* w, void* y, int rows, int in,
          int out, bool y_fp32, bool accumulate) {
  if (rows == 0) return;
  const float alpha = 1.0f, beta = accumulate ? 1.0f : 0.0f;
  CUDALAB_CHECK_CUBLAS(cublasGemmEx(
      handle, CUBLAS_OP_T, CUBLAS_OP_N, out, rows, in, &alpha, w, CUDA_R_16F, in, x, CUDA_R_16F, in,
      &beta, y, y_fp32 ? CUDA_R_32F : CUDA_R_16F, out, CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT));
}

}  // namespace

// ---- the paged cache
// ------------------------------------------------------------------------------

PagedKvCache::PagedKvCache(const DecoderConfig& c, int num_blocks, int block_size)
    : num_blocks_(num_blocks),
      block_size_(block_size),
      layers_(c.layers),
      kv_heads_(c.kv_heads),
      head_dim_(c.head_dim),
      layer_elems_(0) {
  check_decoder_config(c);
  require(num_blocks > 0, "num_blocks", "must be positive");
  require(block_size > 0, "block_size", "must be positive");
  layer_elems_ = static_cast<std::size_t>(num_blocks) * c.kv_heads * block_size * c.head_dim;
  k_ = DeviceBuffer<std::uint16_t>(layer_elems_ * c.layers);
  v_ = DeviceBuffer<std::uint16_t>(layer_elems_ * c.layers);
  CUDALAB_CHECK(cudaMemset(k_.data(), 0, k_.bytes()));
  CUDALAB_CHECK(cudaMemset(v_.data(), 0, v_.bytes()));
}

// ---- the decoder
// ----------------------------------------------------------------------------------

struct TinyDecoder::Impl {
  DecoderConfig c;
  std::vector<TensorSpec> specs;
  std::vector<DeviceBuffer<__half>> w;  // in decoder_tensors' order
  CublasHandle blas;
  // Activations, for up to cap_t tokens and cap_s sequences.
  int cap_t = 0, cap_s = 0;
  DeviceBuffer<float> h, logits;
  DeviceBuffer<__half> x, qkv, q, k, v, attn, gu, act, xl;
  // Metadata: one pinned staging array, one device array, the same layout (offsets below).
  PinnedBuffer<int> staging;
  DeviceBuffer<int> meta;
  Event staged{cudaEventDisableTiming};  // the last upload from `staging` is done
  bool staged_pending = false;

  const __half* tensor(std::size_t i) const { return w[i].data(); }

  void reserve(int tokens, int seqs) {
    tokens = std::max(tokens, 1);
    seqs = std::max(seqs, 1);
    if (tokens > cap_t) {
      const std::size_t t = static_cast<std::size_t>(tokens), d = c.d_model;
      const std::size_t qd = static_cast<std::size_t>(c.q_heads) * c.head_dim,
                        kd = static_cast<std::size_t>(c.kv_heads) * c.head_dim;
      h = DeviceBuffer<float>(t * d);
      x = DeviceBuffer<__half>(t * d);
      qkv = DeviceBuffer<__half>(t * (qd + 2 * kd));
      q = DeviceBuffer<__half>(t * qd);
      k = DeviceBuffer<__half>(t * kd);
      v = DeviceBuffer<__half>(t * kd);
      attn = DeviceBuffer<__half>(t * qd);
      gu = DeviceBuffer<__half>(t * 2 * c.ffn);
      act = DeviceBuffer<__half>(t * c.ffn);
      cap_t = tokens;
    }
    if (seqs > cap_s) {
      xl = DeviceBuffer<__half>(static_cast<std::size_t>(seqs) * c.d_model);
      logits = DeviceBuffer<float>(static_cast<std::size_t>(seqs) * c.vocab);
      cap_s = seqs;
    }
  }
  void reserve_meta(std::size_t n) {
    if (n <= meta.size()) return;
    if (staged_pending) staged.synchronize();
    staged_pending = false;
    const std::size_t size = std::max<std::size_t>(n, 2 * meta.size());
    staging = PinnedBuffer<int>(size);
    meta = DeviceBuffer<int>(size);
  }
};

TinyDecoder::TinyDecoder(const DecoderConfig& c, std::uint64_t seed)
    : impl_((check_decoder_config(c), std::make_unique<Impl>())) {
  impl_->c = c;
  impl_->specs = decoder_tensors(c, seed);  // checks the config
  for (const TensorSpec& s : impl_->specs) {
    DeviceBuffer<__half> b(s.size());
    fill_random(b.data(), s.size(), s.seed, DType::kF16, s.lo, s.hi);
    impl_->w.push_back(std::move(b));
  }
}
TinyDecoder::~TinyDecoder() = default;
TinyDecoder::TinyDecoder(TinyDecoder&&) noexcept = default;
TinyDecoder& TinyDecoder::operator=(TinyDecoder&&) noexcept = default;

const DecoderConfig& TinyDecoder::config() const noexcept {
  return impl_->c;
}

void TinyDecoder::reserve(int tokens, int seqs) {
  require(tokens >= 0, "tokens", "must not be negative");
  require(seqs >= 0, "seqs", "must not be negative");
  impl_->reserve(tokens, seqs);
}

void TinyDecoder::forward(std::span<const SeqStep> steps, PagedKvCache& cache, int* tokens,
                          std::size_t n_tokens, float* margins, float* logits,
                          cudaStream_t stream) {
  Impl& m = *impl_;
  const DecoderConfig& c = m.c;
  require(cache.fits(c), "cache", "made for another model (layers, kv_heads or head_dim)");
  const int bs = cache.block_size();
  // ---- checks (host data only) and the packed order: decode steps, then prefills
  std::vector<std::size_t> order;
  long total = 0;
  int max_blocks = 1;
  for (std::size_t s = 0; s < steps.size(); ++s) {
    const SeqStep& st = steps[s];
    require(st.len >= 1, "steps", "step " + std::to_string(s) + ": len must be at least 1");
    require(st.len == 1 || st.pos == 0, "steps",
            "step " + std::to_string(s) + ": a prefill (len > 1) must start at position 0");
    require(st.pos >= 0, "steps", "step " + std::to_string(s) + ": pos must not be negative");
    require(st.src >= 0 && st.src + st.len <= static_cast<long>(n_tokens), "steps",
            "step " + std::to_string(s) + ": src .. src + len must lie within tokens");
    require(st.dst < static_cast<long>(n_tokens), "steps",
            "step " + std::to_string(s) + ": dst must lie within tokens");
    const long need = ceil_div<long>(st.pos + st.len, bs);
    require(static_cast<long>(st.block_table.size()) >= need, "block_table",
            "step " + std::to_string(s) + ": " + std::to_string(st.block_table.size()) +
                " blocks for " + std::to_string(st.pos + st.len) + " tokens of block size " +
                std::to_string(bs));
    for (long j = 0; j < need; ++j)
      require(st.block_table[static_cast<std::size_t>(j)] >= 0 &&
                  st.block_table[static_cast<std::size_t>(j)] < cache.num_blocks(),
              "block_table", "step " + std::to_string(s) + ": an entry outside the cache");
    if (st.len == 1) {
      order.push_back(s);
      max_blocks = std::max(max_blocks, static_cast<int>(need));
    }
    total += st.len;
  }
  require(total <= std::numeric_limits<int>::max() / 2, "steps", "too many tokens");
  require_device_pointer(tokens, n_tokens, "tokens");
  require_device_pointer(logits, logits ? steps.size() * c.vocab : 0, "logits");
  if (steps.empty()) return;
  const int n_dec = static_cast<int>(order.size());
  for (std::size_t s = 0; s < steps.size(); ++s)
    if (steps[s].len > 1) order.push_back(s);
  const int T = static_cast<int>(total), S = static_cast<int>(steps.size());
  m.reserve(T, S);

  // ---- metadata: tok_idx[T], pos[T], slot[T], tables[n_dec][max_blocks], lens[n_dec],
  //      last[S], dst[S]
  const std::size_t o_pos = T, o_slot = 2 * static_cast<std::size_t>(T),
                    o_tab = 3 * static_cast<std::size_t>(T),
                    o_len = o_tab + static_cast<std::size_t>(n_dec) * max_blocks,
                    o_last = o_len + n_dec, o_dst = o_last + S, n_meta = o_dst + S;
  m.reserve_meta(n_meta);
  if (m.staged_pending) m.staged.synchronize();  // the previous upload has read `staging`
  int* hm = m.staging.data();
  std::vector<int> first_row(steps.size());
  int row = 0;
  for (std::size_t s : order) {
    const SeqStep& st = steps[s];
    first_row[s] = row;
    for (int j = 0; j < st.len; ++j, ++row) {
      const int p = st.pos + j;
      hm[row] = static_cast<int>(st.src + j);
      hm[o_pos + row] = p;
      hm[o_slot + row] = st.block_table[static_cast<std::size_t>(p / bs)] * bs + p % bs;
    }
  }
  for (int b = 0; b < n_dec; ++b) {
    const SeqStep& st = steps[order[static_cast<std::size_t>(b)]];
    const int need = ceil_div(st.pos + 1, bs);
    for (int j = 0; j < max_blocks; ++j)
      hm[o_tab + static_cast<std::size_t>(b) * max_blocks + j] =
          j < need ? st.block_table[static_cast<std::size_t>(j)] : 0;
    hm[o_len + b] = st.pos + 1;
  }
  for (std::size_t s = 0; s < steps.size(); ++s) {
    hm[o_last + s] = first_row[s] + steps[s].len - 1;
    hm[o_dst + s] = static_cast<int>(steps[s].dst);
  }
  CUDALAB_CHECK(
      cudaMemcpyAsync(m.meta.data(), hm, n_meta * sizeof(int), cudaMemcpyHostToDevice, stream));
  m.staged.record(stream);
  m.staged_pending = true;
  const int* dm = m.meta.data();

  // ---- the layers
  CUDALAB_CHECK_CUBLAS(cublasSetStream(m.blas, stream));
  const int d = c.d_model, hd = c.head_dim, qkv_n = (c.q_heads + 2 * c.kv_heads) * hd;
  const float eps = static_cast<float>(c.eps);
  std::size_t ti = 0;
  const __half* embed = m.tensor(ti++);
  embed_kernel<<<T, kThreads, 0, stream>>>(embed, tokens, dm, m.h.data(), d, c.vocab);
  CUDALAB_CHECK_LAUNCH();
  const DecodeShape dec{n_dec, c.q_heads, c.kv_heads, hd, 1.0f / std::sqrt(static_cast<float>(hd))};
  for (int l = 0; l < c.layers; ++l) {
    const __half *attn_norm = m.tensor(ti), *wqkv = m.tensor(ti + 1), *wo = m.tensor(ti + 2),
                 *ffn_norm = m.tensor(ti + 3), *wgu = m.tensor(ti + 4), *wdown = m.tensor(ti + 5);
    ti += 6;
    rmsnorm_kernel<<<T, kThreads, 0, stream>>>(m.h.data(), nullptr, attn_norm, m.x.data(), d, eps);
    CUDALAB_CHECK_LAUNCH();
    gemm(m.blas, m.x.data(), wqkv, m.qkv.data(), T, d, qkv_n, false, false);
    auto* kc = reinterpret_cast<__half*>(cache.k(l));
    auto* vc = reinterpret_cast<__half*>(cache.v(l));
    rope_append_kernel<<<T, kThreads, 0, stream>>>(
        m.qkv.data(), dm + o_pos, dm + o_slot, m.q.data(), m.k.data(), m.v.data(), kc, vc,
        c.q_heads, c.kv_heads, hd, bs, std::log2(c.rope_theta));
    CUDALAB_CHECK_LAUNCH();
    if (n_dec > 0) {
      const PagedKv kv{kc, vc, dm + o_tab, dm + o_len, cache.num_blocks(), bs, max_blocks};
      decode_attention_paged(m.q.data(), kv, m.attn.data(), dec, DType::kF16, stream);
    }
    for (std::size_t oi = static_cast<std::size_t>(n_dec); oi < order.size(); ++oi) {
      const SeqStep& st = steps[order[oi]];
      const std::size_t r0 = static_cast<std::size_t>(first_row[order[oi]]);
      DecodeShape one = dec;
      one.batch = 1;
      prefill_attention(m.q.data() + r0 * c.q_heads * hd, m.k.data() + r0 * c.kv_heads * hd,
                        m.v.data() + r0 * c.kv_heads * hd, m.attn.data() + r0 * c.q_heads * hd, one,
                        st.len, DType::kF16, stream);
    }
    gemm(m.blas, m.attn.data(), wo, m.h.data(), T, c.q_heads * hd, d, true, true);
    rmsnorm_kernel<<<T, kThreads, 0, stream>>>(m.h.data(), nullptr, ffn_norm, m.x.data(), d, eps);
    CUDALAB_CHECK_LAUNCH();
    gemm(m.blas, m.x.data(), wgu, m.gu.data(), T, d, 2 * c.ffn, false, false);
    const std::size_t n_act = static_cast<std::size_t>(T) * c.ffn;
    swiglu_kernel<<<static_cast<unsigned>(ceil_div<std::size_t>(n_act, kThreads)), kThreads, 0,
                    stream>>>(m.gu.data(), m.act.data(), n_act, c.ffn);
    CUDALAB_CHECK_LAUNCH();
    gemm(m.blas, m.act.data(), wdown, m.h.data(), T, c.ffn, d, true, true);
  }
  const __half *final_norm = m.tensor(ti), *lm_head = m.tensor(ti + 1);
  rmsnorm_kernel<<<S, kThreads, 0, stream>>>(m.h.data(), dm + o_last, final_norm, m.xl.data(), d,
                                             eps);
  CUDALAB_CHECK_LAUNCH();
  gemm(m.blas, m.xl.data(), lm_head, m.logits.data(), S, d, c.vocab, true, false);
  argmax_kernel<<<S, kThreads, 0, stream>>>(m.logits.data(), c.vocab, dm + o_dst, tokens, margins);
  CUDALAB_CHECK_LAUNCH();
  if (logits)
    CUDALAB_CHECK(cudaMemcpyAsync(logits, m.logits.data(),
                                  static_cast<std::size_t>(S) * c.vocab * sizeof(float),
                                  cudaMemcpyDeviceToDevice, stream));
}

void greedy_argmax_rows(const float* logits, int rows, int vocab, int* tokens, float* margins,
                        cudaStream_t stream) {
  require(rows >= 0, "rows", "must not be negative");
  require(vocab > 0, "vocab", "must be positive");
  if (rows == 0) return;
  require_device_pointer(logits, static_cast<std::size_t>(rows) * vocab, "logits");
  require_device_pointer(tokens, static_cast<std::size_t>(rows), "tokens");
  argmax_kernel<<<rows, kThreads, 0, stream>>>(logits, vocab, nullptr, tokens, margins);
  CUDALAB_CHECK_LAUNCH();
}

}  // namespace cudalab::ch11
