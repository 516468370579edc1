// Starter track — write your code at the TODO marks; the tests of each exercise
// fail until you do. (Generated from chapters/11_llm_serving/reference/decode_attention.cu by scripts/variants.py.)
// Exercises 11.2 and 11.3 — decode attention over a paged KV cache, a contiguous one, and split-K.
//
// Decode reads the whole KV cache of every sequence for one query token: 2 * len * head_dim
// elements per KV head against about 4 * len * head_dim * group FLOPs. At 2 bytes per element and
// group 4 that is 4 FLOPs per byte, far below the ~200 FLOP/byte an H200 needs to be
// compute-bound: the kernel's speed is the GB/s of KV it reads, and its ceiling is a device copy.
//
// Work decomposition: one block per (sequence, KV head), so each K and V row is read once for the
// whole query group (GQA). A row (head_dim elements) is read by head_dim / 8 lanes, 16 bytes each
// (a "token group"); a block of 4 warps holds 8 (head_dim 128) or 16 (head_dim 64) token groups,
// each walking kUnroll consecutive tokens per step. Each token group keeps its own online-softmax
// state (running max m, sum l, output acc) per query head; the groups are merged through shared
// memory at the end. Scores are pre-multiplied by log2(e), so exp2.
//
// What limits it: not DRAM alone. With 16 warps per SM (128 registers a thread, 4 blocks: batch 64
// x 8 KV heads is then one wave on 132 SMs) every lane converts, multiplies, shuffles and
// exponentiates for each 32 bytes of K and V it reads, and the SM's issue slots run out before
// HBM's bandwidth does unless the loop stays lean and keeps loads in flight while it computes:
// exercise 11.2's design (the reference's choices: `scripts/lab hint 11.2 solution`).
//
// Split-K (flash-decoding): with few sequences, batch * kv_heads blocks leave most SMs idle.
// grid.y cuts each sequence into `splits` chunks; each block writes its unnormalized (m, l, acc)
// to a workspace, and a second kernel combines the chunks with the same rescaling.
#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstdint>
#include <limits>
#include <type_traits>

#include "ch11/ch11.hpp"
#include "cudalab/check.hpp"
#include "cudalab/device.hpp"
#include "cudalab/math.hpp"
#include "vec8.cuh"

namespace cudalab::ch11 {
namespace detail {  // (named: an unused inline member of an unnamed-namespace class is a warning)

// Where sequence b's token t of KV head kh starts (in elements), paged or contiguous. runs(t_begin,
// n) (block-uniform): the n tokens of each run t_begin + k n ... + n - 1 lie in consecutive rows
// (head_dim apart), so that run_row() of the run's first token serves the whole run: always in a
// contiguous cache; in a paged one when no run crosses a page (block_size and t_begin multiples of
// n) and the block size is a power of two (vLLM's 8, 16, 32...: a shift and a mask, no division).
struct PagedAddr {
  const int* tables;
  int max_blocks, block_size, block_shift, kv_heads, head_dim;  // block_shift: log2, -1 if none
  __device__ std::size_t at(int b, int kh, unsigned page, unsigned in_page) const {
    const int blk = __ldg(tables + static_cast<std::size_t>(b) * max_blocks + page);
    return ((static_cast<std::size_t>(blk) * kv_heads + kh) * block_size + in_page) * head_dim;
  }
  __device__ std::size_t row(int b, int kh, int t) const {
    const unsigned page = static_cast<unsigned>(t) / block_size;
    return at(b, kh, page, t - page * block_size);
  }
  __device__ std::size_t run_row(int b, int kh, int t) const {
    return at(b, kh, static_cast<unsigned>(t) >> block_shift, t & (block_size - 1));
  }
  __device__ bool runs(int t_begin, int n) const {
    return block_shift >= 0 && block_size % n == 0 && t_begin % n == 0;
  }
};
struct ContigAddr {
  int max_len, kv_heads, head_dim;
  __device__ std::size_t row(int b, int kh, int t) const {
    return ((static_cast<std::size_t>(b) * kv_heads + kh) * max_len + t) * head_dim;
  }
  __device__ std::size_t run_row(int b, int kh, int t) const { return row(b, kh, t); }
  __device__ bool runs(int, int) const { return true; }
};

}  // namespace detail

namespace {

using detail::ContigAddr;
using detail::PagedAddr;

constexpr int kWarps = 4;
constexpr int kThreads = 32 * kWarps;
[[maybe_unused]] constexpr int kUnroll = 2;  // consecutive tokens a token group takes per step
[[maybe_unused]] constexpr unsigned kFull = 0xffffffffu;

using detail::exp2_ftz;  // vec8.cuh: 2^x in one MUFU.EX2 instruction, exp2_ftz(-inf) = 0

using detail::from_float;
using detail::unpack8;

// kSplit: write (m, l, acc) of chunk blockIdx.y to the workspace instead of the output.
// Workspace: acc [batch][q_heads][splits][D], then ml [batch][q_heads][splits][2].
template <class T, int D, int kMaxG, class Addr, bool kSplit>
__global__ void __launch_bounds__(kThreads, kMaxG <= 4 ? 4 : 2)
    decode_kernel(const T* __restrict__ q, const T* __restrict__ kc, const T* __restrict__ vc,
                  const int* __restrict__ seq_lens, Addr addr, T* __restrict__ out,
                  float* __restrict__ ws, int q_heads, int kv_heads, int group, float scale_log2,
                  int capacity, int split_tokens) {
  constexpr int kLanes = D / 8;                    // lanes per token row (16 bytes each)
  constexpr int kGroups = kWarps * (32 / kLanes);  // token groups per block
  const int b = blockIdx.x / kv_heads, kh = blockIdx.x % kv_heads;
  const int len = min(seq_lens[b], capacity);
  int t_begin = 0, t_end = len;
  if constexpr (kSplit) {  // (64-bit: split_tokens is rounded up, y * split_tokens may pass len)
    const long long first = static_cast<long long>(blockIdx.y) * split_tokens;
    t_begin = static_cast<int>(min(first, static_cast<long long>(len)));
    t_end = static_cast<int>(min(first + split_tokens, static_cast<long long>(len)));
  }
  const int lane = threadIdx.x % 32, warp = threadIdx.x / 32;
  const int sub = lane % kLanes;                         // this lane's 8 of the D dimensions
  const int grp = warp * (32 / kLanes) + lane / kLanes;  // this lane's token group

  float qf[kMaxG][8], acc[kMaxG][8], m[kMaxG], l[kMaxG];
#pragma unroll
  for (int g = 0; g < kMaxG; ++g) {
    m[g] = -INFINITY;
    l[g] = 0;
#pragma unroll
    for (int i = 0; i < 8; ++i) qf[g][i] = acc[g][i] = 0;
    if (g < group) {
      const std::size_t qrow = (static_cast<std::size_t>(b) * q_heads + kh * group + g) * D;
      unpack8<T>(*reinterpret_cast<const uint4*>(q + qrow + sub * 8), qf[g]);
#pragma unroll
      for (int i = 0; i < 8; ++i) qf[g][i] *= scale_log2;
    }
  }

  // TODO(11.2): one pass over this block's tokens [t_begin, t_end) with an online softmax.
  //   Contract: when the loop ends, for every query head g < group of this KV head, the lanes of
  //   token group `grp` hold m[g] (the largest score, log2 domain, of the tokens the group saw;
  //   -INFINITY if none), l[g] = sum of exp2(score - m[g]) and acc[g][0..8) = the same weighted sum
  //   of V over the 8 dimensions this lane owns. Scores: qf (already scaled) . K row.
  //   Constraints: read each K and V row of this KV head once for the whole group, 16 bytes per
  //   lane (uint4), where the Addr functor says the row starts (row(), or run_row() for a whole
  //   run where runs() allows it); fp32 arithmetic; shuffles for the dot product across the
  //   kLanes lanes of a row; no shared memory; no second pass.
  //   Goal: KV GB/s >= 0.8 of a device copy at long contexts (bench/ch11/ch11.toml): few
  //   instructions per KV byte and loads in flight while computing. Hints: scripts/lab hint 11.2
  (void)t_begin, (void)t_end, (void)kc, (void)vc, (void)addr, (void)b, (void)kh, (void)qf;

  // Merge the token groups' states (exercise 11.2's second region).
  __shared__ float sm_m[kGroups][kMaxG], sm_l[kGroups][kMaxG];
  __shared__ float sm_acc[kGroups][kMaxG][D];
#pragma unroll
  for (int g = 0; g < kMaxG; ++g) {
    if (g >= group) break;
    if (sub == 0) {
      sm_m[grp][g] = m[g];
      sm_l[grp][g] = l[g];
    }
#pragma unroll
    for (int i = 0; i < 8; ++i) sm_acc[grp][g][sub * 8 + i] = acc[g][i];
  }
  // The merge below reads the partial results of every warp. A warp barrier orders only the
  // writes of its own warp: the others may not have stored theirs yet, and the merge mixes stale
  // shared memory into the output on some runs only. compute-sanitizer racecheck reports it every
  // time. Fix: a block barrier between the stores and the merge.
  __syncthreads();
  for (int idx = threadIdx.x; idx < group * D; idx += kThreads) {
    const int g = idx / D, d = idx % D;
    // TODO(11.2): the block's softmax state for query head g and dimension d (its maximum mx, its
    //   weight total and its unnormalized output o, the names the stores below read) from the
    //   states the kGroups token groups left in shared memory (sm_m, sm_l, sm_acc: per group and
    //   head, sm_acc also per dimension), equal to fp32 rounding to the state of one group that
    //   had seen all the block's tokens; when no group saw a token: -INFINITY, 0 and 0. fp32.
    float mx = -INFINITY, sum = 0, o = 0;
    const int h = kh * group + g;
    if constexpr (kSplit) {
      const std::size_t slot = (static_cast<std::size_t>(b) * q_heads + h) * gridDim.y + blockIdx.y;
      ws[slot * D + d] = o;
      if (d == 0) {
        float* ml = ws + static_cast<std::size_t>(gridDim.x / kv_heads) * q_heads * gridDim.y * D;
        ml[2 * slot] = mx;
        ml[2 * slot + 1] = sum;
      }
    } else {
      out[(static_cast<std::size_t>(b) * q_heads + h) * D + d] =
          from_float<T>(sum > 0 ? o / sum : 0.0f);
    }
  }
}

// One block per (sequence, query head), one thread per dimension: combine the chunks.
template <class T>
__global__ void combine_kernel(const float* __restrict__ ws, T* __restrict__ out, int rows,
                               int splits, int D) {
  const int row = blockIdx.x;  // b * q_heads + h
  const float* acc = ws + static_cast<std::size_t>(row) * splits * D;
  const float* ml =
      ws + static_cast<std::size_t>(rows) * splits * D + static_cast<std::size_t>(row) * splits * 2;
  for (int d = threadIdx.x; d < D; d += blockDim.x) {
    // TODO(11.3): out[row][d] from the `splits` partial results of this row: chunk s has its max
    //   ml[2 s] (log2 domain, -INFINITY when the chunk was empty), its sum ml[2 s + 1] and its
    //   unnormalized output acc[s * D + d]. The result must equal one pass over all tokens (to
    //   fp32 rounding); a row whose chunks are all empty gives 0.
    //   Constraints: fp32, no division but the last one.
    //   Goal (bench/ch11/ch11.toml): the split-K decode >= 0.8x of a copy's bandwidth over the same
    //   KV bytes at batch 2 x 131072 tokens (best split count); `scripts/lab check 11.3`. Hints:
    //   scripts/lab hint 11.3
    out[static_cast<std::size_t>(row) * D + d] = from_float<T>(acc[d] + ml[0]);
  }
}

void check_shape(const DecodeShape& s) {
  require(s.batch >= 0, "batch", "must not be negative");
  require(s.q_heads > 0, "q_heads", "must be positive");
  require(s.kv_heads > 0 && s.q_heads % s.kv_heads == 0, "kv_heads",
          "must be positive and divide q_heads");
  require(s.q_heads / s.kv_heads <= kMaxGroup, "q_heads",
          "q_heads / kv_heads (the GQA group) must be at most 8");
  require(s.head_dim == 64 || s.head_dim == 128, "head_dim", "must be 64 or 128");
  require(std::isfinite(s.scale), "scale", "must be finite");
  require(static_cast<long long>(s.batch) * s.kv_heads <= std::numeric_limits<int>::max(), "batch",
          "batch * kv_heads blocks exceed the grid limit");
}

void check_aligned(const void* p, const char* argument) {
  require(reinterpret_cast<std::uintptr_t>(p) % 16 == 0, argument,
          "must be 16-byte aligned (vector loads)");
}

void check_paged(const PagedKv& kv, const DecodeShape& s) {
  require(kv.num_blocks > 0, "num_blocks", "must be positive");
  require(kv.block_size > 0, "block_size", "must be positive");
  require(kv.max_blocks_per_seq > 0, "max_blocks_per_seq", "must be positive");
  require(static_cast<long long>(kv.max_blocks_per_seq) * kv.block_size <=
              std::numeric_limits<int>::max(),
          "max_blocks_per_seq", "times block_size must fit in an int");
  const std::size_t cache =
      static_cast<std::size_t>(kv.num_blocks) * s.kv_heads * kv.block_size * s.head_dim;
  require_device_pointer(kv.k_cache, cache, "k_cache");
  require_device_pointer(kv.v_cache, cache, "v_cache");
  check_aligned(kv.k_cache, "k_cache");
  check_aligned(kv.v_cache, "v_cache");
  require_device_pointer(kv.block_tables, static_cast<std::size_t>(s.batch) * kv.max_blocks_per_seq,
                         "block_tables");
  require_device_pointer(kv.seq_lens, static_cast<std::size_t>(s.batch), "seq_lens");
}

PagedAddr paged_addr(const PagedKv& kv, const DecodeShape& s) {
  const auto bs = static_cast<unsigned>(kv.block_size);
  const int shift = std::has_single_bit(bs) ? std::countr_zero(bs) : -1;
  return {kv.block_tables, kv.max_blocks_per_seq, kv.block_size, shift, s.kv_heads, s.head_dim};
}

float log2_scale(float scale) {
  return scale * 1.4426950408889634f;
}

template <class T, int D, int G, class Addr, bool kSplit>
void launch_one(const void* q, const void* k, const void* v, const int* lens, Addr addr, void* out,
                float* ws, const DecodeShape& s, int capacity, int splits, int split_tokens,
                cudaStream_t stream) {
  const dim3 grid(static_cast<unsigned>(s.batch * s.kv_heads), static_cast<unsigned>(splits));
  decode_kernel<T, D, G, Addr, kSplit><<<grid, kThreads, 0, stream>>>(
      static_cast<const T*>(q), static_cast<const T*>(k), static_cast<const T*>(v), lens, addr,
      static_cast<T*>(out), ws, s.q_heads, s.kv_heads, s.q_heads / s.kv_heads, log2_scale(s.scale),
      capacity, split_tokens);
  CUDALAB_CHECK_LAUNCH();
}

template <class Addr, bool kSplit>
void dispatch(const void* q, const void* k, const void* v, const int* lens, Addr addr, void* out,
              float* ws, const DecodeShape& s, DType dtype, int capacity, int splits,
              int split_tokens, cudaStream_t stream) {
  // kMaxG head slots per KV head, the group rounded up to 1, 2, 4 or 8: the token loop works on
  // every slot without a branch (the slots past the group hold q = 0 and are never written out).
  const int group = s.q_heads / s.kv_heads;
  auto go = [&]<class T, int D>(T*, std::integral_constant<int, D>) {
    auto one = [&]<int G>(std::integral_constant<int, G>) {
      launch_one<T, D, G, Addr, kSplit>(q, k, v, lens, addr, out, ws, s, capacity, splits,
                                        split_tokens, stream);
    };
    if (group == 1)
      one(std::integral_constant<int, 1>{});
    else if (group == 2)
      one(std::integral_constant<int, 2>{});
    else if (group <= 4)
      one(std::integral_constant<int, 4>{});
    else
      one(std::integral_constant<int, 8>{});
  };
  auto by_dim = [&]<class T>(T* type) {
    if (s.head_dim == 64)
      go(type, std::integral_constant<int, 64>{});
    else
      go(type, std::integral_constant<int, 128>{});
  };
  if (dtype == DType::kF16)
    by_dim(static_cast<__half*>(nullptr));
  else
    by_dim(static_cast<__nv_bfloat16*>(nullptr));
}

}  // namespace

void decode_attention_paged(const void* q, const PagedKv& kv, void* out, const DecodeShape& shape,
                            DType dtype, cudaStream_t stream) {
  check_shape(shape);
  if (shape.batch == 0) return;
  check_paged(kv, shape);
  const std::size_t n = static_cast<std::size_t>(shape.batch) * shape.q_heads * shape.head_dim;
  require_device_pointer(q, n, "q");
  require_device_pointer(out, n, "out");
  check_aligned(q, "q");
  const PagedAddr addr = paged_addr(kv, shape);
  dispatch<PagedAddr, false>(q, kv.k_cache, kv.v_cache, kv.seq_lens, addr, out, nullptr, shape,
                             dtype, kv.max_blocks_per_seq * kv.block_size, 1, 0, stream);
}

void decode_attention_contiguous(const void* q, const void* k, const void* v, const int* seq_lens,
                                 int max_len, void* out, const DecodeShape& shape, DType dtype,
                                 cudaStream_t stream) {
  check_shape(shape);
  require(max_len > 0, "max_len", "must be positive");
  if (shape.batch == 0) return;
  const std::size_t n = static_cast<std::size_t>(shape.batch) * shape.q_heads * shape.head_dim;
  const std::size_t cache =
      static_cast<std::size_t>(shape.batch) * shape.kv_heads * max_len * shape.head_dim;
  require_device_pointer(q, n, "q");
  require_device_pointer(out, n, "out");
  require_device_pointer(k, cache, "k");
  require_device_pointer(v, cache, "v");
  require_device_pointer(seq_lens, static_cast<std::size_t>(shape.batch), "seq_lens");
  check_aligned(q, "q");
  check_aligned(k, "k");
  check_aligned(v, "v");
  const ContigAddr addr{max_len, shape.kv_heads, shape.head_dim};
  dispatch<ContigAddr, false>(q, k, v, seq_lens, addr, out, nullptr, shape, dtype, max_len, 1, 0,
                              stream);
}

std::size_t split_k_workspace_floats(const DecodeShape& shape, int splits) {
  check_shape(shape);
  require(splits >= 1, "splits", "must be at least 1");
  return static_cast<std::size_t>(shape.batch) * shape.q_heads * splits * (shape.head_dim + 2);
}

void decode_attention_paged_split_k(const void* q, const PagedKv& kv, void* out,
                                    const DecodeShape& shape, DType dtype, int splits,
                                    float* workspace, std::size_t workspace_floats,
                                    cudaStream_t stream) {
  check_shape(shape);
  require(splits >= 1 && splits <= 65535, "splits", "must be in 1..65535 (grid.y)");
  if (shape.batch == 0) return;
  check_paged(kv, shape);
  const std::size_t n = static_cast<std::size_t>(shape.batch) * shape.q_heads * shape.head_dim;
  require_device_pointer(q, n, "q");
  require_device_pointer(out, n, "out");
  check_aligned(q, "q");
  const std::size_t need = split_k_workspace_floats(shape, splits);
  require(workspace_floats >= need, "workspace_floats",
          "is below split_k_workspace_floats(shape, splits)");
  require_device_pointer(workspace, need, "workspace");
  const int capacity = kv.max_blocks_per_seq * kv.block_size;
  // Chunks of a multiple of kUnroll tokens: each group's kUnroll tokens then stay in one page
  // (addr.runs) whenever the block size is a multiple of kUnroll.
  const int split_tokens = static_cast<int>(std::min<long long>(
      round_up<long long>(ceil_div(capacity, splits), kUnroll), std::numeric_limits<int>::max()));
  const PagedAddr addr = paged_addr(kv, shape);
  dispatch<PagedAddr, true>(q, kv.k_cache, kv.v_cache, kv.seq_lens, addr, out, workspace, shape,
                            dtype, capacity, splits, split_tokens, stream);
  const int rows = shape.batch * shape.q_heads;
  if (dtype == DType::kF16)
    combine_kernel<__half><<<rows, shape.head_dim, 0, stream>>>(
        workspace, static_cast<__half*>(out), rows, splits, shape.head_dim);
  else
    combine_kernel<__nv_bfloat16><<<rows, shape.head_dim, 0, stream>>>(
        workspace, static_cast<__nv_bfloat16*>(out), rows, splits, shape.head_dim);
  CUDALAB_CHECK_LAUNCH();
}

int decode_auto_splits(const DecodeShape& shape, const PagedKv& kv) {
  check_shape(shape);
  require(kv.max_blocks_per_seq >= 0 && kv.block_size >= 0, "kv",
          "max_blocks_per_seq and block_size must be >= 0");
  if (shape.batch == 0) return 1;  // nothing to plan: no device queried (a no-op, as elsewhere)
  const long long capacity = static_cast<long long>(kv.max_blocks_per_seq) * kv.block_size;
  return plan_decode_splits(shape.batch, shape.kv_heads, capacity, current_sm_count());
}

std::size_t decode_auto_workspace_floats(const DecodeShape& shape, const PagedKv& kv) {
  const int splits = decode_auto_splits(shape, kv);
  return splits == 1 ? 0 : split_k_workspace_floats(shape, splits);
}

void decode_attention_paged_auto(const void* q, const PagedKv& kv, void* out,
                                 const DecodeShape& shape, DType dtype, float* workspace,
                                 std::size_t workspace_floats, cudaStream_t stream) {
  const int splits = decode_auto_splits(shape, kv);
  if (splits == 1) return decode_attention_paged(q, kv, out, shape, dtype, stream);
  decode_attention_paged_split_k(q, kv, out, shape, dtype, splits, workspace, workspace_floats,
                                 stream);
}

}  // namespace cudalab::ch11
