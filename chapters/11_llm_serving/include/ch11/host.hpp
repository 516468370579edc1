// Chapter 11 — LLM serving, the host side: KV-cache arithmetic, the paged block allocator,
// INT8/FP8 quantization (host reference), the CPU attention oracle and the batching simulator.
//
// Everything here runs on the CPU (CI tests it without a GPU). Bad arguments throw
// std::invalid_argument naming the argument.
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <deque>
#include <map>
#include <span>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

namespace cudalab::ch11 {

// ---------------------------------------------------------------------------------------------
// KV-cache arithmetic.
// A decoder layer keeps, per token, one key and one value vector per KV head: 2 * kv_heads *
// head_dim elements. Grouped-query attention (GQA) shares each KV head among q_heads / kv_heads
// query heads, which divides the cache by that factor (Llama-3-8B: 32 query heads, 8 KV heads).
enum class Precision { kFP32, kFP16, kBF16, kFP8, kINT8 };
double bytes_per_element(Precision p);  // 4, 2, 2, 1, 1

struct ModelConfig {
  std::string name;
  int layers = 0;
  int q_heads = 0;
  int kv_heads = 0;
  int head_dim = 0;
  std::uint64_t parameters = 0;  // total weights (embedding and output layer included)
};
// Published configurations (config.json of each model on the Hugging Face hub).
ModelConfig llama3_8b();   // 32 layers, 32 q heads, 8 KV heads, head_dim 128, 8.03e9 parameters
ModelConfig llama3_70b();  // 80 layers, 64 q heads, 8 KV heads, head_dim 128, 70.6e9 parameters
ModelConfig mistral_7b();  // 32 layers, 32 q heads, 8 KV heads, head_dim 128, 7.24e9 parameters

// Bytes of K and V for one token, all layers.
std::uint64_t kv_bytes_per_token(const ModelConfig& m, Precision kv);
// ... for a sequence of `tokens` tokens.
std::uint64_t kv_bytes_per_sequence(const ModelConfig& m, Precision kv, std::uint64_t tokens);
// Bytes of the weights at a precision.
std::uint64_t weight_bytes(const ModelConfig& m, Precision w);

// A deployment: tensor parallelism over `gpus` GPUs of `gpu_bytes` each, of which
// `reserved_fraction` is kept for activations, the CUDA context and fragmentation.
struct Deployment {
  Precision weights = Precision::kBF16;
  Precision kv = Precision::kBF16;
  int gpus = 1;                    // tensor-parallel degree: KV heads and weights split across GPUs
  std::uint64_t gpu_bytes = 0;     // memory of one GPU
  double reserved_fraction = 0.1;  // in [0, 1)
};
struct KvBudget {
  std::uint64_t weight_bytes_per_gpu = 0;
  std::uint64_t kv_bytes_per_token_per_gpu = 0;  // KV heads per GPU = kv_heads / gpus (at least 1)
  std::uint64_t kv_bytes_per_sequence_per_gpu = 0;
  std::uint64_t free_bytes_per_gpu = 0;  // after weights and the reserve (0 if they do not fit)
  std::uint64_t sequences = 0;           // whole sequences of `context` tokens that fit
  std::uint64_t tokens = 0;              // tokens of KV that fit (the paged cache's capacity)
};
// Throws std::invalid_argument naming 'gpus' when kv_heads is neither a multiple nor a divisor of
// gpus (a KV head cannot be split across GPUs), 'gpu_bytes' when 0, 'context' when 0.
KvBudget kv_budget(const ModelConfig& m, const Deployment& d, std::uint64_t context);

// ---------------------------------------------------------------------------------------------
// Exercise 11.1 — the paged KV block allocator (vLLM's PagedAttention, host side).
// The cache is num_blocks blocks of block_size tokens. A sequence owns a block table: its logical
// block i lives in physical block table[i]. Blocks are shared between sequences (a forked prefix:
// parallel sampling, beam search, a common system prompt) and counted: a block returns to the free
// list when its last reference goes. Writing into a shared block first copies it
// (copy-on-write): the allocator records (src, dst) copies that the cache must perform before the
// next kernel writes (take_copies()).
class CacheFull : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

class BlockAllocator {
 public:
  using SeqId = int;
  // Throws std::invalid_argument naming 'num_blocks' or 'block_size' when not positive.
  BlockAllocator(int num_blocks, int block_size);

  int num_blocks() const noexcept { return num_blocks_; }
  int block_size() const noexcept { return block_size_; }
  int free_blocks() const noexcept { return static_cast<int>(free_.size()); }
  bool has_sequence(SeqId id) const { return seqs_.count(id) != 0; }
  std::size_t num_sequences() const noexcept { return seqs_.size(); }

  // Blocks a sequence of `tokens` tokens needs: ceil(tokens / block_size).
  int blocks_for(std::size_t tokens) const;

  // A new sequence holding `tokens` tokens (its prompt), in fresh blocks. Throws
  // std::invalid_argument naming 'id' if it exists; CacheFull (nothing allocated) when fewer than
  // blocks_for(tokens) blocks are free.
  void add_sequence(SeqId id, std::size_t tokens);
  // One more token at the end of `id`. Needs a fresh block when the last block is full, or when it
  // is shared (copy-on-write: a copy (old, new) is recorded, the old block loses one reference).
  // Throws CacheFull (the sequence unchanged) when a block is needed and none is free; 'id' when
  // unknown.
  void append_token(SeqId id);
  // Whether append_token(id) would succeed now.
  bool can_append(SeqId id) const;
  // `child` becomes a copy of `parent` sharing all its blocks (each gains one reference).
  // Throws naming 'parent' (unknown) or 'child' (exists).
  void fork(SeqId parent, SeqId child);
  // Drops `id`; its blocks lose one reference each, those at zero become free. 'id' when unknown.
  void free_sequence(SeqId id);

  const std::vector<int>& block_table(SeqId id) const;
  std::size_t length(SeqId id) const;
  int ref_count(int block) const;  // 0 for a free block; throws naming 'block' when out of range
  // The copy-on-write copies recorded since the last call (source block, destination block).
  std::vector<std::pair<int, int>> take_copies();

 private:
  struct Seq {
    std::vector<int> table;
    std::size_t length = 0;
  };
  Seq& seq(SeqId id, const char* argument);
  const Seq& seq(SeqId id, const char* argument) const;
  int allocate();  // pops a free block with one reference (precondition: one is free)
  void release(int block);

  int num_blocks_;
  int block_size_;
  std::vector<int> refs_;
  std::vector<int> free_;  // a stack: the most recently freed block is reused first
  std::map<SeqId, Seq> seqs_;
  std::vector<std::pair<int, int>> copies_;
};

// ---------------------------------------------------------------------------------------------
// Quantization, host reference.
// INT8 per-channel symmetric: row r (an output channel) of a rows x cols matrix gets
// scale[r] = max_c |w[r][c]| / 127 and q = round(w / scale) in [-127, 127] (round half away from
// zero; -128 is never used, so the range is symmetric). A row of zeros gets scale 0 and q = 0.
// NaN or infinity in w throws std::invalid_argument naming 'w' (INT8 has no NaN: a silent 0 would
// hide the bug upstream).
struct Int8Matrix {
  int rows = 0, cols = 0;
  std::vector<std::int8_t> q;  // row-major
  std::vector<float> scale;    // one per row
};
Int8Matrix quantize_int8_per_channel(std::span<const float> w, int rows, int cols);
std::vector<float> dequantize(const Int8Matrix& m);

// FP8 (OCP 8-bit floating point, as NVIDIA Hopper implements it):
//   E4M3 ("fn"): bias 7, no infinity, NaN = S.1111.111, largest 448, smallest subnormal 2^-9;
//   E5M2: bias 15, infinities and NaNs like IEEE, largest 57344, smallest subnormal 2^-16.
// Encoding rounds to nearest, ties to even. Out of range (after rounding): with saturate, the
// largest finite value of the sign (infinity too); without, E4M3 gives NaN and E5M2 infinity.
// NaN stays NaN. These match cuda_fp8.h's __nv_cvt_float_to_fp8 (__NV_SATFINITE / __NV_NOSAT),
// which the tests check.
enum class Fp8Format { kE4M3, kE5M2 };
double fp8_max(Fp8Format f);  // 448 or 57344
std::uint8_t float_to_fp8(float x, Fp8Format f, bool saturate = true);
float fp8_to_float(std::uint8_t code, Fp8Format f);
// Per-tensor scaling as cuBLASLt FP8 GEMMs use it: scale = amax / fp8_max (1 when amax is 0),
// codes = fp8(x / scale), saturating. NaN in x throws naming 'x'.
struct Fp8Tensor {
  Fp8Format format = Fp8Format::kE4M3;
  float scale = 1;
  std::vector<std::uint8_t> codes;
};
Fp8Tensor quantize_fp8(std::span<const float> x, Fp8Format f);
std::vector<float> dequantize(const Fp8Tensor& t);

// ---------------------------------------------------------------------------------------------
// The attention oracle (double). One query token per sequence (decode): for query head h,
// kv head kh = h / (q_heads / kv_heads),
//   out[h] = sum_t softmax_t(scale * q[h] . k[kh][t]) v[kh][t]
// q: [q_heads][head_dim]; k, v: [kv_heads][len][head_dim]; returns [q_heads][head_dim].
std::vector<double> decode_attention_oracle(std::span<const float> q, std::span<const float> k,
                                            std::span<const float> v, int q_heads, int kv_heads,
                                            int head_dim, int len, double scale);
// Causal prefill for one sequence: q: [len][q_heads][head_dim]; k, v: [len][kv_heads][head_dim];
// token i attends to tokens 0..i. Returns [len][q_heads][head_dim].
std::vector<double> prefill_attention_oracle(std::span<const float> q, std::span<const float> k,
                                             std::span<const float> v, int q_heads, int kv_heads,
                                             int head_dim, int len, double scale);

// ---------------------------------------------------------------------------------------------
// The split of a decode step (decode_attention_paged_auto, ch11.hpp). The unsplit kernel runs one
// block per (sequence, KV head): batch x kv_heads blocks, each streaming its whole sequence. Too
// few of them leave SMs idle and too few bytes in flight (on the H200, 16 x 8 = 128 blocks for 132
// SMs read 0.39x of a copy's bandwidth; 2 x 8 = 16 blocks 0.05x), so the tokens are cut into
// splits until about kDecodeBlocksPerSm blocks per SM exist: splits = floor(that / blocks) (a
// grid already that full is left whole: 64 x 8 = 512 blocks read 0.97x), every chunk at least
// kMinSplitTokens of the cache's capacity (a chunk's fixed cost, its partial result and the
// combine pass, must stay small beside its bytes), at most kMaxDecodeSplits. On the H200 this gives
// 1, 4 and 33 splits for the three shapes above, the counts its split-K sweep found best (0.97x,
// 0.98x, 0.96x of a copy). Returns at least 1; batch 0 or capacity 0 gives 1.
inline constexpr int kDecodeBlocksPerSm = 4;
inline constexpr int kMinSplitTokens = 256;
inline constexpr int kMaxDecodeSplits = 64;
int plan_decode_splits(int batch, int kv_heads, long long capacity_tokens, int sm_count);

// ---------------------------------------------------------------------------------------------
// Continuous batching, simulated on the CPU with a kernel-cost model.
struct Request {
  int id = 0;
  double arrival_ms = 0;
  int prompt_tokens = 0;
  int output_tokens = 0;  // tokens to generate, >= 1
};
// A skewed trace, the same on every platform for a seed (own generators over std::mt19937_64's
// raw output, whose sequence the standard fixes): Poisson arrivals at `rate_per_s`; prompt
// lengths log-normal (median 256, clipped to [16, 4096]); output lengths 80% short (exponential,
// mean 64, at least 1) and 20% long (uniform in [512, 2048]).
std::vector<Request> skewed_trace(int n, std::uint64_t seed, double rate_per_s);

// The cost of one iteration (one forward pass over the running batch), from what the chapter
// measures: the weights are read once per step (memory-bound GEMVs: weight_bytes / bandwidth)
// unless the batch's tokens make it compute-bound (tokens * flops_per_token / peak); attention
// reads every cached token's KV (kv_bytes_per_token / (kv_efficiency * bandwidth)).
struct CostModel {
  double weight_bytes = 16.06e9;        // Llama-3-8B, bf16
  double flops_per_token = 2 * 8.03e9;  // one multiply-add per weight
  double kv_bytes_per_token = 131072;   // Llama-3-8B, bf16 (kv_bytes_per_token())
  double bandwidth = 4.2e12;            // bytes/s, assumed: about an H200's device copy
  double kv_efficiency = 0.8;           // decode attention's fraction of copy bandwidth (11.2 goal)
  double peak_flops = 600e12;  // dense bf16 GEMM, assumed (cuBLAS's rate: ch06 BM_tc_gemm_cublas)
  // Milliseconds for an iteration that processes `tokens` new tokens (decodes + prompt tokens)
  // and reads `kv_tokens` cached tokens.
  double iteration_ms(long tokens, long kv_tokens) const;
};

struct SchedulerConfig {
  int max_batch = 64;             // sequences in one iteration at most
  int kv_blocks = 4096;           // the KV cache, in blocks
  int block_size = 16;            // tokens per block
  int max_prefill_tokens = 8192;  // prompt tokens admitted per iteration at most (chunking aside)
};

struct SimResult {
  double makespan_ms = 0;  // first arrival to last token
  long output_tokens = 0;
  double throughput_tok_s = 0;              // output tokens per second of makespan
  double ttft_p50_ms = 0, ttft_p99_ms = 0;  // arrival to first token
  double tpot_p50_ms = 0, tpot_p99_ms = 0;  // per output token after the first, per request
  int preemptions = 0;  // sequences evicted for lack of KV blocks (recomputed later)
  int iterations = 0;
  int max_running = 0;                            // the largest batch seen
  std::vector<double> first_token_ms, finish_ms;  // per request (trace order)
};

// Fills makespan, output_tokens, throughput and the percentiles (nearest rank) from
// first_token_ms and finish_ms (both sized like the trace).
void summarize(SimResult& r, const std::vector<Request>& trace);

// The argument checks shared by both simulators (the errors listed below).
void check_simulation_args(const std::vector<Request>& trace, const SchedulerConfig& config);

// The schedulers as objects: the CPU simulation (simulate_*, below) and the GPU engine
// (ch11/decoder.hpp: serve) drive the same policy, iteration by iteration:
//
//   while (!s.done()) {
//     if (!s.ready(now)) { now = s.next_arrival_ms(); continue; }  // idle until an arrival
//     const IterationPlan p = s.plan();   // who is prefilled, who decodes, who is preempted
//     now += <the iteration's cost: the cost model, or the GPU's measured time>;
//     const Progress done = s.complete(); // every computed sequence produced one token
//   }
//
// Sequences are trace indices (SeqId in the allocator). A sequence's KV holds its prompt and the
// tokens it generated except the newest (which the next decode step appends): a prefill covers
// prompt + generated tokens (generated > 0 after a preemption: recompute), a decode step appends
// one token (position kv().length(i) - 1) and reads the whole sequence.
struct IterationPlan {
  std::vector<std::size_t> prefill;    // (re)admitted now, prefilled whole, in admission order
  std::vector<std::size_t> decode;     // one token appended each, in admission order
  std::vector<std::size_t> preempted;  // evicted now (blocks freed, queued again), in order
  long tokens = 0;     // new tokens the cost model charges (prompt + decode tokens; see below)
  long kv_tokens = 0;  // cached tokens the iteration's attention reads (cost model)
  int running = 0;     // sequences holding a batch slot in this iteration
};
// What complete() reports: the sequences whose first token came out of this iteration, and those
// that produced their last one (their blocks are freed).
struct Progress {
  std::vector<std::size_t> first_token, finished;
};

// Exercise 11.5 — iteration-level scheduling (Orca, vLLM): every iteration admits waiting
// sequences while blocks, batch slots and the prefill budget allow, appends one token to every
// running sequence (preempting the most recently admitted one, its KV freed and its tokens
// recomputed later, when the cache is full); complete() retires the finished ones. KV lives in a
// BlockAllocator of config.kv_blocks blocks. Throws std::invalid_argument naming 'trace' when a
// request could never fit the cache alone (prompt + output tokens), 'config' when a field is not
// positive (check_simulation_args).
class ContinuousScheduler {
 public:
  ContinuousScheduler(std::vector<Request> trace, const SchedulerConfig& config);
  bool done() const noexcept { return done_ == trace_.size(); }
  // Queues the requests that arrived by now_ms; whether an iteration can run (something runs or
  // waits).
  bool ready(double now_ms);
  double next_arrival_ms() const;  // of the next request not queued yet (precondition: one is left)
  IterationPlan plan();            // one iteration's decisions (exercise 11.5)
  Progress complete();             // after the iteration: one token per running sequence
  const BlockAllocator& kv() const noexcept { return kv_; }
  int generated(std::size_t i) const { return generated_.at(i); }  // tokens produced so far
  int preemptions() const noexcept { return preemptions_; }
  const std::vector<Request>& trace() const noexcept { return trace_; }
  // What the GPU engine reads: a running sequence's KV length and block table, and the blocks
  // its paged cache needs.
  std::size_t kv_length(std::size_t i) const { return kv_.length(static_cast<int>(i)); }
  const std::vector<int>& block_table(std::size_t i) const {
    return kv_.block_table(static_cast<int>(i));
  }
  int cache_blocks() const noexcept { return config_.kv_blocks; }

 private:
  std::vector<Request> trace_;
  SchedulerConfig config_;
  BlockAllocator kv_;
  int watermark_;                     // blocks kept free for running sequences to grow
  std::vector<int> generated_;        // tokens produced so far (kept across a preemption)
  std::deque<std::size_t> waiting_;   // trace indices; preempted ones go back to the front
  std::vector<std::size_t> running_;  // in admission order: the back is the most recent
  std::size_t next_ = 0, done_ = 0;
  int preemptions_ = 0;
};

// Static batching, the baseline: take up to max_batch arrived requests, each reserving KV for its
// whole prompt + output (a contiguous cache's reservation, in tokens; generous: a real server
// reserves the longest allowed length, not the actual one), prefill them together (no
// max_prefill_tokens budget), decode until the LAST one finishes (finished ones keep their slot),
// then take the next batch. The cost model charges every slot of a decode step (a static batch
// computes its finished sequences' padding too); plan().decode lists only the unfinished ones
// (what the GPU engine computes, which can only favour static batching). The reservation is a
// contiguous cache's, so no BlockAllocator (and no exercise 11.1): each sequence of a batch gets
// the next ceil((prompt + output) / block_size) blocks, all returned when the batch leaves; the
// paged cache needs kv_blocks + max_batch blocks (each sequence rounds up by less than one).
// Errors: as ContinuousScheduler.
class StaticScheduler {
 public:
  StaticScheduler(std::vector<Request> trace, const SchedulerConfig& config);
  bool done() const noexcept { return batch_.empty() && next_ == trace_.size(); }
  bool ready(double now_ms);  // a batch is running, or the next request arrived by now_ms
  double next_arrival_ms() const;
  IterationPlan plan();
  Progress complete();
  int generated(std::size_t i) const { return generated_.at(i); }
  int preemptions() const noexcept { return 0; }
  const std::vector<Request>& trace() const noexcept { return trace_; }
  std::size_t kv_length(std::size_t i) const { return length_.at(i); }  // 0 outside a batch
  const std::vector<int>& block_table(std::size_t i) const { return tables_.at(i); }
  int cache_blocks() const noexcept { return config_.kv_blocks + config_.max_batch; }

 private:
  std::vector<Request> trace_;
  SchedulerConfig config_;
  std::vector<int> generated_;
  std::vector<std::size_t> length_;       // KV tokens of each sequence of the running batch
  std::vector<std::vector<int>> tables_;  // their block tables (empty outside the batch)
  std::vector<std::size_t> batch_;        // the running batch (empty between batches)
  std::size_t next_ = 0;
  int step_ = 0;         // 0: the batch's prefill; s >= 1: its s-th decode step
  int steps_ = 0;        // decode steps of the batch: its longest output - 1
  long kv_charged_ = 0;  // cached tokens the cost model charges (every slot grows every step)
  double now_ = 0;
};

// The loop above, once for the CPU simulation and the GPU engine: `iteration(plan)` runs (or
// charges) one iteration and returns its time in ms. Fills every field of the result
// (summarize).
template <class Scheduler, class Iteration>
SimResult drive(Scheduler& s, Iteration&& iteration) {
  const std::vector<Request>& trace = s.trace();
  SimResult r;
  r.first_token_ms.assign(trace.size(), 0);
  r.finish_ms.assign(trace.size(), 0);
  double now = trace.empty() ? 0 : trace[0].arrival_ms;
  while (!s.done()) {
    if (!s.ready(now)) {
      now = s.next_arrival_ms();  // idle until the next arrival
      continue;
    }
    const IterationPlan p = s.plan();
    now += iteration(p);
    r.max_running = std::max(r.max_running, p.running);
    ++r.iterations;
    const Progress done = s.complete();
    for (std::size_t i : done.first_token) r.first_token_ms[i] = now;
    for (std::size_t i : done.finished) r.finish_ms[i] = now;
  }
  r.preemptions = s.preemptions();
  summarize(r, trace);
  return r;
}

// The CPU simulation: the loop above with the cost model's time per iteration. Errors: as the
// schedulers'.
SimResult simulate_continuous(const std::vector<Request>& trace, const SchedulerConfig& config,
                              const CostModel& cost);
SimResult simulate_static(const std::vector<Request>& trace, const SchedulerConfig& config,
                          const CostModel& cost);

}  // namespace cudalab::ch11
