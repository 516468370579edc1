// Chapter 4 benchmarks, host-device transfers (pageable, pinned, mapped): each effect beside its
// ceiling in the same run.
//   ./build/gpu/bench/bench_ch04 --benchmark_out=ch04.json --benchmark_out_format=json
//
// Rows: BM_h2d / BM_d2h pinned:P/bytes:B (pinned beside the pageable copy of the same size and
// direction), BM_transfer_fit, BM_mapped access:A/passes:N (zero_copy beside copy_then_kernel);
// transfers checked byte for byte before timing.
// The key ratios and speed goals read from these rows are declared in bench/ch04/ch04.toml.
#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include "ch04/ch04.hpp"
#include "ch04_bench.hpp"
#include "cudalab/bench.hpp"
#include "cudalab/memory.hpp"
#include "cudalab/stream.hpp"
#include "cudalab/timer.hpp"

using namespace cudalab;
using namespace cudalab::bench_ch04;

namespace {

// Host memory of `bytes`, pinned (cudaHostAlloc) or pageable (new[]; pages touched once so the
// first copy does not also pay the page faults).
struct HostMemory {
  PinnedBuffer<unsigned char> pinned;
  std::unique_ptr<unsigned char[]> pageable;
  unsigned char* p = nullptr;
  HostMemory(std::size_t bytes, bool is_pinned) {
    if (is_pinned) {
      pinned = PinnedBuffer<unsigned char>(bytes);
      p = pinned.data();
    } else {
      pageable.reset(new unsigned char[bytes]);
      p = pageable.get();
    }
    std::memset(p, 0x5A, bytes);
  }
};

// Byte i of a transfer's source: a pattern a lost or shifted byte cannot match.
unsigned char pattern_byte(std::size_t i) {
  return static_cast<unsigned char>((i * 2654435761u) >> 13);
}

// Copies host -> device -> host once and checks every byte came back.
std::string check_round_trip(HostMemory& host, DeviceBuffer<unsigned char>& dev,
                             std::size_t bytes) {
  for (std::size_t i = 0; i < bytes; ++i) host.p[i] = pattern_byte(i);
  CUDALAB_CHECK(cudaMemcpy(dev.data(), host.p, bytes, cudaMemcpyHostToDevice));
  std::memset(host.p, 0, bytes);
  CUDALAB_CHECK(cudaMemcpy(host.p, dev.data(), bytes, cudaMemcpyDeviceToHost));
  for (std::size_t i = 0; i < bytes; ++i)
    if (host.p[i] != pattern_byte(i))
      return "transfer of " + std::to_string(bytes) + " bytes: byte " + std::to_string(i) +
             " differs";
  return {};
}

void transfer_bench(benchmark::State& state, cudaMemcpyKind kind) {
  const bool pinned = state.range(0) != 0;
  const auto bytes = static_cast<std::size_t>(state.range(1));
  state.SetLabel(pinned ? "pinned" : "pageable");
  HostMemory host(bytes, pinned);
  DeviceBuffer<unsigned char> dev(bytes);
  if (!bench::verify(state, key(kind == cudaMemcpyHostToDevice ? "h2d" : "d2h", state, 2),
                     [&] { return check_round_trip(host, dev, bytes); }))
    return;
  auto copy = [kind, bytes, &dev](unsigned char* h, cudaStream_t s) {
    if (kind == cudaMemcpyHostToDevice)
      CUDALAB_CHECK(cudaMemcpyAsync(dev.data(), h, bytes, kind, s));
    else
      CUDALAB_CHECK(cudaMemcpyAsync(h, dev.data(), bytes, kind, s));
  };
  const bench::Work w{.bytes = static_cast<double>(bytes)};  // bytes crossing the bus (once)
  if (!pinned) {
    bench::run(
        state, [&](cudaStream_t s) { copy(host.p, s); }, w);
  } else {  // pinned beside pageable, same size and direction
    HostMemory pageable(bytes, false);
    bench::run_vs(
        state, [&](cudaStream_t s) { copy(host.p, s); },
        [&](cudaStream_t s) { copy(pageable.p, s); }, w);
  }
  state.counters.erase("pct_of_copy");  // HBM copy is not this bus's ceiling
}
void BM_h2d(benchmark::State& state) {
  transfer_bench(state, cudaMemcpyHostToDevice);
}
void BM_d2h(benchmark::State& state) {
  transfer_bench(state, cudaMemcpyDeviceToHost);
}

// Measures the whole 4 KiB .. 1 GiB sweep inside one iteration and fits t = latency + size / bw
// with ch04::fit_transfer_times (cpu/transfer_fit.cpp, unit-tested on CI).
void BM_transfer_fit(benchmark::State& state) {
  const bool pinned = state.range(0) != 0, h2d = state.range(1) != 0;
  state.SetLabel(std::string(pinned ? "pinned" : "pageable") + (h2d ? "/h2d" : "/d2h"));
  constexpr std::size_t kMax = std::size_t{1} << 30;
  HostMemory host(kMax, pinned);
  DeviceBuffer<unsigned char> dev(kMax);
  if (!bench::verify(state, key("transfer_fit", state, 2),
                     [&] { return check_round_trip(host, dev, kMax); }))
    return;
  Stream stream;
  for (auto _ : state) {
    std::vector<double> sizes, seconds;
    double total_s = 0;
    for (std::size_t b = 4096; b <= kMax; b *= 4) {
      const TimingStats t = time_gpu(
          [&](cudaStream_t s) {
            if (h2d)
              CUDALAB_CHECK(cudaMemcpyAsync(dev.data(), host.p, b, cudaMemcpyHostToDevice, s));
            else
              CUDALAB_CHECK(cudaMemcpyAsync(host.p, dev.data(), b, cudaMemcpyDeviceToHost, s));
          },
          stream, {.warmup = 1, .repetitions = b >= (std::size_t{64} << 20) ? 3 : 15});
      sizes.push_back(static_cast<double>(b));
      seconds.push_back(t.median_ms * 1e-3);
      total_s += t.median_ms * 1e-3;
    }
    state.SetIterationTime(total_s);
    const ch04::TransferFit f = ch04::fit_transfer_times(sizes, seconds);
    state.counters["latency_us"] = f.latency_s * 1e6;
    state.counters["fit_GB/s"] = f.bandwidth_bytes_per_s / 1e9;
    state.counters["half_bandwidth_KiB"] = f.half_bandwidth_bytes() / 1024;
    state.counters["r2"] = f.r2;
  }
}

void BM_mapped(benchmark::State& state) {
  const auto mode = state.range(0);  // 0 copy_then_kernel, 1 zero_copy, 2 device_resident
  const int passes = static_cast<int>(state.range(1));
  state.SetLabel(mode == 0 ? "copy_then_kernel" : mode == 1 ? "zero_copy" : "device_resident");
  PinnedBuffer<float> host(kN, cudaHostAllocMapped);
  for (std::size_t i = 0; i < kN; ++i) host[i] = static_cast<float>(i % 1000) * 1e-3f;
  DeviceBuffer<float> staging(kN), out(kN), base_staging(kN), base_out(kN);
  CUDALAB_CHECK(
      cudaMemcpy(staging.data(), host.data(), kN * sizeof(float), cudaMemcpyHostToDevice));
  auto run = [&](long m, float* stage, float* o, cudaStream_t s) {
    if (m == 2)
      ch04::rotate_sum(stage, o, kN, passes, s);
    else
      ch04::rotate_sum_from_host(
          host.data(), stage, o, kN, passes,
          m == 0 ? ch04::HostAccess::kCopyThenKernel : ch04::HostAccess::kZeroCopy, s);
  };
  if (!bench::verify(state, key("mapped", state, 2), [&] {
        run(mode, staging.data(), out.data(), nullptr);
        CUDALAB_CHECK(cudaDeviceSynchronize());
        std::vector<float> want(kN);
        for (std::size_t i = 0; i < kN; ++i) {
          float acc = 0.0f;
          for (int r = 0; r < passes; ++r) acc += host[(i + r * ch04::kRotation) % kN];
          want[i] = acc;
        }
        return bench::mismatch(out.to_host(), want, {.abs = 1e-5, .rel = 1e-5}, "rotate_sum 2^26");
      }))
    return;
  const bench::Work w{
      .bytes = static_cast<double>(kN * sizeof(float))};  // GB/s = input consumed per second
  auto work = [&](cudaStream_t s) { run(mode, staging.data(), out.data(), s); };
  if (mode != 0)
    bench::run(state, work, w);
  else  // copy_then_kernel beside zero_copy, same passes
    bench::run_vs(
        state, work, [&](cudaStream_t s) { run(1, base_staging.data(), base_out.data(), s); }, w);
  state.counters.erase("pct_of_copy");
}

}  // namespace

[[maybe_unused]] const bool kRegistered = [] {
  bench::add("BM_h2d", BM_h2d)
      ->ArgNames({"pinned", "bytes"})
      ->ArgsProduct({{0, 1}, benchmark::CreateRange(4096, 1 << 30, 4)});
  bench::add("BM_d2h", BM_d2h)
      ->ArgNames({"pinned", "bytes"})
      ->ArgsProduct({{0, 1}, benchmark::CreateRange(4096, 1 << 30, 4)});
  bench::add("BM_transfer_fit", BM_transfer_fit)
      ->ArgNames({"pinned", "h2d"})
      ->ArgsProduct({{0, 1}, {0, 1}})
      ->Iterations(1);
  bench::add("BM_mapped", BM_mapped)
      ->ArgNames({"access", "passes"})
      ->ArgsProduct({{0, 1, 2}, {1, 4}});
  return true;
}();
