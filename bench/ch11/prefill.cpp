// Chapter 11 benchmarks, prefill: causal flash attention over one prompt (q_heads 32, kv_heads 8,
// head_dim 128 unless the row says d64; rows: decode_attention.cpp's header):
//   BM_prefill/b1_len<len>          prefill_attention (fp32 on CUDA cores)
//   BM_prefill_tc/b1_len<len>       flash_prefill_attention (mma.sync tensor cores)
//   BM_prefill_tc/d64_b1_len<len>   the same at head_dim 64, where the launcher's row plan
//                                   (prefill_plan.hpp) switches to 32 rows a warp on large grids
//   BM_prefill_wgmma/<as _tc>       flash_prefill_attention_wgmma (Hopper: TMA + wgmma; an error
//                                   row on any other GPU, with its reason)
//   BM_prefill_cudnn/<as _tc>       cuDNN's fused attention (CudnnSdpa, cudnn_sdpa.hpp: the backend
//                                   graph API) on the same shapes, buffers, check and FLOP count:
//                                   the tensor-core rows' yardstick (an error row without cuDNN, or
//                                   when cuDNN has no plan, with its reason)
// The ratios and speed goals are declared in bench/ch11/ch11.toml.
#include <cuda_fp16.h>

#include <cmath>
#include <cstddef>
#include <cstdint>
#include <exception>
#include <string>
#include <vector>

#include "ch11/ch11.hpp"
#include "ch11/cudnn_sdpa.hpp"
#include "ch11_bench.hpp"
#include "cudalab/bench.hpp"
#include "cudalab/check.hpp"
#include "cudalab/memory.hpp"

using namespace cudalab;
using namespace cudalab::ch11;
using namespace cudalab::bench_ch11;

namespace {

using PrefillFn = void (*)(const void*, const void*, const void*, void*, const DecodeShape&, int,
                           DType, cudaStream_t);

// One sequence, kQHeads query heads over kKvHeads key/value heads of `dim`, scale 1 / sqrt(dim).
DecodeShape prefill_shape(std::size_t dim) {
  return {1, kQHeads, kKvHeads, static_cast<int>(dim), 1.0f / std::sqrt(static_cast<float>(dim))};
}

// tol: the tests' fp16 bound for the kernel (tests/ch11/test_prefill.cpp: 1e-3 for the fp32
// kernel, 2e-3 for the tensor-core one, which also rounds the softmax weights to 16 bits).
// kernel: the row's family name, which keys its check (bench::verify keeps one verdict per key for
// the process: a key shared by two kernels or two head dims would check only the first row).
void BM_prefill(benchmark::State& state, const char* kernel, PrefillFn prefill, int len, double tol,
                std::size_t dim = kDim) {
  const DecodeShape shape = prefill_shape(dim);
  const std::size_t nq = static_cast<std::size_t>(len) * kQHeads * dim,
                    nkv = static_cast<std::size_t>(len) * kKvHeads * dim;
  DeviceBuffer<std::uint16_t> q(nq), k(nkv), v(nkv), out(nq);
  fill_random(q.data(), nq, kSeedQ, kType, -1, 1);
  fill_random(k.data(), nkv, kSeedK, kType, -1, 1);
  fill_random(v.data(), nkv, kSeedV, kType, -1, 1);
  auto work = [&](cudaStream_t st) {
    prefill(q.data(), k.data(), v.data(), out.data(), shape, len, kType, st);
  };
  // Checked rows: the first, a middle and the last query, every head, against the decode oracle
  // over that query's keys 0..i (a causal row is one decode step; the whole prefill oracle would
  // take minutes at len 4096).
  const std::string key =
      std::string(kernel) + "/d" + std::to_string(dim) + "_len" + std::to_string(len);
  if (!bench::verify(state, key, [&] {
        work(nullptr);
        CUDALAB_CHECK(cudaDeviceSynchronize());
        const auto got = bench::download(out.data(), out.size());
        for (int i : {0, len / 2 + 1, len - 1}) {
          const std::size_t keys = static_cast<std::size_t>(i) + 1;
          std::vector<float> qi(static_cast<std::size_t>(kQHeads) * dim),
              ki(static_cast<std::size_t>(kKvHeads) * keys * dim), vi(ki.size());
          for (std::size_t e = 0; e < qi.size(); ++e)
            qi[e] = random_at(kSeedQ, static_cast<std::size_t>(i) * qi.size() + e, kType, -1, 1);
          for (std::size_t kh = 0; kh < kKvHeads;
               ++kh)  // [token][kv head][dim] -> [kv head][token][dim]
            for (std::size_t j = 0; j < keys; ++j)
              for (std::size_t e = 0; e < dim; ++e) {
                const std::size_t src = (j * kKvHeads + kh) * dim + e,
                                  dst = (kh * keys + j) * dim + e;
                ki[dst] = random_at(kSeedK, src, kType, -1, 1);
                vi[dst] = random_at(kSeedV, src, kType, -1, 1);
              }
          const std::vector<double> want =
              decode_attention_oracle(qi, ki, vi, kQHeads, kKvHeads, static_cast<int>(dim),
                                      static_cast<int>(keys), shape.scale);
          for (std::size_t e = 0; e < want.size(); ++e) {
            __half_raw r;
            r.x = got[static_cast<std::size_t>(i) * want.size() + e];
            const double g = __half2float(__half(r));
            if (std::fabs(g - want[e]) > tol)
              return key + ": query " + std::to_string(i) + ", head " + std::to_string(e / dim) +
                     ", dim " + std::to_string(e % dim) + ": " + std::to_string(g) + ", want " +
                     std::to_string(want[e]);
          }
        }
        return std::string();
      }))
    return;
  // QK^T and PV over the causal half: 2 * 2 * head_dim FLOPs per (query, key) pair and head.
  bench::run(state, work, {.flops = 4.0 * dim * kQHeads * (0.5 * len * (len + 1.0))});
}

// cuDNN's fused attention as a PrefillFn: one object for the process (its plans are built once per
// shape), never destroyed (a cuDNN handle released after the CUDA runtime has shut down at exit
// fails).
CudnnSdpa& sdpa() {
  static auto* s = new CudnnSdpa;
  return *s;
}
void cudnn_prefill(const void* q, const void* k, const void* v, void* out, const DecodeShape& shape,
                   int len, DType dtype, cudaStream_t stream) {
  sdpa().run(q, k, v, out, shape, len, dtype, stream);
}

// The plan is built before the row's check and timing (a runtime-compiled engine takes about a
// second); the row's label names the engine cuDNN chose. Tolerance: the tensor-core kernel's (cuDNN
// also rounds the softmax weights to 16 bits before P V).
void BM_prefill_cudnn(benchmark::State& state, int len, std::size_t dim) {
  if (!have_cudnn()) {
    state.SkipWithError("built without cuDNN 9 (CUDALAB_HAVE_CUDNN=OFF)");
    return;
  }
  const DecodeShape shape = prefill_shape(dim);
  try {
    state.SetLabel(sdpa().prepare(shape, len, kType));
  } catch (const std::exception& e) {
    state.SkipWithError(e.what());
    return;
  }
  BM_prefill(state, "BM_prefill_cudnn", cudnn_prefill, len, 2e-3, dim);
}

// The Hopper kernel: an error row where it cannot run (its reason), else as the others.
void BM_prefill_wgmma(benchmark::State& state, int len, std::size_t dim) {
  if (!flash_prefill_wgmma_supported()) {
    state.SkipWithError("flash_prefill_attention_wgmma needs compute capability 9.0 (sm_90a)");
    return;
  }
  BM_prefill(state, "BM_prefill_wgmma", flash_prefill_attention_wgmma, len, 2e-3, dim);
}

using bench::add;  // cudalab/bench.hpp

[[maybe_unused]] const bool kRegistered = [] {
  for (int len : {1024, 4096})
    add("BM_prefill/b1_len" + std::to_string(len), [len](benchmark::State& st) {
      BM_prefill(st, "BM_prefill", prefill_attention, len, 1e-3);
    });
  for (int len : {1024, 4096, 16384})
    add("BM_prefill_tc/b1_len" + std::to_string(len), [len](benchmark::State& st) {
      BM_prefill(st, "BM_prefill_tc", flash_prefill_attention, len, 2e-3);
    });
  for (int len : {1024, 4096})
    add("BM_prefill_tc/d64_b1_len" + std::to_string(len), [len](benchmark::State& st) {
      BM_prefill(st, "BM_prefill_tc", flash_prefill_attention, len, 2e-3, 64);
    });
  for (int len : {1024, 4096, 16384})
    add("BM_prefill_wgmma/b1_len" + std::to_string(len),
        [len](benchmark::State& st) { BM_prefill_wgmma(st, len, kDim); });
  for (int len : {1024, 4096})
    add("BM_prefill_wgmma/d64_b1_len" + std::to_string(len),
        [len](benchmark::State& st) { BM_prefill_wgmma(st, len, 64); });
  for (int len : {1024, 4096, 16384})
    add("BM_prefill_cudnn/b1_len" + std::to_string(len),
        [len](benchmark::State& st) { BM_prefill_cudnn(st, len, kDim); });
  for (int len : {1024, 4096})
    add("BM_prefill_cudnn/d64_b1_len" + std::to_string(len),
        [len](benchmark::State& st) { BM_prefill_cudnn(st, len, 64); });
  return true;
}();

}  // namespace
