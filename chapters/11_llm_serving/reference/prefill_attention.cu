// Prefill (worked example) — causal flash-style attention over the prompt (ch11.hpp).
//
// Prefill is compute-bound (len^2 * head_dim * 4 FLOPs per head against len * head_dim * 6 bytes),
// the opposite of decode. What makes it "flash": the len x len score matrix is never stored. A
// block takes 32 query rows (Br) of one head, walks the key/value tiles of 32 tokens (Bc) up to
// the diagonal (causal: later tiles are all masked, never loaded), and keeps per row the running
// max m, the sum l and the output accumulator, rescaled when m grows — the same online softmax as
// decode (exercise 11.2), applied to a tile of rows at once.
//
// Threads: 128 = 32 rows x 4 lanes. A row's 4 lanes are adjacent in one warp: lane c4 scores keys
// c4, c4 + 4, ... of the tile and accumulates output dimensions c4, c4 + 4, ...; the row max and
// sum are reduced with two shuffles. CUDA cores, fp32: a tensor-core version (mma.sync, as in
// FlashAttention-2) is the stretch goal of the chapter README.
#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include <cmath>
#include <limits>
#include <type_traits>

#include "ch11/ch11.hpp"
#include "cudalab/check.hpp"
#include "cudalab/math.hpp"
#include "vec8.cuh"

namespace cudalab::ch11 {
namespace {

constexpr int kBr = 32, kBc = 32, kThreads = kBr * 4;

using detail::from_float;
using detail::to_float;

template <class T, int D>
__global__ void __launch_bounds__(kThreads)
    prefill_kernel(const T* __restrict__ q, const T* __restrict__ k, const T* __restrict__ v,
                   T* __restrict__ out, int len, int q_heads, int kv_heads, float scale_log2) {
  __shared__ float qs[kBr][D + 1];
  __shared__ T
      ks[kBc][D + 2];  // +2 elements: a row is an odd number of 4-byte words (no conflicts)
  __shared__ T vs[kBc][D];
  __shared__ float ps[kBr][kBc + 1];
  const int q0 = blockIdx.x * kBr, h = blockIdx.y, b = blockIdx.z;
  const int kh = h / (q_heads / kv_heads);
  const int r = threadIdx.x / 4, c4 = threadIdx.x % 4;
  const std::size_t q_stride = static_cast<std::size_t>(q_heads) * D,
                    kv_stride = static_cast<std::size_t>(kv_heads) * D;
  const T* qb = q + static_cast<std::size_t>(b) * len * q_stride + static_cast<std::size_t>(h) * D;
  const T* kb =
      k + static_cast<std::size_t>(b) * len * kv_stride + static_cast<std::size_t>(kh) * D;
  const T* vb =
      v + static_cast<std::size_t>(b) * len * kv_stride + static_cast<std::size_t>(kh) * D;

  for (int idx = threadIdx.x; idx < kBr * D; idx += kThreads) {
    const int rr = idx / D, d = idx % D, i = q0 + rr;
    qs[rr][d] =
        i < len ? to_float(qb[static_cast<std::size_t>(i) * q_stride + d]) * scale_log2 : 0.0f;
  }
  float acc[D / 4];
#pragma unroll
  for (int j = 0; j < D / 4; ++j) acc[j] = 0;
  float m = -INFINITY, l = 0;
  const int row = q0 + r;
  const int last_key = min(len, q0 + kBr) - 1;  // the block's last row sees keys up to itself

  for (int k0 = 0; k0 <= last_key; k0 += kBc) {
    __syncthreads();  // the previous tile's ks, vs (and the first time qs) are done with
    for (int idx = threadIdx.x; idx < kBc * D; idx += kThreads) {
      const int cc = idx / D, d = idx % D, j = k0 + cc;
      const bool in = j < len;
      ks[cc][d] = in ? kb[static_cast<std::size_t>(j) * kv_stride + d] : from_float<T>(0.0f);
      vs[cc][d] = in ? vb[static_cast<std::size_t>(j) * kv_stride + d] : from_float<T>(0.0f);
    }
    __syncthreads();
    float s[kBc / 4];
    float tmax = -INFINITY;
#pragma unroll
    for (int i = 0; i < kBc / 4; ++i) {
      const int cc = c4 + 4 * i, j = k0 + cc;
      float dot = 0;
#pragma unroll 8
      for (int d = 0; d < D; ++d) dot = fmaf(qs[r][d], to_float(ks[cc][d]), dot);
      s[i] = (j <= row && j < len) ? dot : -INFINITY;  // causal mask
      tmax = fmaxf(tmax, s[i]);
    }
    tmax = fmaxf(tmax, __shfl_xor_sync(0xffffffffu, tmax, 1));
    tmax = fmaxf(tmax, __shfl_xor_sync(0xffffffffu, tmax, 2));
    const float m_new = fmaxf(m, tmax);
    const float cf = m_new == -INFINITY ? 1.0f : exp2f(m - m_new);
    float psum = 0;
#pragma unroll
    for (int i = 0; i < kBc / 4; ++i) {
      const float p = m_new == -INFINITY ? 0.0f : exp2f(s[i] - m_new);
      ps[r][c4 + 4 * i] = p;
      psum += p;
    }
    psum += __shfl_xor_sync(0xffffffffu, psum, 1);
    psum += __shfl_xor_sync(0xffffffffu, psum, 2);
    l = l * cf + psum;
    m = m_new;
    __syncwarp();  // row r's probabilities come from its own 4 lanes, all in this warp
#pragma unroll
    for (int j = 0; j < D / 4; ++j) acc[j] *= cf;
    for (int cc = 0; cc < kBc; ++cc) {
      const float p = ps[r][cc];
#pragma unroll
      for (int j = 0; j < D / 4; ++j) acc[j] = fmaf(p, to_float(vs[cc][c4 + 4 * j]), acc[j]);
    }
  }
  if (row < len) {
    T* o = out + (static_cast<std::size_t>(b) * len + row) * q_stride +
           static_cast<std::size_t>(h) * D;
#pragma unroll
    for (int j = 0; j < D / 4; ++j) o[c4 + 4 * j] = from_float<T>(l > 0 ? acc[j] / l : 0.0f);
  }
}

template <class T, int D>
void launch(const void* q, const void* k, const void* v, void* out, const DecodeShape& s, int len,
            cudaStream_t st) {
  const dim3 grid(static_cast<unsigned>(ceil_div(len, kBr)), static_cast<unsigned>(s.q_heads),
                  static_cast<unsigned>(s.batch));
  prefill_kernel<T, D><<<grid, kThreads, 0, st>>>(
      static_cast<const T*>(q), static_cast<const T*>(k), static_cast<const T*>(v),
      static_cast<T*>(out), len, s.q_heads, s.kv_heads, s.scale * 1.4426950408889634f);
  CUDALAB_CHECK_LAUNCH();
}

}  // namespace

bool check_prefill_args(const void* q, const void* k, const void* v, const void* out,
                        const DecodeShape& s, int len) {
  require(s.batch >= 0 && s.batch <= 65535, "batch", "must be in 0..65535 (a grid dimension)");
  require(s.q_heads > 0 && s.q_heads <= 65535, "q_heads", "must be in 1..65535 (a grid dimension)");
  require(s.kv_heads > 0 && s.q_heads % s.kv_heads == 0, "kv_heads",
          "must be positive and divide q_heads");
  require(s.head_dim == 64 || s.head_dim == 128, "head_dim", "must be 64 or 128");
  require(std::isfinite(s.scale), "scale", "must be finite");
  require(len >= 0, "len", "must not be negative");
  if (s.batch == 0 || len == 0) return false;
  const std::size_t nq = static_cast<std::size_t>(s.batch) * len * s.q_heads * s.head_dim;
  const std::size_t nkv = static_cast<std::size_t>(s.batch) * len * s.kv_heads * s.head_dim;
  require_device_pointer(q, nq, "q");
  require_device_pointer(k, nkv, "k");
  require_device_pointer(v, nkv, "v");
  require_device_pointer(out, nq, "out");
  return true;
}

void prefill_attention(const void* q, const void* k, const void* v, void* out, const DecodeShape& s,
                       int len, DType dtype, cudaStream_t stream) {
  if (!check_prefill_args(q, k, v, out, s, len)) return;
  const bool f16 = dtype == DType::kF16;
  if (s.head_dim == 64) {
    if (f16)
      launch<__half, 64>(q, k, v, out, s, len, stream);
    else
      launch<__nv_bfloat16, 64>(q, k, v, out, s, len, stream);
  } else {
    if (f16)
      launch<__half, 128>(q, k, v, out, s, len, stream);
    else
      launch<__nv_bfloat16, 128>(q, k, v, out, s, len, stream);
  }
}

}  // namespace cudalab::ch11
