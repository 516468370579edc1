// Starter track — write your code at the TODO marks; the tests of each exercise
// fail until you do. (Generated from chapters/06_libraries/reference/gemm_skinny.cu by scripts/variants.py.)
// The skinny path of gemm_bias_relu_fused (worked example): Y = relu(A B + bias) for few rows
// (M <= kSkinnyMaxRows, ch06/fused.hpp), the shape of a decode step (a batch of 32 tokens
// against a 4096 x 4096 weight).
//
// Why step 7's tiles fail here: at 32 x 4096 x 4096 the 128 x 128 grid has 32 blocks for 132 SMs
// and three quarters of each tile multiply rows of zeros; the work is reading B (64 MiB) once,
// at DRAM speed, with every SM pulling its share.
//
//   grid (ceil(N / 32), ceil(M / 32)): one block per 32-column slab of B and 32 rows of A (at
//   N = 4096, 128 blocks: about one per SM), 256 threads = 4 K groups of 64 threads
//   thread (g, tm, tn): group g takes k in [32 g, 32 g + 32) of every 128-k chunk; the thread
//   owns the 4 x 4 outputs rows 4 tm .. 4 tm + 3, columns 4 tn .. 4 tn + 3 of the block tile
//   shared memory per stage: A (32 rows x 128 k, pitch 132) and B (128 k x 32 columns, pitch 36)
//   floats; 3 stages = 103.5 KiB (2 where the device's opt-in limit is lower: sm_86 / sm_89)
//
// The pipeline: cp.async copies (16-byte when A's and B's rows allow it, else one element each)
// into a ring of stages, one commit group per chunk, two chunks in flight while one is computed.
// Each group reads its k range of the stage: per 4 k, 4 LDS.128 of A (4 rows x 4 k; the 8
// threads of a quarter-warp read the same address, a broadcast) and 4 LDS.128 of B (4 k x 4
// columns; 128 contiguous bytes a quarter-warp) for 64 FMAs. After the last chunk the 4 groups'
// partial sums meet in shared memory (the ring's first 16 KiB), each thread adds 4 of them per
// output and applies the epilogue (BiasRelu: exercise 6.6's, sgemm_common.cuh) in one store.
// Edges: a copy outside A or B (row >= M, k >= K, column >= N) writes zeros (cp.async src-size 0),
// so partial chunks and tiles add 0 * 0; the store is guarded. Any M, N > 0, K >= 0, alignment.
//
// Measured: the chapter README's results block (BM_gemm_bias_relu/fused/32x4096x4096 beside
// cublas_then_kernel); what bounds it is section 5's question for Nsight Compute.

#include <cstdint>

#include "ch06/fused.hpp"
#include "cudalab/check.hpp"
#include "cudalab/cp_async.cuh"
#include "cudalab/launch.hpp"
#include "cudalab/math.hpp"
#include "sgemm_common.cuh"
#include "sgemm_steps.hpp"

namespace cudalab::ch06::detail {
namespace {

template <int Stages>
struct SkinnyConfig {
  static constexpr int kBM = 32, kBN = 32;  // block tile; 4 x 4 outputs a thread
  static constexpr int kGroups = 4, kGroupK = 32;
  static constexpr int kThreads = kGroups * 64;
  static constexpr int kChunk = kGroups * kGroupK;  // k per stage
  static constexpr int kApitch = kChunk + 4;        // 16-byte rows, 4 tm rows in distinct banks
  static constexpr int kBpitch = kBN + 4;
  static constexpr int kAFloats = kBM * kApitch, kBFloats = kChunk * kBpitch;
  static constexpr int kStageFloats = kAFloats + kBFloats;
  static constexpr int kStages = Stages;
  static constexpr int kSmemBytes = kStages * kStageFloats * static_cast<int>(sizeof(float));
  static_assert(kSmemBytes >= kGroups * kBM * kBN * static_cast<int>(sizeof(float)),
                "the groups' partial sums reuse the ring");
};

template <class C, bool kVec, class Epilogue>
__global__ void __launch_bounds__(C::kThreads, 1) gemm_skinny_kernel(SgemmArgs a, Epilogue epi) {
  extern __shared__ __align__(16) float smem[];
  const int t = threadIdx.x, g = t / 64, tm = (t % 64) / 8, tn = t % 8;
  const int col0 = blockIdx.x * C::kBN, row0 = blockIdx.y * C::kBM;
  const int chunks = a.K == 0 ? 0 : (a.K - 1) / C::kChunk + 1;

  // Chunk c into stage s: A rows row0 .. row0 + 31, k in [c * kChunk, +kChunk); B the same k rows,
  // columns col0 .. col0 + 31. Comparisons as differences (kk < K - k0): no int overflow near 2^31.
  auto issue = [&](int c, int s) {
    float* As = smem + s * C::kStageFloats;
    float* Bs = As + C::kAFloats;
    const int k0 = c * C::kChunk, k_left = a.K - k0;
    if constexpr (kVec) {  // K % 4 == 0 and N % 4 == 0: a 16-byte piece is all in or all out
      for (int v = t; v < C::kBM * C::kChunk / 4; v += C::kThreads) {
        const int r = v / (C::kChunk / 4), kk = v % (C::kChunk / 4) * 4;
        const bool in = row0 + r < a.M && kk < k_left;
        cp_async_16(As + r * C::kApitch + kk, in ? a.A + at(row0 + r, k0 + kk, a.K) : a.A, in);
      }
      for (int v = t; v < C::kChunk * C::kBN / 4; v += C::kThreads) {
        const int kk = v / (C::kBN / 4), cc = v % (C::kBN / 4) * 4;
        const bool in = kk < k_left && col0 + cc < a.N;
        cp_async_16(Bs + kk * C::kBpitch + cc, in ? a.B + at(k0 + kk, col0 + cc, a.N) : a.B, in);
      }
    } else {
      for (int v = t; v < C::kBM * C::kChunk; v += C::kThreads) {
        const int r = v / C::kChunk, kk = v % C::kChunk;
        const bool in = row0 + r < a.M && kk < k_left;
        cp_async_4(shared_address(As + r * C::kApitch + kk),
                   in ? a.A + at(row0 + r, k0 + kk, a.K) : a.A, in);
      }
      for (int v = t; v < C::kChunk * C::kBN; v += C::kThreads) {
        const int kk = v / C::kBN, cc = v % C::kBN;
        const bool in = kk < k_left && col0 + cc < a.N;
        cp_async_4(shared_address(Bs + kk * C::kBpitch + cc),
                   in ? a.B + at(k0 + kk, col0 + cc, a.N) : a.B, in);
      }
    }
  };

  float acc[4][4] = {};
  // One commit group per chunk (an empty one past the last), so group c is always chunk c.
#pragma unroll
  for (int s = 0; s < C::kStages - 1; ++s) {
    if (s < chunks) issue(s, s);
    cp_async_commit();
  }
  for (int c = 0; c < chunks; ++c) {
    cp_async_wait<C::kStages - 2>();  // this thread's copies of chunk c have landed
    __syncthreads();  // everyone's have, and everyone has finished chunk c - 1 (its stage is free)
    if (c + C::kStages - 1 < chunks) issue(c + C::kStages - 1, (c + C::kStages - 1) % C::kStages);
    cp_async_commit();
    const float* As = smem + (c % C::kStages) * C::kStageFloats;
    const float* Bs = As + C::kAFloats;
#pragma unroll
    for (int kk = 0; kk < C::kGroupK; kk += 4) {
      const int k = g * C::kGroupK + kk;
      float4 av[4], bv[4];
#pragma unroll
      for (int i = 0; i < 4; ++i)
        av[i] = *reinterpret_cast<const float4*>(As + (4 * tm + i) * C::kApitch + k);
#pragma unroll
      for (int j = 0; j < 4; ++j)
        bv[j] = *reinterpret_cast<const float4*>(Bs + (k + j) * C::kBpitch + 4 * tn);
#pragma unroll
      for (int i = 0; i < 4; ++i) {
        const float ai[4] = {av[i].x, av[i].y, av[i].z, av[i].w};
#pragma unroll
        for (int j = 0; j < 4; ++j) {
          acc[i][0] = fmaf(ai[j], bv[j].x, acc[i][0]);
          acc[i][1] = fmaf(ai[j], bv[j].y, acc[i][1]);
          acc[i][2] = fmaf(ai[j], bv[j].z, acc[i][2]);
          acc[i][3] = fmaf(ai[j], bv[j].w, acc[i][3]);
        }
      }
    }
  }
  cp_async_wait<0>();  // only empty groups remain; nothing in flight into the ring reused below
  __syncthreads();     // every group has finished reading the ring

  // The groups' partial sums: part[g][row][col] (row-major 32 x 32 per group), then each thread
  // finishes 4 outputs (a warp: 32 consecutive columns of a row, one 128-byte store).
  float* part = smem;
#pragma unroll
  for (int i = 0; i < 4; ++i)
    *reinterpret_cast<float4*>(part + (g * C::kBM + 4 * tm + i) * C::kBN + 4 * tn) =
        make_float4(acc[i][0], acc[i][1], acc[i][2], acc[i][3]);
  __syncthreads();
  for (int o = t; o < C::kBM * C::kBN; o += C::kThreads) {
    const int r = o / C::kBN, cc = o % C::kBN;
    float sum = 0.0f;
#pragma unroll
    for (int q = 0; q < C::kGroups; ++q) sum += part[q * C::kBM * C::kBN + o];
    const int row = row0 + r, col = col0 + cc;
    if (row < a.M && col < a.N) store1(a.C + at(row, 0, a.N), col, a.N, sum, epi);
  }
}

template <class C, class Epilogue>
void launch_skinny(const SgemmArgs& a, const Epilogue& epi, cudaStream_t stream) {
  const bool vec = rows_are_float4(a.A, a.K) && rows_are_float4(a.B, a.N);
  auto kernel =
      vec ? gemm_skinny_kernel<C, true, Epilogue> : gemm_skinny_kernel<C, false, Epilogue>;
  set_kernel_attribute_once(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, C::kSmemBytes);
  const dim3 grid(ceil_div(a.N, C::kBN), ceil_div(a.M, C::kBM));
  kernel<<<grid, C::kThreads, C::kSmemBytes, stream>>>(a, epi);
  CUDALAB_CHECK_LAUNCH();
}

}  // namespace

void gemm_skinny_bias_relu(const SgemmArgs& a, const float* bias, cudaStream_t stream) {
  // Three stages where the device lets a block opt in to their 103.5 KiB (sm_80, sm_90), two
  // elsewhere (sm_86 and sm_89 allow 99 KiB).
  int device = 0, optin = 0;
  CUDALAB_CHECK(cudaGetDevice(&device));
  CUDALAB_CHECK(cudaDeviceGetAttribute(&optin, cudaDevAttrMaxSharedMemoryPerBlockOptin, device));
  if (optin >= SkinnyConfig<3>::kSmemBytes)
    launch_skinny<SkinnyConfig<3>>(a, BiasRelu{bias}, stream);
  else
    launch_skinny<SkinnyConfig<2>>(a, BiasRelu{bias}, stream);
}

}  // namespace cudalab::ch06::detail
