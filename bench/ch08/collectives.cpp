// Chapter 8 benchmarks: all-reduce bandwidth by message size, the hand ring (8.3, over P2P on every
// GPU present) beside NCCL (ncclCommInitAll over the same GPUs) in the same run, plus the ring with
// 4 ranks simulated on GPU 0 (the machinery, not a link). Rows are registered for the number of
// GPUs found: gpus:1 rows on one GPU (NCCL's one-rank all-reduce is a copy), gpus:N on N.
// A file per topic, registered in this order: collectives.cpp, p2p_copy.cpp, ddp.cpp,
// tensor_parallel.cpp, p2p_latency.cpp.
//   ./build/gpu/bench/bench_ch08 --benchmark_out=ch08.json --benchmark_out_format=json
// Counters: algbw_GB/s = bytes / time, busbw_GB/s = algbw x 2(n-1)/n (nccl-tests' definitions),
// time = the slowest rank's (events on every rank's stream, joined into rank 0's).
#include <algorithm>
#include <exception>
#include <string>
#include <vector>

#include "ch08/ch08.hpp"
#include "ch08_bench.hpp"
#include "cudalab/bench.hpp"
#include "cudalab/check.hpp"
#if CUDALAB_HAVE_NCCL
#include "ch08/nccl.hpp"
#endif

using namespace cudalab;
using namespace cudalab::bench_ch08;

namespace {

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

// Registered before main() runs: the rows depend on the number of GPUs found.
[[maybe_unused]] const bool kRegistered = [] {
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
  return true;
}();

}  // namespace

CUDALAB_BENCH_MAIN();
