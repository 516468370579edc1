// Chapter 8 benchmarks: all-reduce bandwidth by message size, the hand ring (8.3, over P2P on every
// GPU present) beside NCCL (ncclCommInitAll over the same GPUs) in the same run, plus the ring with
// 4 ranks simulated on GPU 0 (the machinery, not a link). Rows are registered for the number of
// GPUs found: gpus:1 rows on one GPU (NCCL's one-rank all-reduce is a copy), gpus:N on N.
//   ./build/gpu/bench/bench_ch08 --benchmark_out=ch08.json --benchmark_out_format=json
// Counters: algbw_GB/s = bytes / time, busbw_GB/s = algbw x 2(n-1)/n (nccl-tests' definitions),
// time = the slowest rank's (events on every rank's stream, joined into rank 0's).
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdlib>
#include <exception>
#include <functional>
#include <map>
#include <string>
#include <vector>

#include "ch08/ch08.hpp"
#include "ch08/ddp.hpp"
#include "ch08/tensor_parallel.hpp"
#include "cudalab/bench.hpp"
#include "cudalab/check.hpp"
#include "cudalab/cublas.hpp"
#include "cudalab/device_fill.hpp"
#include "cudalab/memory.hpp"
#if CUDALAB_HAVE_NCCL
#include "ch08/nccl.hpp"
#endif

using namespace cudalab;

namespace {

// Buffers, streams and events of n ranks on `devices`; time(work) runs work() once per iteration
// between an event on rank 0's stream that every rank waits for and the join of every rank's end.
struct Ranks {
  explicit Ranks(std::vector<int> devs, std::size_t count) : devices(std::move(devs)), n(count) {
    for (std::size_t r = 0; r < devices.size(); ++r) {
      CUDALAB_CHECK(cudaSetDevice(devices[r]));
      bufs.push_back(uniform_device_buffer(n, r + 1, -1.0f, 1.0f));
      cudaStream_t s = nullptr;
      cudaEvent_t e = nullptr;
      CUDALAB_CHECK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
      CUDALAB_CHECK(cudaEventCreateWithFlags(&e, cudaEventDisableTiming));
      streams.push_back(s);
      ends.push_back(e);
      ptrs.push_back(bufs.back().data());
      cptrs.push_back(bufs.back().data());
    }
    CUDALAB_CHECK(cudaSetDevice(devices[0]));
    CUDALAB_CHECK(cudaEventCreate(&start));
    CUDALAB_CHECK(cudaEventCreate(&stop));
    CUDALAB_CHECK(cudaDeviceSynchronize());
  }
  ~Ranks() {
    for (std::size_t r = 0; r < devices.size(); ++r) {
      (void)cudaSetDevice(devices[r]);
      (void)cudaStreamSynchronize(streams[r]);
      (void)cudaStreamDestroy(streams[r]);
      (void)cudaEventDestroy(ends[r]);
    }
    (void)cudaSetDevice(devices[0]);
    (void)cudaEventDestroy(start);
    (void)cudaEventDestroy(stop);
  }
  Ranks(const Ranks&) = delete;
  Ranks& operator=(const Ranks&) = delete;

  template <class F>
  double time_ms(F&& work) {
    CUDALAB_CHECK(cudaSetDevice(devices[0]));
    CUDALAB_CHECK(cudaEventRecord(start, streams[0]));
    for (std::size_t r = 1; r < devices.size(); ++r)
      CUDALAB_CHECK(cudaStreamWaitEvent(streams[r], start, 0));
    work();
    for (std::size_t r = 1; r < devices.size(); ++r) {
      CUDALAB_CHECK(cudaSetDevice(devices[r]));
      CUDALAB_CHECK(cudaEventRecord(ends[r], streams[r]));
      CUDALAB_CHECK(cudaSetDevice(devices[0]));
      CUDALAB_CHECK(cudaStreamWaitEvent(streams[0], ends[r], 0));
    }
    CUDALAB_CHECK(cudaSetDevice(devices[0]));
    CUDALAB_CHECK(cudaEventRecord(stop, streams[0]));
    CUDALAB_CHECK(cudaEventSynchronize(stop));
    float ms = 0;
    CUDALAB_CHECK(cudaEventElapsedTime(&ms, start, stop));
    return ms;
  }

  std::vector<int> devices;
  std::size_t n;
  std::vector<DeviceBuffer<float>> bufs;
  std::vector<float*> ptrs;
  std::vector<const float*> cptrs;
  std::vector<cudaStream_t> streams;
  std::vector<cudaEvent_t> ends;
  cudaEvent_t start = nullptr, stop = nullptr;
};

// Runs the work twice to warm up; false (the row skipped with the reason) on an exception (the
// starter's NotImplemented).
template <class F>
bool warm(benchmark::State& state, Ranks& ranks, F&& work) {
  try {
    for (int i = 0; i < 2; ++i) ranks.time_ms(work);
    return true;
  } catch (const std::exception& e) {
    state.SkipWithError(e.what());
    return false;
  }
}

// Checks the work once per row and process with bench::verify (rank r holds r + 1 everywhere:
// every rank must end with n(n+1)/2; up to 64 MiB), then warms up. One verdict for every
// repetition: Google Benchmark 1.8 aborts the whole binary (ComputeStats: "run_iterations ==
// run.iterations") when one repetition of a row skips before its loop and another does not.
template <class F>
bool check_and_warm(benchmark::State& state, const std::string& key, Ranks& ranks, F&& work) {
  const int n = static_cast<int>(ranks.devices.size());
  if (ranks.n * sizeof(float) <= (std::size_t{64} << 20) &&
      !bench::verify(state, key, [&]() -> std::string {
        for (int r = 0; r < n; ++r) {
          CUDALAB_CHECK(cudaSetDevice(ranks.devices[r]));
          ranks.bufs[r].upload(std::vector<float>(ranks.n, static_cast<float>(r + 1)));
        }
        ranks.time_ms(work);
        const float want = n * (n + 1) / 2.0f;
        for (int r = 0; r < n; ++r) {
          CUDALAB_CHECK(cudaSetDevice(ranks.devices[r]));
          const std::vector<float> got = ranks.bufs[r].to_host();
          if (std::any_of(got.begin(), got.end(), [&](float v) { return v != want; }))
            return "rank " + std::to_string(r) + " does not hold the sum";
        }
        return {};
      }))
    return false;
  return warm(state, ranks, work);
}

// bus_factor: busbw / algbw as nccl-tests defines it: 2(n-1)/n for all-reduce, (n-1)/n for
// all-gather and reduce-scatter (bytes = the whole gathered or scattered buffer), 1 for broadcast.
template <class F>
void time_rows(benchmark::State& state, const std::string& key, Ranks& ranks, int link_ranks,
               double bytes, F&& work, double bus_factor = -1, bool check = true) {
  if (check ? !check_and_warm(state, key, ranks, work) : !warm(state, ranks, work)) return;
  std::vector<double> ms;
  for (auto _ : state) {
    ms.push_back(ranks.time_ms(work));
    state.SetIterationTime(ms.back() * 1e-3);
  }
  std::sort(ms.begin(), ms.end());
  const double med = ms.empty() ? 0.0 : ms[ms.size() / 2];
  if (med > 0) {
    const double alg = ch08::algbw_gbs(bytes, med * 1e-3);
    state.counters["median_us"] = med * 1e3;
    state.counters["algbw_GB/s"] = alg;
    state.counters["busbw_GB/s"] =
        bus_factor < 0 ? ch08::allreduce_busbw_gbs(alg, link_ranks) : alg * bus_factor;
  }
  state.counters["ranks"] = link_ranks;
}

// bench::verify's key of an all-reduce row: its kind, rank count and size.
std::string row_key(const char* kind, int ranks, std::size_t bytes) {
  return std::string(kind) + "/ranks:" + std::to_string(ranks) + "/bytes:" + std::to_string(bytes);
}

std::vector<int> first_devices(int g) {
  std::vector<int> d(g);
  for (int i = 0; i < g; ++i) d[i] = i;
  return d;
}

// The cost model's busbw for a ring all-reduce of `bytes` over `gpus` GPUs on NVLink as
// ch08::nvlink_h200 assumes (alpha-beta: 2(n-1) steps), beside the measured one.
void add_ring_model(benchmark::State& state, int gpus, std::size_t bytes) {
  if (gpus < 2) return;
  const double s = ch08::ring_allreduce_seconds(double(bytes), gpus, ch08::nvlink_h200());
  state.counters["model_busbw_GB/s"] =
      ch08::allreduce_busbw_gbs(ch08::algbw_gbs(double(bytes), s), gpus);
}

void BM_ring_allreduce(benchmark::State& state, int gpus, std::size_t bytes) {
  const auto devices = first_devices(gpus);
  if (gpus > 1) ch08::enable_peer_access(devices);
  Ranks ranks(devices, bytes / sizeof(float));
  time_rows(state, row_key("ring", gpus, bytes), ranks, gpus, static_cast<double>(bytes),
            [&] { ch08::ring_allreduce(ranks.ptrs, ranks.devices, ranks.n, ranks.streams); });
  add_ring_model(state, gpus, bytes);
}

void BM_ring_simulated(benchmark::State& state, int simulated, std::size_t bytes) {
  Ranks ranks(std::vector<int>(simulated, 0), bytes / sizeof(float));
  time_rows(state, row_key("ring_simulated", simulated, bytes), ranks, simulated,
            static_cast<double>(bytes),
            [&] { ch08::ring_allreduce(ranks.ptrs, ranks.devices, ranks.n, ranks.streams); });
}

#if CUDALAB_HAVE_NCCL
// One communicator per GPU count for the whole process: ncclCommInitAll takes from a few hundred
// ms (one GPU) to seconds (eight), once per row and repetition otherwise. Never destroyed: a
// static destructor would run after the CUDA runtime's teardown; the process exit frees them.
const ch08::NcclComms& comms_of(int gpus) {
  static std::vector<const ch08::NcclComms*> cache(16, nullptr);
  if (!cache.at(gpus)) cache[gpus] = new ch08::NcclComms(first_devices(gpus));
  return *cache[gpus];
}

void BM_nccl_allreduce(benchmark::State& state, int gpus, std::size_t bytes) {
  const auto devices = first_devices(gpus);
  const ch08::NcclComms& comms = comms_of(gpus);
  Ranks ranks(devices, bytes / sizeof(float));
  time_rows(state, row_key("nccl_allreduce", gpus, bytes), ranks, gpus, static_cast<double>(bytes),
            [&] { ch08::all_reduce_sum(comms, ranks.cptrs, ranks.ptrs, ranks.n, ranks.streams); });
  add_ring_model(state, gpus, bytes);
}

// The other collectives on the same GPUs, in place (nccl-tests' sizes: bytes = the whole buffer).
enum class Collective { kAllGather, kReduceScatter, kBroadcast };
constexpr const char* kCollectiveNames[] = {"nccl_allgather", "nccl_reducescatter",
                                            "nccl_broadcast"};

void BM_nccl_collective(benchmark::State& state, Collective what, int gpus, std::size_t bytes) {
  const auto devices = first_devices(gpus);
  const ch08::NcclComms& comms = comms_of(gpus);
  const std::size_t total = std::max<std::size_t>(bytes / sizeof(float), gpus);
  const std::size_t per_rank = total / gpus;  // all-gather / reduce-scatter slice
  Ranks ranks(devices, per_rank * gpus);
  std::vector<const float*> send(gpus);
  std::vector<float*> recv(gpus);
  for (int r = 0; r < gpus; ++r) {
    if (what == Collective::kAllGather) {
      send[r] = ranks.ptrs[r] + r * per_rank;
      recv[r] = ranks.ptrs[r];
    } else if (what == Collective::kReduceScatter) {
      send[r] = ranks.ptrs[r];
      recv[r] = ranks.ptrs[r] + r * per_rank;
    } else {
      send[r] = ranks.ptrs[r];
      recv[r] = ranks.ptrs[r];
    }
  }
  const double n = gpus;
  const double factor = what == Collective::kBroadcast ? 1.0 : (n - 1) / n;
  time_rows(
      state, row_key(kCollectiveNames[static_cast<int>(what)], gpus, bytes), ranks, gpus,
      static_cast<double>(per_rank * gpus * sizeof(float)),
      [&] {
        if (what == Collective::kAllGather) {
          ch08::all_gather(comms, send, recv, per_rank, ranks.streams);
        } else if (what == Collective::kReduceScatter) {
          ch08::reduce_scatter_sum(comms, send, recv, per_rank, ranks.streams);
        } else {
          ch08::broadcast(comms, send, recv, per_rank * gpus, 0, ranks.streams);
        }
      },
      factor, false);
}
#endif

void BM_p2p_copy(benchmark::State& state, int src, int dst, bool both_ways) {
  double gbs = 0;
  for (auto _ : state) {
    gbs = ch08::p2p_bandwidth_gbs(src, dst, std::size_t{256} << 20, 5, both_ways);
    state.SetIterationTime((256.0 * (1 << 20) * 5 * (both_ways ? 2 : 1)) / (gbs * 1e9));
  }
  state.counters["GB/s"] = gbs;
}

// The DDP-like training step (ch08::ddp_train) on `ranks` ranks: the time of one step as
// ddp_train measures it (its steps after the first, all ranks synchronized at both ends, the
// set-up outside), the best of 3 calls. Not the difference of two whole calls (10 steps minus
// none): at 0.1 ms a step, the set-up's jitter (cuBLAS handles, buffers, the data) swamps the
// steps, and the small model's one-rank row read 0.74x of itself that way.
// Counters: step_ms, samples/s, speedup (the one-rank step, measured once per
// process and size, over this one: strong scaling, the global batch split over the ranks),
// and, when the ranks are distinct GPUs, the cost model's prediction for them (model_speedup:
// compute = the one-rank step, the gradients all-reduced at the end or in 2 buckets, NVLink as
// ch08::nvlink_h200 assumes). Ranks that share a GPU (one GPU: 2 simulated) have no model row.
struct DdpSize {
  const char* name;
  ch08::DdpConfig config;
};
const DdpSize kDdpSizes[] = {
    {"small", ch08::DdpConfig{}},  // the tests' MLP: 32 -> 64 -> 1, 256 rows: launch-bound
    {"large", ch08::DdpConfig{.inputs = 1024, .hidden = 4096, .batch = 16384}},  // GEMM-bound
};

double ddp_step_seconds(const ch08::DdpConfig& base, const std::vector<int>& devices,
                        ch08::GradSync sync) {
  ch08::DdpConfig c = base;
  c.steps = 21;  // 20 timed steps after the warm-up step
  double best = 1e30;
  for (int i = 0; i < 3; ++i) {
    double step = 0;
    (void)ch08::ddp_train(c, devices, sync, &step);
    best = std::min(best, step);
  }
  return best;
}

double one_rank_step_seconds(const DdpSize& size) {
  static std::map<std::string, double> cache;  // size name -> seconds
  auto it = cache.find(size.name);
  if (it == cache.end())
    it = cache.emplace(size.name, ddp_step_seconds(size.config, {0}, ch08::GradSync::kAtEnd)).first;
  return it->second;
}

void BM_ddp(benchmark::State& state, const DdpSize& size, int ranks, ch08::GradSync sync) {
  try {
    const int g = ch08::device_count();
    std::vector<int> devices(ranks, 0);
    const bool distinct = ranks <= g;
    if (distinct)
      for (int r = 0; r < ranks; ++r) devices[r] = r;
    if (distinct && ranks > 1) ch08::enable_peer_access(devices);
    double step = 0, one = 0;
    for (auto _ : state) {
      step = ddp_step_seconds(size.config, devices, sync);
      state.SetIterationTime(step);
    }
    one = one_rank_step_seconds(size);
    const ch08::DdpConfig& c = size.config;
    const double params = double(c.inputs) * c.hidden + 2.0 * c.hidden + 1;
    state.counters["step_ms"] = step * 1e3;
    state.counters["samples/s"] = c.batch / step;
    state.counters["speedup"] = one / step;
    state.counters["ranks"] = ranks;
    state.counters["simulated"] = distinct ? 0 : 1;
    if (distinct && ranks > 1) {
      const ch08::TrainingStep model{.compute_s = one,
                                     .grad_bytes = 4.0 * params,
                                     .buckets = sync == ch08::GradSync::kBucketed ? 2 : 0,
                                     .strong_scaling = true};
      state.counters["model_step_ms"] = ch08::step_seconds(model, ranks, ch08::nvlink_h200()) * 1e3;
      state.counters["model_speedup"] = ch08::speedup(model, ranks, ch08::nvlink_h200());
    }
  } catch (const std::exception& e) {
    state.SkipWithError(e.what());
  }
}

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

// One 4-byte copy, src -> dst: 1000 back to back per iteration; the row's time is one copy's.
void BM_p2p_latency(benchmark::State& state, int src, int dst) {
  double us = 0;
  for (auto _ : state) {
    us = ch08::p2p_latency_us(src, dst, 1000);
    state.SetIterationTime(us * 1e-6);
  }
  state.counters["us"] = us;
}

// The NVLink link matrix (NVML) in the JSON's context, for
// chapters/08_multi_gpu/tools/ch08_multi_gpu.py: nvlink_links "0 18;18 0" (row i: links from device
// i to each device), nvlink_other and nvlink_active (per device); or nvlink_unavailable with the
// reason.
void nvlink_context() {
  std::string why;
  try {
    const ch08::NvlinkMatrix m = ch08::nvlink_matrix();
    if (m.available) {
      const auto row = [](const std::vector<int>& v) {
        std::string s;
        for (std::size_t i = 0; i < v.size(); ++i) {
          if (i) s += ' ';
          s += std::to_string(v[i]);
        }
        return s;
      };
      std::string links;
      for (std::size_t i = 0; i < m.links.size(); ++i) {
        if (i) links += ';';
        links += row(m.links[i]);
      }
      benchmark::AddCustomContext("nvlink_links", links);
      benchmark::AddCustomContext("nvlink_other", row(m.other));
      benchmark::AddCustomContext("nvlink_active", row(m.active));
      return;
    }
    why = m.why;
  } catch (const std::exception& e) {
    why = e.what();
  }
  benchmark::AddCustomContext("nvlink_unavailable", why);
}

// 8 B to 1 GiB: latency for small messages, bandwidth for large ones.
const std::vector<std::size_t> kBytes = {8,        1 << 10,  64 << 10,  1 << 20,
                                         16 << 20, 64 << 20, 256 << 20, std::size_t{1} << 30};

// `from`, 2 `from`, 4 `from`, ... up to `to`, and `to` itself: the GPU counts of a scaling sweep.
std::vector<int> gpu_counts(int from, int to) {
  std::vector<int> counts;
  for (int c = from; c <= to; c *= 2) counts.push_back(c);
  if (counts.empty() || counts.back() != to) counts.push_back(to);
  return counts;
}

// Registered before main() runs: the rows depend on the number of GPUs found.
const bool kRegistered = [] {
#if CUDALAB_HAVE_NCCL
  ch08::nccl_default_environment();
#endif
  const int g = ch08::device_count();
  // Without a GPU (listing the rows on a CPU machine: --benchmark_list_tests), the rows of 1, 2, 4
  // and 8 GPUs, so that bench/ch08/ch08.toml's names can be checked; they fail if run.
  // On a machine of one GPU the "collectives" have one rank (NCCL's is a copy, the ring's does
  // nothing): two all-reduce sizes show that, and the 4-rank simulated ring below is the table
  // that means something there. (The whole sweep of 1-rank rows ran over 9 minutes on an H200
  // shared with another run: ~300,000 runs of ~2 us each per row under --benchmark_min_time.)
  // With several GPUs, the all-reduce sweep runs on 2, 4, 8 ... GPUs up to all of them (busbw by
  // GPU count), NCCL's other collectives on all of them.
  const std::vector<int> configs = g == 0   ? std::vector<int>{1, 2, 4, 8}
                                   : g == 1 ? std::vector<int>{1}
                                            : gpu_counts(2, g);
  if (g > 0) nvlink_context();
  const std::vector<std::size_t> one_gpu_bytes = {std::size_t{1} << 20, std::size_t{256} << 20};
  for (int gpus : configs)
    for (std::size_t b : g == 1 ? one_gpu_bytes : kBytes) {
      const std::string suffix = "/gpus:" + std::to_string(gpus) + "/bytes:" + std::to_string(b);
      bench::add("BM_ring_allreduce" + suffix,
                 [gpus, b](benchmark::State& st) { BM_ring_allreduce(st, gpus, b); });
#if CUDALAB_HAVE_NCCL
      bench::add("BM_nccl_allreduce" + suffix,
                 [gpus, b](benchmark::State& st) { BM_nccl_allreduce(st, gpus, b); });
      if (g == 1 || (g > 1 && gpus != g)) continue;  // one rank: the all-reduce says it all
      bench::add("BM_nccl_allgather" + suffix, [gpus, b](benchmark::State& st) {
        BM_nccl_collective(st, Collective::kAllGather, gpus, b);
      });
      bench::add("BM_nccl_reducescatter" + suffix, [gpus, b](benchmark::State& st) {
        BM_nccl_collective(st, Collective::kReduceScatter, gpus, b);
      });
      bench::add("BM_nccl_broadcast" + suffix, [gpus, b](benchmark::State& st) {
        BM_nccl_collective(st, Collective::kBroadcast, gpus, b);
      });
#endif
    }
  for (std::size_t b : {std::size_t{1} << 20, std::size_t{256} << 20})
    bench::add("BM_ring_simulated/ranks:4/bytes:" + std::to_string(b),
               [b](benchmark::State& st) { BM_ring_simulated(st, 4, b); });
  for (int i = 0; i < g; ++i)
    for (int j = 0; j < g; ++j)
      for (bool both : {false, true}) {
        if (i == j && both) continue;
        const std::string name = "BM_p2p_copy/src:" + std::to_string(i) +
                                 "/dst:" + std::to_string(j) + (both ? "/both_ways" : "/one_way");
        bench::add(name, [i, j, both](benchmark::State& st) {
          BM_p2p_copy(st, i, j, both);
        })->Iterations(3);
      }
  // DDP: one rank, and 2, 4, 8 ... GPUs up to all of them (2 ranks simulated on one GPU).
  for (const DdpSize& size : kDdpSizes)
    for (int ranks : gpu_counts(1, std::max(g, 2)))
      for (auto sync : {ch08::GradSync::kAtEnd, ch08::GradSync::kBucketed}) {
        if (ranks == 1 && sync == ch08::GradSync::kBucketed) continue;  // nothing to overlap
        const std::string name = std::string("BM_ddp/") + size.name +
                                 "/ranks:" + std::to_string(ranks) +
                                 (sync == ch08::GradSync::kAtEnd ? "/sync:end" : "/sync:bucketed");
        bench::add(
            name, [&size, ranks, sync](benchmark::State& st) { BM_ddp(st, size, ranks, sync); },
            benchmark::kMillisecond)
            ->Iterations(1);
      }
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
  for (int i = 0; i < g; ++i)
    for (int j = 0; j < g; ++j) {
      const std::string name =
          "BM_p2p_latency/src:" + std::to_string(i) + "/dst:" + std::to_string(j);
      bench::add(name, [i, j](benchmark::State& st) { BM_p2p_latency(st, i, j); })->Iterations(3);
    }
  return true;
}();

}  // namespace

CUDALAB_BENCH_MAIN();
