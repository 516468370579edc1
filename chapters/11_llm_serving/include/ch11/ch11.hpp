// Chapter 11 — LLM serving on the GPU: decode attention over a paged KV cache (and a contiguous
// one, and split-K "flash-decoding"), INT8 weight-only GEMV. The host side (KV arithmetic, block
// allocator, quantization reference, oracles) is in ch11/host.hpp.
//
// Every function takes device pointers and a stream, validates its arguments (std::invalid_argument
// naming the argument) and checks its launches. Sizes are the caller's: any batch, any length.
#pragma once

#include <cuda_runtime_api.h>

#include <cstddef>
#include <cstdint>

#include "ch11/host.hpp"

namespace cudalab::ch11 {

enum class DType { kF16, kBF16 };  // storage of q, K, V and out; accumulation is always fp32

// Shapes of one decode step: `batch` sequences, one query token each.
struct DecodeShape {
  int batch = 0;
  int q_heads = 0;
  int kv_heads = 0;  // divides q_heads; q_heads / kv_heads (the GQA group) at most kMaxGroup
  int head_dim = 0;  // 64 or 128
  float scale = 0;   // softmax scale, usually 1 / sqrt(head_dim)
};
inline constexpr int kMaxGroup = 8;

// The paged cache (vLLM's layout): k_cache and v_cache are [num_blocks][kv_heads][block_size]
// [head_dim]; sequence b's token t lives in block block_tables[b * max_blocks_per_seq +
// t / block_size], row t % block_size. seq_lens[b] in [1, max_blocks_per_seq * block_size] and
// every table entry in [0, num_blocks) are the caller's promise (device data: not checked here).
struct PagedKv {
  const void* k_cache = nullptr;
  const void* v_cache = nullptr;
  const int* block_tables = nullptr;  // [batch][max_blocks_per_seq]
  const int* seq_lens = nullptr;      // [batch]
  int num_blocks = 0;
  int block_size = 0;
  int max_blocks_per_seq = 0;
};

// Exercise 11.2 — out[b][h] = softmax(scale * q[b][h] . K[b][h / group]) V[b][h / group] over the
// sequence's seq_lens[b] tokens. q, out: [batch][q_heads][head_dim]. One pass over K and V (online
// softmax), each KV head read once for its whole query group.
void decode_attention_paged(const void* q, const PagedKv& kv, void* out, const DecodeShape& shape,
                            DType dtype, cudaStream_t stream = nullptr);

// The same over a contiguous cache: k, v: [batch][kv_heads][max_len][head_dim].
void decode_attention_contiguous(const void* q, const void* k, const void* v, const int* seq_lens,
                                 int max_len, void* out, const DecodeShape& shape, DType dtype,
                                 cudaStream_t stream = nullptr);

// Exercise 11.3 — split-K (flash-decoding): each sequence's tokens are cut into `splits` chunks
// handled by separate blocks (partial max, sum and output in fp32 in `workspace`), then combined.
// For a few long sequences, where batch * kv_heads blocks cannot fill the GPU.
// workspace: at least split_k_workspace_floats(shape, splits) floats.
std::size_t split_k_workspace_floats(const DecodeShape& shape, int splits);
void decode_attention_paged_split_k(const void* q, const PagedKv& kv, void* out,
                                    const DecodeShape& shape, DType dtype, int splits,
                                    float* workspace, std::size_t workspace_floats,
                                    cudaStream_t stream = nullptr);

// Decode over the paged cache with the split chosen for this GPU: plan_decode_splits (host.hpp)
// for batch x kv_heads blocks, the cache's capacity (max_blocks_per_seq x block_size tokens) and
// the current device's SM count. One split runs decode_attention_paged (workspace unused, may be
// null), more run decode_attention_paged_split_k in `workspace`, of at least
// decode_auto_workspace_floats(shape, kv) floats (0 when one split is planned).
int decode_auto_splits(const DecodeShape& shape, const PagedKv& kv);
std::size_t decode_auto_workspace_floats(const DecodeShape& shape, const PagedKv& kv);
void decode_attention_paged_auto(const void* q, const PagedKv& kv, void* out,
                                 const DecodeShape& shape, DType dtype, float* workspace,
                                 std::size_t workspace_floats, cudaStream_t stream = nullptr);

// Prefill (worked example): causal attention over a whole prompt, flash-style — tiles of 32
// queries against tiles of 32 keys in shared memory, an online softmax per query row, the
// len x len score matrix never written to memory. shape.batch sequences of `len` tokens each;
// q, out: [batch][len][q_heads][head_dim]; k, v: [batch][len][kv_heads][head_dim]. Token i attends
// to tokens 0..i of its own sequence.
void prefill_attention(const void* q, const void* k, const void* v, void* out,
                       const DecodeShape& shape, int len, DType dtype,
                       cudaStream_t stream = nullptr);
// The argument checks of that contract, shared by both prefill kernels (which of q, k, v, out,
// shape or len is wrong, by name); false when there is nothing to compute (no sequence or no
// token).
bool check_prefill_args(const void* q, const void* k, const void* v, const void* out,
                        const DecodeShape& shape, int len);
// The same contract on tensor cores (worked example, flash_prefill.cu: FlashAttention-2's design on
// mma.sync, sm_80 and up), for head_dim 64 or 128; additionally q, k, v and out 16-byte aligned
// (as cudaMalloc returns them) and len at most 65535 query tiles of 64 (grid.y).
void flash_prefill_attention(const void* q, const void* k, const void* v, void* out,
                             const DecodeShape& shape, int len, DType dtype,
                             cudaStream_t stream = nullptr);
// The same contract on Hopper (worked example, flash_prefill_wgmma.cu: FlashAttention-3's design,
// TMA + wgmma + warp specialization, sm_90a only), additionally shape.scale > 0 and len at most
// 65535 query tiles of 128. Throws std::runtime_error on any other GPU (see the next function).
void flash_prefill_attention_wgmma(const void* q, const void* k, const void* v, void* out,
                                   const DecodeShape& shape, int len, DType dtype,
                                   cudaStream_t stream = nullptr);
// Whether the current device runs it: a GPU of compute capability exactly 9.0 (H100, H200).
bool flash_prefill_wgmma_supported();

// Exercise 11.4 — INT8 weight-only GEMV: y[r] = scale[r] * sum_c q[r][c] * x[c] with q the
// per-channel INT8 weights (rows x cols, row-major; host.hpp's quantize_int8_per_channel), x and
// y fp16. Dequantizes in the kernel: half the bytes of an fp16 GEMV, which is memory-bound.
void gemv_int8_weight_only(const std::int8_t* q, const float* scale, const void* x, void* y,
                           int rows, int cols, cudaStream_t stream = nullptr);
// The fp16 baseline: y = W x, W fp16 rows x cols row-major, fp32 accumulation.
void gemv_fp16(const void* w, const void* x, void* y, int rows, int cols,
               cudaStream_t stream = nullptr);

// Inputs made on the device (benchmarks: gigabytes of KV cache): element i of `out` is
// random_at(seed, i, dtype, lo, hi), the hash of common/device_fill.hpp rounded to dtype, so a host
// check recomputes any element without copying the cache back. Synchronous (like
// uniform_device_buffer): finished when it returns.
// Element i is drawn in chunk i / kFillChunk with seed + that chunk's index (one float buffer of
// kFillChunk elements on the device). random_at is host code (cpu/oracle.cpp): the CPU oracles
// use it without a GPU.
inline constexpr std::size_t kFillChunk = std::size_t{1} << 28;
void fill_random(void* out, std::size_t n, std::uint64_t seed, DType dtype, float lo, float hi);
float random_at(std::uint64_t seed, std::size_t i, DType dtype, float lo, float hi);

}  // namespace cudalab::ch11
