// The tiny decoder on the host (decoder.hpp): its weights' host copy, the double oracle, greedy
// argmax, the prompts and the shrunken trace. Nothing here needs a GPU.
#include <cuda_fp16.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "ch11/ch11.hpp"
#include "ch11/decoder.hpp"
#include "cudalab/check.hpp"
#include "cudalab/device_fill.hpp"

namespace cudalab::ch11 {

namespace {

double round_f16(double x) {
  return static_cast<double>(__half2float(__float2half_rn(static_cast<float>(x))));
}

}  // namespace

void check_decoder_config(const DecoderConfig& c) {
  require(
      c.layers > 0 && c.d_model > 0 && c.q_heads > 0 && c.kv_heads > 0 && c.ffn > 0 && c.vocab > 0,
      "config", "layers, d_model, q_heads, kv_heads, ffn and vocab must be positive");
  require(c.q_heads % c.kv_heads == 0 && c.q_heads / c.kv_heads <= 8, "config",
          "kv_heads must divide q_heads, with at most 8 query heads per KV head");
  require(c.head_dim == 64 || c.head_dim == 128, "config",
          "head_dim must be 64 or 128 (the attention kernels')");
  require(c.q_heads * c.head_dim == c.d_model, "config", "q_heads * head_dim must equal d_model");
  require(c.rope_theta > 1 && c.eps > 0, "config", "rope_theta must exceed 1 and eps be positive");
}

std::vector<TensorSpec> decoder_tensors(const DecoderConfig& c, std::uint64_t seed) {
  check_decoder_config(c);
  std::vector<TensorSpec> t;
  auto add = [&](std::string name, int rows, int cols, float lo, float hi) {
    const std::uint64_t s = seed * 64 + t.size();
    t.push_back({std::move(name), static_cast<std::size_t>(rows), static_cast<std::size_t>(cols), s,
                 lo, hi});
  };
  auto matrix = [&](std::string name, int rows, int cols, float gain = 1.0f) {
    const float b = gain * static_cast<float>(std::sqrt(3.0 / cols));
    add(std::move(name), rows, cols, -b, b);
  };
  const int d = c.d_model, qkv = (c.q_heads + 2 * c.kv_heads) * c.head_dim;
  add("embed", c.vocab, d, -1.0f, 1.0f);
  for (int l = 0; l < c.layers; ++l) {
    const std::string p = "layer" + std::to_string(l) + ".";
    add(p + "attn_norm", 1, d, 0.5f, 1.5f);
    matrix(p + "wqkv", qkv, d);
    matrix(p + "wo", d, c.q_heads * c.head_dim);
    add(p + "ffn_norm", 1, d, 0.5f, 1.5f);
    matrix(p + "w_gate_up", 2 * c.ffn, d);
    matrix(p + "w_down", d, c.ffn);
  }
  add("final_norm", 1, d, 0.5f, 1.5f);
  matrix("lm_head", c.vocab, d, 2.0f);
  return t;
}

const std::vector<float>& DecoderWeights::get(const std::string& name) const {
  for (std::size_t i = 0; i < specs.size(); ++i)
    if (specs[i].name == name) return tensors[i];
  require(false, "name", "no tensor called " + name);
  return tensors.front();  // not reached
}

DecoderWeights decoder_weights(const DecoderConfig& c, std::uint64_t seed) {
  DecoderWeights w;
  w.config = c;
  w.specs = decoder_tensors(c, seed);
  for (const TensorSpec& s : w.specs) {
    std::vector<float> v(s.size());
    for (std::size_t i = 0; i < v.size(); ++i) v[i] = random_at(s.seed, i, DType::kF16, s.lo, s.hi);
    w.tensors.push_back(std::move(v));
  }
  return w;
}

// ---- the oracle ---------------------------------------------------------------------------------

DecoderOracle::DecoderOracle(const DecoderWeights& w, bool round_like_gpu)
    : w_(&w),
      round_(round_like_gpu),
      k_(static_cast<std::size_t>(w.config.layers)),
      v_(static_cast<std::size_t>(w.config.layers)) {
  check_decoder_config(w.config);
}

std::vector<double> DecoderOracle::step(int token) {
  const DecoderConfig& c = w_->config;
  require(token >= 0 && token < c.vocab, "token", "must be in [0, vocab)");
  const int d = c.d_model, hd = c.head_dim, group = c.q_heads / c.kv_heads;
  const int pos = length_;
  auto r = [&](double x) { return round_ ? round_f16(x) : x; };
  // y = W x for W [rows][cols] (rows of `w`).
  auto matvec = [](const std::vector<float>& w, const std::vector<double>& x, std::size_t rows) {
    std::vector<double> y(rows, 0.0);
    const std::size_t cols = x.size();
    for (std::size_t i = 0; i < rows; ++i) {
      double s = 0;
      for (std::size_t j = 0; j < cols; ++j) s += static_cast<double>(w[i * cols + j]) * x[j];
      y[i] = s;
    }
    return y;
  };
  auto rmsnorm = [&](const std::vector<double>& h, const std::vector<float>& gain) {
    double ss = 0;
    for (double x : h) ss += x * x;
    const double inv = 1.0 / std::sqrt(ss / static_cast<double>(h.size()) + c.eps);
    std::vector<double> y(h.size());
    for (std::size_t i = 0; i < h.size(); ++i) y[i] = r(h[i] * inv * gain[i]);
    return y;
  };
  auto rope = [&](double* x) {  // rotate-half: pairs (i, i + hd/2)
    for (int i = 0; i < hd / 2; ++i) {
      const double inv_freq = std::pow(c.rope_theta, -2.0 * i / hd);
      const double a = pos * inv_freq, cs = std::cos(a), sn = std::sin(a);
      const double x0 = x[i], x1 = x[i + hd / 2];
      x[i] = x0 * cs - x1 * sn;
      x[i + hd / 2] = x1 * cs + x0 * sn;
    }
  };

  const std::vector<float>& embed = w_->get("embed");
  std::vector<double> h(embed.begin() + static_cast<long>(token) * d,
                        embed.begin() + static_cast<long>(token + 1) * d);
  for (int l = 0; l < c.layers; ++l) {
    const std::string p = "layer" + std::to_string(l) + ".";
    const auto a = rmsnorm(h, w_->get(p + "attn_norm"));
    auto qkv =
        matvec(w_->get(p + "wqkv"), a, static_cast<std::size_t>((c.q_heads + 2 * c.kv_heads) * hd));
    for (double& x : qkv) x = r(x);
    for (int hh = 0; hh < c.q_heads + c.kv_heads; ++hh)
      rope(&qkv[static_cast<std::size_t>(hh) * hd]);
    for (double& x : qkv) x = r(x);
    const std::size_t qn = static_cast<std::size_t>(c.q_heads) * hd,
                      kn = static_cast<std::size_t>(c.kv_heads) * hd;
    auto& K = k_[static_cast<std::size_t>(l)];
    auto& V = v_[static_cast<std::size_t>(l)];
    K.insert(K.end(), qkv.begin() + static_cast<long>(qn),
             qkv.begin() + static_cast<long>(qn + kn));
    V.insert(V.end(), qkv.begin() + static_cast<long>(qn + kn), qkv.end());
    std::vector<double> attn(qn, 0.0);
    const double scale = 1.0 / std::sqrt(static_cast<double>(hd));
    for (int qh = 0; qh < c.q_heads; ++qh) {
      const int kh = qh / group;
      const double* q = &qkv[static_cast<std::size_t>(qh) * hd];
      std::vector<double> s(static_cast<std::size_t>(pos) + 1);
      double m = -INFINITY;
      for (int t = 0; t <= pos; ++t) {
        const double* k = &K[static_cast<std::size_t>(t) * kn + static_cast<std::size_t>(kh) * hd];
        double dot = 0;
        for (int e = 0; e < hd; ++e) dot += q[e] * k[e];
        s[static_cast<std::size_t>(t)] = dot * scale;
        m = std::max(m, dot * scale);
      }
      double sum = 0;
      for (double& x : s) sum += (x = std::exp(x - m));
      for (int t = 0; t <= pos; ++t) {
        const double* v = &V[static_cast<std::size_t>(t) * kn + static_cast<std::size_t>(kh) * hd];
        for (int e = 0; e < hd; ++e)
          attn[static_cast<std::size_t>(qh) * hd + e] +=
              s[static_cast<std::size_t>(t)] / sum * v[e];
      }
    }
    for (double& x : attn) x = r(x);
    const auto o = matvec(w_->get(p + "wo"), attn, static_cast<std::size_t>(d));
    for (int i = 0; i < d; ++i) h[static_cast<std::size_t>(i)] += o[static_cast<std::size_t>(i)];
    const auto b = rmsnorm(h, w_->get(p + "ffn_norm"));
    auto gu = matvec(w_->get(p + "w_gate_up"), b, static_cast<std::size_t>(2 * c.ffn));
    std::vector<double> act(static_cast<std::size_t>(c.ffn));
    for (int j = 0; j < c.ffn; ++j) {
      const double g = r(gu[static_cast<std::size_t>(j)]),
                   u = r(gu[static_cast<std::size_t>(c.ffn + j)]);
      act[static_cast<std::size_t>(j)] = r(g / (1.0 + std::exp(-g)) * u);
    }
    const auto dn = matvec(w_->get(p + "w_down"), act, static_cast<std::size_t>(d));
    for (int i = 0; i < d; ++i) h[static_cast<std::size_t>(i)] += dn[static_cast<std::size_t>(i)];
  }
  const auto f = rmsnorm(h, w_->get("final_norm"));
  ++length_;
  return matvec(w_->get("lm_head"), f, static_cast<std::size_t>(c.vocab));
}

std::vector<std::vector<double>> decoder_oracle_logits(const DecoderWeights& w,
                                                       std::span<const int> tokens,
                                                       bool round_like_gpu) {
  DecoderOracle o(w, round_like_gpu);
  std::vector<std::vector<double>> out;
  for (int t : tokens) out.push_back(o.step(t));
  return out;
}

namespace {
template <class T>
Greedy argmax_of(std::span<const T> x) {
  require(!x.empty(), "logits", "must not be empty");
  Greedy g;
  double best = static_cast<double>(x[0]), second = -INFINITY;
  for (std::size_t i = 1; i < x.size(); ++i) {
    const double v = static_cast<double>(x[i]);
    if (v > best) {
      second = best;
      best = v;
      g.token = static_cast<int>(i);
    } else {
      second = std::max(second, v);  // a tie keeps the lower index, margin 0
    }
  }
  g.margin = x.size() > 1 ? best - second : INFINITY;
  return g;
}
}  // namespace

Greedy greedy_argmax(std::span<const double> logits) {
  return argmax_of(logits);
}
Greedy greedy_argmax(std::span<const float> logits) {
  return argmax_of(logits);
}

std::vector<int> prompt_tokens(int request_id, int len, int vocab) {
  require(len >= 0, "len", "must not be negative");
  require(vocab > 0, "vocab", "must be positive");
  std::vector<int> t(static_cast<std::size_t>(len));
  const std::uint64_t seed = 0x70C0000ull + static_cast<std::uint64_t>(request_id);
  for (std::size_t i = 0; i < t.size(); ++i) t[i] = uniform_at(seed, i, 0, vocab - 1);
  return t;
}

std::vector<Request> shrink_trace(std::vector<Request> trace, int divisor) {
  require(divisor >= 1, "divisor", "must be at least 1");
  for (Request& r : trace) {
    r.prompt_tokens = std::max(1, (r.prompt_tokens + divisor - 1) / divisor);
    r.output_tokens = std::max(1, (r.output_tokens + divisor - 1) / divisor);
  }
  return trace;
}

std::vector<Request> serve_bench_trace() {
  auto t = shrink_trace(skewed_trace(128, 2024, 40.0), 4);
  for (Request& r : t) r.arrival_ms = 0;
  return t;
}

SchedulerConfig serve_bench_config() {
  SchedulerConfig c;
  c.max_batch = 32;
  c.kv_blocks = 1024;
  c.block_size = 16;
  c.max_prefill_tokens = 2048;
  return c;
}

const char* batching_name(Batching b) {
  return b == Batching::kStatic ? "static" : "continuous";
}

}  // namespace cudalab::ch11
