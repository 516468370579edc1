// The lesson's tensor-parallel GEMM (no exercise): the two ways to shard a linear layer, with the
// collective each needs. Column split: each rank owns output columns, so the GEMMs are independent
// and an all-gather assembles C (Megatron's first GEMM of an MLP, whose outputs feed an
// element-wise activation that needs no gather at all). Row split: each rank owns a slice of the
// inner dimension, so each produces a full-size partial C and an all-reduce sums them (Megatron's
// second GEMM: its input arrives already split by columns from the first).
#include <string>
#include <vector>

#include "ch08/ch08.hpp"
#include "ch08/tensor_parallel.hpp"
#include "cudalab/check.hpp"
#include "cudalab/cublas.hpp"
#include "cudalab/device_guard.hpp"

namespace cudalab::ch08 {
namespace {

void require_tp(std::span<const float* const> a, std::span<const float* const> b,
                std::span<float* const> c, int m, int n, int k, const TpRanks& ranks) {
  require(!c.empty(), "c", "needs at least one rank");
  const std::size_t r = c.size();
  require(a.size() == r, "a", "needs one pointer per rank");
  require(b.size() == r, "b", "needs one pointer per rank");
  require(ranks.devices.size() == r, "ranks", "needs one device per rank");
  require(ranks.streams.size() == r, "ranks", "needs one stream per rank");
  require(ranks.handles.size() == r, "ranks", "needs one cuBLAS handle per rank");
  require(m >= 0, "m", "must be >= 0");
  require(n >= 0, "n", "must be >= 0");
  require(k >= 0, "k", "must be >= 0");
  const int available = device_count();
  for (std::size_t i = 0; i < r; ++i) {
    require(ranks.devices[i] >= 0 && ranks.devices[i] < available, "ranks",
            "names a device that does not exist");
    require(ranks.handles[i] != nullptr, "ranks", "a cuBLAS handle is null");
    require_device_pointer(a[i], std::size_t(m) * k, "a");
    require_device_pointer(b[i], std::size_t(k) * n, "b");
    require_device_pointer(c[i], std::size_t(m) * n, "c");
  }
}

// C(m x cols) = A(m x inner, lda) B(inner x cols, ldb), beta = 0, on the rank's stream.
void gemm(cublasHandle_t h, cudaStream_t s, const float* a, int lda, const float* b, int ldb,
          float* c, int m, int cols, int inner) {
  CUDALAB_CHECK_CUBLAS(cublasSetStream(h, s));
  const float one = 1.0f, zero = 0.0f;
  CUDALAB_CHECK_CUBLAS(
      cublasSgemm(h, CUBLAS_OP_N, CUBLAS_OP_N, m, cols, inner, &one, a, lda, b, ldb, &zero, c, m));
}

}  // namespace

void tp_gemm_columns(std::span<const float* const> a, std::span<const float* const> b,
                     std::span<float* const> c, int m, int n, int k, const TpRanks& ranks) {
  require_tp(a, b, c, m, n, k, ranks);
  if (m == 0 || n == 0) return;
  const int size = static_cast<int>(c.size());
  const DeviceGuard guard;
  std::vector<cudaEvent_t> done(size, nullptr);
  try {
    for (int r = 0; r < size; ++r) {
      CUDALAB_CHECK(cudaSetDevice(ranks.devices[r]));
      CUDALAB_CHECK(cudaEventCreateWithFlags(&done[r], cudaEventDisableTiming));
      const Chunk cols = ring_chunk(static_cast<std::size_t>(n), size, r);
      float* out = c[r] + cols.offset * m;
      if (cols.count > 0 && k > 0) {
        gemm(ranks.handles[r], ranks.streams[r], a[r], m, b[r] + cols.offset * k, k, out, m,
             static_cast<int>(cols.count), k);
      } else if (cols.count > 0) {  // k = 0: the product is zero
        CUDALAB_CHECK(cudaMemsetAsync(out, 0, cols.count * m * sizeof(float), ranks.streams[r]));
      }
      CUDALAB_CHECK(cudaEventRecord(done[r], ranks.streams[r]));
    }
    // The all-gather: rank r pulls every other rank's columns once that rank's GEMM is done.
    for (int r = 0; r < size; ++r) {
      CUDALAB_CHECK(cudaSetDevice(ranks.devices[r]));
      for (int q = 0; q < size; ++q) {
        if (q == r) continue;
        const Chunk cols = ring_chunk(static_cast<std::size_t>(n), size, q);
        if (cols.count == 0) continue;
        CUDALAB_CHECK(cudaStreamWaitEvent(ranks.streams[r], done[q], 0));
        CUDALAB_CHECK(cudaMemcpyPeerAsync(c[r] + cols.offset * m, ranks.devices[r],
                                          c[q] + cols.offset * m, ranks.devices[q],
                                          cols.count * m * sizeof(float), ranks.streams[r]));
      }
    }
    // Every rank's columns are read by the others' streams: later work on streams[r] (which may
    // overwrite c[r]) waits until every rank has finished its copies.
    for (int r = 0; r < size; ++r) {
      CUDALAB_CHECK(cudaSetDevice(ranks.devices[r]));
      CUDALAB_CHECK(cudaEventRecord(done[r], ranks.streams[r]));
    }
    for (int r = 0; r < size; ++r)
      for (int q = 0; q < size; ++q)
        if (q != r) CUDALAB_CHECK(cudaStreamWaitEvent(ranks.streams[r], done[q], 0));
  } catch (...) {
    for (cudaEvent_t e : done)
      if (e) (void)cudaEventDestroy(e);
    throw;
  }
  for (cudaEvent_t e : done)
    CUDALAB_CHECK(cudaEventDestroy(e));  // released once the waits are done
}

void tp_gemm_rows(std::span<const float* const> a, std::span<const float* const> b,
                  std::span<float* const> c, int m, int n, int k, const TpRanks& ranks) {
  require_tp(a, b, c, m, n, k, ranks);
  if (m == 0 || n == 0) return;
  const int size = static_cast<int>(c.size());
  {
    const DeviceGuard guard;
    for (int r = 0; r < size; ++r) {
      CUDALAB_CHECK(cudaSetDevice(ranks.devices[r]));
      const Chunk inner = ring_chunk(static_cast<std::size_t>(k), size, r);
      if (inner.count == 0) {  // no slice of the inner dimension: a zero partial
        CUDALAB_CHECK(
            cudaMemsetAsync(c[r], 0, std::size_t(m) * n * sizeof(float), ranks.streams[r]));
        continue;
      }
      // Columns inner.offset.. of A (contiguous, lda = m) times rows inner.offset.. of B (ldb = k).
      gemm(ranks.handles[r], ranks.streams[r], a[r] + inner.offset * m, m, b[r] + inner.offset, k,
           c[r], m, n, static_cast<int>(inner.count));
    }
  }
  ring_allreduce(c, ranks.devices, std::size_t(m) * n, ranks.streams);
}

}  // namespace cudalab::ch08
