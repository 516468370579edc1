// Chapter 11 — a tiny decoder served end to end on the GPU with the chapter's kernels.
//
// The model (Llama-shaped, random deterministic weights): token embedding, `layers` blocks of
//   h += Wo · attention(rope(Wqkv · rmsnorm(h)))           (GQA: q_heads share kv_heads)
//   h += Wdown · (silu(Wgate · rmsnorm(h)) * Wup · rmsnorm(h))   (SwiGLU)
// then logits = lm_head · rmsnorm(h). Rotary positions (rotate-half, theta 10000, the angle in
// double so long positions stay exact), RMSNorm with a learned gain, no biases, untied
// embedding and output layer. Storage fp16 (weights, activations, KV cache) with fp32
// accumulation (cuBLAS GemmEx, attention, norms); the residual stream h and the logits are fp32.
//
// On the GPU (reference/decoder.cu): GEMMs through cuBLAS (cublasGemmEx, fp16 in, fp32 compute),
// a prompt's attention with prefill_attention (flash, causal), decode steps with
// decode_attention_paged (exercise 11.2) over a paged KV cache whose block tables come from the
// schedulers' BlockAllocator, and small kernels: embedding, RMSNorm, rotary + KV append into the
// paged cache, SwiGLU, greedy argmax. The engine (reference/serve.cpp: serve) runs a request trace
// with either scheduler of host.hpp. The CPU oracle (cpu/decoder_oracle.cpp) computes the same
// model in double.
//
// Bad arguments throw std::invalid_argument naming the argument.
#pragma once

#include <cuda_runtime_api.h>

#include <cstddef>
#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "ch11/host.hpp"
#include "cudalab/memory.hpp"

namespace cudalab::ch11 {

struct DecoderConfig {
  int layers = 2;
  int d_model = 256;
  int q_heads = 4;
  int kv_heads = 2;   // GQA: 2 query heads per KV head
  int head_dim = 64;  // q_heads * head_dim == d_model
  int ffn = 512;      // SwiGLU hidden width
  int vocab = 512;
  double rope_theta = 10000;
  double eps = 1e-5;  // RMSNorm
};
// Throws naming 'config' unless every size is positive, kv_heads divides q_heads with a group of
// at most kMaxGroup (8), q_heads * head_dim == d_model, head_dim is 64 or 128 (the attention
// kernels'), rope_theta > 1 and eps > 0.
void check_decoder_config(const DecoderConfig& c);

// The weights, one tensor at a time, in a fixed order: tensor t of a model made from `seed` is
// fill_random(seed * 64 + t, fp16, -bound, bound) (ch11.hpp), so a host copy recomputes every
// element exactly (random_at). Norm gains are in [0.5, 1.5]; matrices are [out][in] row-major
// (PyTorch's Linear) with bound sqrt(3 / in) (unit output variance for unit inputs), the output
// layer twice that (logits with a standard deviation of about 2).
struct TensorSpec {
  std::string name;  // "embed", "layer0.wqkv", ..., "lm_head"
  std::size_t rows = 0, cols = 0;
  std::uint64_t seed = 0;
  float lo = 0, hi = 0;
  std::size_t size() const { return rows * cols; }
};
// embed [vocab][d]; per layer: attn_norm [1][d], wqkv [(q_heads + 2 kv_heads) head_dim][d] (q
// rows, then k, then v), wo [d][q_heads head_dim], ffn_norm [1][d], w_gate_up [2 ffn][d] (gate
// rows, then up), w_down [d][ffn]; final_norm [1][d]; lm_head [vocab][d].
std::vector<TensorSpec> decoder_tensors(const DecoderConfig& c, std::uint64_t seed);

// Host copy of the weights: the fp16 values as floats, in decoder_tensors' order.
struct DecoderWeights {
  DecoderConfig config;
  std::vector<TensorSpec> specs;
  std::vector<std::vector<float>> tensors;
  const std::vector<float>& get(const std::string& name) const;  // throws naming 'name'
};
DecoderWeights decoder_weights(const DecoderConfig& c, std::uint64_t seed);

// The CPU oracle, in double: feeds one token at a time (its K and V cached in double) and returns
// the logits for the next token. round_like_gpu rounds to fp16 where the GPU stores fp16
// (normalized activations, q/k/v and the KV cache, attention output, the SwiGLU input and
// output): the tests use it to size the GPU's tolerance (the rounding the GPU cannot avoid).
class DecoderOracle {
 public:
  explicit DecoderOracle(const DecoderWeights& w, bool round_like_gpu = false);
  std::vector<double> step(int token);  // throws naming 'token' outside [0, vocab)
  int length() const noexcept { return length_; }

 private:
  const DecoderWeights* w_;
  bool round_;
  int length_ = 0;
  std::vector<std::vector<double>> k_, v_;  // per layer: [position][kv_heads][head_dim]
};
// The logits after each token of `tokens`: [len][vocab].
std::vector<std::vector<double>> decoder_oracle_logits(const DecoderWeights& w,
                                                       std::span<const int> tokens,
                                                       bool round_like_gpu = false);

// Greedy decoding's choice: the largest logit, the LOWEST index among equal ones (the GPU's
// argmax follows the same rule), and its margin over the runner-up (0 on a tie). A margin
// smaller than the logits' error means the GPU may legitimately pick the other token.
struct Greedy {
  int token = 0;
  double margin = 0;
};
Greedy greedy_argmax(std::span<const double> logits);  // throws naming 'logits' when empty
Greedy greedy_argmax(std::span<const float> logits);

// A request's prompt, deterministic from its id: `len` tokens in [0, vocab).
std::vector<int> prompt_tokens(int request_id, int len, int vocab);

// ---------------------------------------------------------------------------------------------
// GPU side.

// The paged KV cache of every layer: k and v are [layers][num_blocks][kv_heads][block_size]
// [head_dim] fp16 (decode_attention_paged's layout, one layer after the other), zeroed.
// Throws naming 'num_blocks' or 'block_size' when not positive.
class PagedKvCache {
 public:
  PagedKvCache(const DecoderConfig& c, int num_blocks, int block_size);
  int num_blocks() const noexcept { return num_blocks_; }
  int block_size() const noexcept { return block_size_; }
  // Whether the cache has c's layers, KV heads and head_dim.
  bool fits(const DecoderConfig& c) const noexcept {
    return c.layers == layers_ && c.kv_heads == kv_heads_ && c.head_dim == head_dim_;
  }
  std::uint16_t* k(int layer) noexcept { return k_.data() + layer * layer_elems_; }
  std::uint16_t* v(int layer) noexcept { return v_.data() + layer * layer_elems_; }

 private:
  int num_blocks_, block_size_, layers_, kv_heads_, head_dim_;
  std::size_t layer_elems_;
  DeviceBuffer<std::uint16_t> k_, v_;
};

// One sequence's work in a forward pass. Its input tokens are tokens[src .. src + len) of the
// device token array given to forward(), at positions pos .. pos + len - 1; their K and V go into
// the cache through `block_table` (logical block j of the sequence is physical block
// block_table[j]). A decode step (len 1) attends to positions 0 .. pos from the cache
// (decode_attention_paged); a prefill (len > 1) must start at pos 0 and attends within itself
// (prefill_attention). The greedy next token goes to tokens[dst] and its margin to margins[dst]
// (dst < 0: nowhere).
struct SeqStep {
  int pos = 0;
  int len = 1;
  long src = 0;
  long dst = -1;
  std::span<const int> block_table;
};

class TinyDecoder {
 public:
  // Weights made on the device from `seed` (decoder_tensors), a cuBLAS handle, no workspace yet.
  TinyDecoder(const DecoderConfig& c, std::uint64_t seed);
  ~TinyDecoder();
  TinyDecoder(TinyDecoder&&) noexcept;
  TinyDecoder& operator=(TinyDecoder&&) noexcept;

  const DecoderConfig& config() const noexcept;
  // Sizes the activations for up to `tokens` tokens and `seqs` sequences per forward (forward
  // grows them itself when needed: a cudaMalloc, which a timed loop should not see).
  void reserve(int tokens, int seqs);

  // One forward pass over `steps` (any mix of decode steps and prefills; each sequence appears
  // once): appends their K and V to `cache`, writes each step's greedy token (and margin) at its
  // dst, and when `logits` is not null its logits (fp32, [steps.size()][vocab], in step order).
  // tokens: device, n_tokens ints; margins: device, n_tokens floats, or null. A token id outside
  // [0, vocab) in the device array makes its hidden state NaN (device data is not checked).
  // Throws naming 'steps' (len < 1, a prefill not at position 0, src/dst outside tokens),
  // 'block_table' (too short for pos + len, or an entry outside the cache), 'tokens', 'logits',
  // 'cache' (its layers, KV heads or head_dim not the model's).
  void forward(std::span<const SeqStep> steps, PagedKvCache& cache, int* tokens,
               std::size_t n_tokens, float* margins, float* logits, cudaStream_t stream = nullptr);

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

// Greedy argmax of `rows` rows of fp32 logits (device): tokens[r] = the lowest index of the
// largest value of row r, margins[r] = its margin over the runner-up (greedy_argmax's rule).
// Throws naming 'rows' (negative) or 'vocab' (not positive).
void greedy_argmax_rows(const float* logits, int rows, int vocab, int* tokens, float* margins,
                        cudaStream_t stream = nullptr);

// ---------------------------------------------------------------------------------------------
// The engine: serves a request trace on the GPU with one of the schedulers of host.hpp.
enum class Batching { kStatic, kContinuous };
const char* batching_name(Batching b);  // "static", "continuous"

struct ServeResult {
  // On the engine's clock: it starts at the first arrival and advances by each iteration's GPU
  // time (CUDA events from before its uploads to after its argmax: the kernels and the launch gaps
  // inside the iteration; the host's planning between iterations is not on it), or jumps to the
  // next arrival when idle. Throughput, TTFT and TPOT percentiles as in the simulation.
  SimResult stats;
  std::vector<std::vector<int>> tokens;     // per request (trace order): its output tokens
  std::vector<std::vector<float>> margins;  // their greedy margins (near ties: see Greedy)
  std::vector<float> iteration_ms;          // each iteration's GPU time
  double wall_ms = 0;                       // host wall clock of the whole loop
};

// Prompts from prompt_tokens(request.id, prompt_tokens, vocab); greedy decoding of exactly
// output_tokens tokens per request (no end-of-sequence token); KV in a PagedKvCache of the
// scheduler's blocks (config.kv_blocks, plus max_batch for static batching) of config.block_size
// tokens; a preempted sequence is recomputed (its prompt and generated tokens prefilled again).
// Errors: the schedulers' ('trace', 'config').
ServeResult serve(TinyDecoder& model, const std::vector<Request>& trace,
                  const SchedulerConfig& config, Batching batching, cudaStream_t stream = nullptr);

// The skewed trace at the decoder's scale: skewed_trace(n, seed, rate) with prompt and output
// lengths divided by `divisor` (rounded up; at least 1), so that static batching of a few dozen
// requests runs in well under a second.
std::vector<Request> shrink_trace(std::vector<Request> trace, int divisor);

// What BM_serve/{static,continuous}/skewed serves: 128 requests of skewed_trace (seed 2024)
// shrunk by 4 (prompts median 64; outputs 80% short, mean 16, and 20% of 128-512), all queued at
// t = 0 (an offline batch: throughput, with TTFT as the queueing delay), on 32 slots and a cache
// of 1024 blocks of 16 tokens. tests/ch11 pins the schedulers' iteration counts on it.
std::vector<Request> serve_bench_trace();
SchedulerConfig serve_bench_config();

}  // namespace cudalab::ch11
