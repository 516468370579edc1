// Chapter 5 benchmarks, occupancy (exercise 5.8: the calculator is a CPU exercise; these rows
// show what it predicts), on 2^26 floats.
//   ./build/gpu/bench/bench_ch05 --benchmark_filter='occupancy'
//
// Rows:
//   BM_occupancy/<probe>_t<threads>_dyn<KiB>K  counters blocks_per_sm, occupancy, regs
// Checked once before timing (bench::verify) against a host oracle.
#include "ch05/occupancy.hpp"

#include <string>
#include <vector>

#include "ch05_bench.hpp"
#include "cudalab/bench.hpp"
#include "cudalab/device.hpp"
#include "cudalab/device_fill.hpp"
#include "cudalab/memory.hpp"

using namespace cudalab;
using namespace cudalab::bench_ch05;

namespace {

void bm_occupancy(benchmark::State& state, ch05::OccupancyProbe p, int threads, long kib) {
  const std::size_t dyn = static_cast<std::size_t>(kib) * 1024;
  auto x = uniform_device_buffer(kMoreN, 41, -1.0f, 1.0f);
  DeviceBuffer<float> y(kMoreN);
  auto work = [&](cudaStream_t s) {
    ch05::run_occupancy_probe(p, x.data(), y.data(), kMoreN, threads, dyn, s);
  };
  if (!bench::verify(state,
                     std::string("occupancy/") + ch05::to_string(p) + "/" +
                         std::to_string(threads) + "/" + std::to_string(kib),
                     [&] {
                       work(nullptr);
                       // y[i] = x[i] + (sum of the kKeep elements of lane l's slice of its 32 kKeep
                       // chunk).
                       const std::vector<float> hx = x.to_host();
                       const std::size_t keep = static_cast<std::size_t>(ch05::probe_keep(p)),
                                         chunk = 32 * keep;
                       std::vector<float> want(kMoreN);
                       for (std::size_t base = 0; base < kMoreN; base += chunk)
                         for (std::size_t l = 0; l < 32; ++l) {
                           float s = 0.0f;
                           for (std::size_t k = 0; k < keep && base + l + 32 * k < kMoreN; ++k)
                             s += hx[base + l + 32 * k];
                           for (std::size_t k = 0; k < keep && base + l + 32 * k < kMoreN; ++k)
                             want[base + l + 32 * k] = hx[base + l + 32 * k] + s;
                         }
                       return bench::mismatch(y.to_host(), want, {.abs = 1e-5, .rel = 1e-5},
                                              "occupancy probe 2^26");
                     }))
    return;
  const ch05::ProbeResources r = ch05::probe_resources(p);
  const int blocks = ch05::probe_blocks_per_sm(p, threads, dyn);
  const DeviceInfo d = device_info();
  state.counters["regs"] = r.num_regs;
  state.counters["local_bytes"] = static_cast<double>(r.local_bytes);
  state.counters["smem_per_block"] = static_cast<double>(r.static_smem + dyn);
  state.counters["blocks_per_sm"] = blocks;
  state.counters["occupancy"] =
      static_cast<double>(blocks) * ((threads + 31) / 32) / (d.max_threads_per_sm / 32);
  bench::run(state, work, {.bytes = 8.0 * kMoreN});
}

using bench::add;  // cudalab/bench.hpp

[[maybe_unused]] const bool kRegistered = [] {
  // Occupancy. Registers: the probes at 256 threads, no dynamic shared memory. Shared memory:
  // kKeep4 at 256 threads with 0 .. 200 KiB of dynamic shared memory per block (the calculator
  // predicts 8 7 6 5 4 3 2 1 blocks per SM on sm_90: 228 KiB per SM, +1 KiB per block; the
  // blocks_per_sm counter shows what the runtime says). Block size at full resources: 32-thread
  // blocks hit the 32-blocks-per-SM limit (occupancy 50%).
  using P = ch05::OccupancyProbe;
  struct OccArgs {
    P probe;
    int threads;
    long kib;
  };
  std::vector<OccArgs> occ;
  for (P p : {P::kKeep4, P::kKeep32, P::kKeep64, P::kKeep64Bounded, P::kKeep128})
    occ.push_back({p, 256, 0});
  for (long kib : {28L, 32L, 40L, 48L, 64L, 100L, 200L}) occ.push_back({P::kKeep4, 256, kib});
  occ.push_back({P::kKeep4Smem40K, 256, 0});
  for (int t : {32, 64, 128}) occ.push_back({P::kKeep4, t, 0});
  for (const auto& o : occ)
    add(std::string("BM_occupancy/") + ch05::to_string(o.probe) + "_t" + std::to_string(o.threads) +
            "_dyn" + std::to_string(o.kib) + "K",
        [o](benchmark::State& s) { bm_occupancy(s, o.probe, o.threads, o.kib); });
  return true;
}();

}  // namespace
