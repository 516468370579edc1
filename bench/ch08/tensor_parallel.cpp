// Chapter 8 benchmarks, the tensor-parallel GEMM, split by columns or by rows:
//   BM_tp_gemm/<columns|rows>/ranks:R/n:N
#include "ch08/tensor_parallel.hpp"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <exception>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "ch08/ch08.hpp"
#include "ch08_bench.hpp"
#include "cudalab/bench.hpp"
#include "cudalab/check.hpp"
#include "cudalab/cublas.hpp"
#include "cudalab/device_fill.hpp"
#include "cudalab/memory.hpp"

using namespace cudalab;
using namespace cudalab::bench_ch08;

namespace {

// Tensor-parallel GEMM (ch08/tensor_parallel.hpp): C = A B, n x n x n in FP32 on cuBLAS, split
// by columns (each rank a slice of C's columns, then an all-gather by peer copies) or by rows of
// the inner dimension (each rank a partial C, then the hand ring all-reduce), over `ranks` ranks:
// GPUs 0..ranks-1, or ranks simulated on GPU 0 when there are fewer GPUs. Every rank holds A and B
// whole (the split is of the work). Checked once before timing: every rank's C against one cuBLAS
// SGEMM of the same data on GPU 0. Time: the host's, from every rank idle to every rank done.
// Counters: TFLOP/s of the whole product, speedup = the one-rank product's time (measured once per
// process and size) over this one, efficiency = speedup / ranks, simulated (ranks share a GPU),
// and on distinct GPUs the cost model's model_speedup: the one-rank time / ranks, plus the
// communication on NVLink as ch08::nvlink_h200 assumes — the all-reduce of C (rows), or half of it
// for the all-gather (columns: the all-gather is an all-reduce's second half), not overlapped.
enum class TpSplit { kColumns, kRows };

struct TpSetup {
  TpSetup(std::vector<int> devs, int n_) : devices(std::move(devs)), n(n_) {
    const std::size_t cells = std::size_t(n) * n;
    for (int d : devices) {
      CUDALAB_CHECK(cudaSetDevice(d));
      a.push_back(uniform_device_buffer(cells, 81, -1.0f, 1.0f));  // the same A and B on every rank
      b.push_back(uniform_device_buffer(cells, 82, -1.0f, 1.0f));
      c.emplace_back(cells);
      handles.emplace_back();
      cudaStream_t s = nullptr;
      CUDALAB_CHECK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
      streams.push_back(s);
      raw.push_back(handles.back().get());
      pa.push_back(a.back().data());
      pb.push_back(b.back().data());
      pc.push_back(c.back().data());
    }
    idle();
  }
  TpSetup(const TpSetup&) = delete;
  TpSetup& operator=(const TpSetup&) = delete;
  ~TpSetup() {
    for (std::size_t r = 0; r < devices.size(); ++r) {
      (void)cudaSetDevice(devices[r]);
      (void)cudaStreamSynchronize(streams[r]);
      (void)cudaStreamDestroy(streams[r]);
    }
    (void)cudaSetDevice(devices[0]);
  }
  void idle() {
    for (int d : devices) {
      CUDALAB_CHECK(cudaSetDevice(d));
      CUDALAB_CHECK(cudaDeviceSynchronize());
    }
    CUDALAB_CHECK(cudaSetDevice(devices[0]));
  }
  double seconds(TpSplit split) {
    idle();
    const auto t0 = std::chrono::steady_clock::now();
    const ch08::TpRanks ranks{devices, streams, raw};
    if (split == TpSplit::kColumns) {
      ch08::tp_gemm_columns(pa, pb, pc, n, n, n, ranks);
    } else {
      ch08::tp_gemm_rows(pa, pb, pc, n, n, n, ranks);
    }
    for (std::size_t r = 0; r < devices.size(); ++r) {
      CUDALAB_CHECK(cudaSetDevice(devices[r]));
      CUDALAB_CHECK(cudaStreamSynchronize(streams[r]));
    }
    CUDALAB_CHECK(cudaSetDevice(devices[0]));
    return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  }
  // Empty when every rank's C is one SGEMM's within 1e-4 of its largest element (the row split
  // adds in another order), else what differs (bench::mismatch).
  std::string check() {
    CUDALAB_CHECK(cudaSetDevice(devices[0]));
    DeviceBuffer<float> want_d(std::size_t(n) * n);
    {
      const CublasHandle h;
      const float one = 1.0f, zero = 0.0f;
      CUDALAB_CHECK_CUBLAS(cublasSgemm(h, CUBLAS_OP_N, CUBLAS_OP_N, n, n, n, &one, pa[0], n, pb[0],
                                       n, &zero, want_d.data(), n));
      CUDALAB_CHECK(cudaDeviceSynchronize());
    }
    const std::vector<float> want = want_d.to_host();
    float scale = 0.0f;
    for (float v : want) scale = std::max(scale, std::fabs(v));
    std::string wrong;
    for (std::size_t r = 0; r < devices.size() && wrong.empty(); ++r) {
      CUDALAB_CHECK(cudaSetDevice(devices[r]));
      wrong = bench::mismatch(c[r].to_host(), want, {.abs = 1e-4 * scale},
                              "rank " + std::to_string(r) + "'s C against one SGEMM");
    }
    CUDALAB_CHECK(cudaSetDevice(devices[0]));
    return wrong;
  }
  std::vector<int> devices;
  int n;
  std::vector<DeviceBuffer<float>> a, b, c;
  std::vector<CublasHandle> handles;
  std::vector<cudaStream_t> streams;
  std::vector<cublasHandle_t> raw;
  std::vector<const float*> pa, pb;
  std::vector<float*> pc;
};

double tp_one_rank_seconds(int n) {
  static std::map<int, double> cache;  // n -> seconds of the one-rank product (median of 5)
  auto it = cache.find(n);
  if (it == cache.end()) {
    TpSetup one({0}, n);
    (void)one.seconds(TpSplit::kColumns);  // warm-up
    std::vector<double> s;
    for (int i = 0; i < 5; ++i) s.push_back(one.seconds(TpSplit::kColumns));
    std::sort(s.begin(), s.end());
    it = cache.emplace(n, s[s.size() / 2]).first;
  }
  return it->second;
}

void BM_tp_gemm(benchmark::State& state, TpSplit split, int ranks, int n) {
  try {
    const int g = ch08::device_count();
    const bool distinct = ranks <= g;
    std::vector<int> devices(ranks, 0);
    if (distinct)
      for (int r = 0; r < ranks; ++r) devices[r] = r;
    if (distinct && ranks > 1) ch08::enable_peer_access(devices);
    TpSetup tp(devices, n);
    const std::string key = std::string("tp_gemm/") +
                            (split == TpSplit::kColumns ? "columns" : "rows") +
                            "/ranks:" + std::to_string(ranks) + "/n:" + std::to_string(n);
    if (!bench::verify(state, key, [&] {
          (void)tp.seconds(split);
          return tp.check();
        }))
      return;
    (void)tp.seconds(split);  // warm-up
    std::vector<double> s;
    for (auto _ : state) {
      s.push_back(tp.seconds(split));
      state.SetIterationTime(s.back());
    }
    std::sort(s.begin(), s.end());
    const double med = s[s.size() / 2], one = tp_one_rank_seconds(n);
    state.counters["TFLOP/s"] = 2.0 * n * double(n) * n / med * 1e-12;
    state.counters["speedup"] = one / med;
    state.counters["efficiency"] = one / med / ranks;
    state.counters["ranks"] = ranks;
    state.counters["simulated"] = distinct ? 0 : 1;
    if (distinct && ranks > 1) {
      const double ar = ch08::ring_allreduce_seconds(4.0 * n * n, ranks, ch08::nvlink_h200());
      state.counters["model_speedup"] =
          one / (one / ranks + (split == TpSplit::kColumns ? ar / 2 : ar));
    }
  } catch (const std::exception& e) {
    state.SkipWithError(e.what());
  }
}

// Registered before main() runs: the rows depend on the number of GPUs found.
[[maybe_unused]] const bool kRegistered = [] {
  const int g = ch08::device_count();
  // Tensor-parallel GEMM: 1, 2, 4, 8 ranks up to the GPUs present (and their count), or 1 and 2
  // simulated on a machine of one GPU; a size where the GEMM dominates and one where the
  // communication shows.
  for (int n : {2048, 8192})
    for (TpSplit split : {TpSplit::kColumns, TpSplit::kRows})
      for (int ranks : gpu_counts(1, std::max(g, 2))) {
        if (ranks == 1 && split == TpSplit::kRows) continue;  // one rank: the same single GEMM
        const std::string name = std::string("BM_tp_gemm/") +
                                 (split == TpSplit::kColumns ? "columns" : "rows") +
                                 "/ranks:" + std::to_string(ranks) + "/n:" + std::to_string(n);
        bench::add(
            name, [split, ranks, n](benchmark::State& st) { BM_tp_gemm(st, split, ranks, n); },
            benchmark::kMillisecond);
      }
  return true;
}();

}  // namespace
