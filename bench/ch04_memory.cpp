// Chapter 4 benchmarks: the memory hierarchy, each effect beside its ceiling in the same run.
//
//   ./build/gpu/bench/bench_ch04 --benchmark_out=ch04.json --benchmark_out_format=json
//   ./build/gpu/bench/bench_ch04 --benchmark_filter='BM_transpose'      (one family)
//
// Row names carry their parameters as name:value (Google Benchmark ArgNames), so a report script
// can plot them: BM_strided_copy/stride:4, BM_offset_copy/offset:1, BM_transpose/variant:3/
// rows:8192/cols:8192 (label "padded64"), BM_h2d/pinned:1/bytes:4096, ...
// Ratios to read:
//   BM_transpose (best variant) pct_of_memcpy_same_bytes >= 90 on an H200 (the target), against
//   BM_transpose_memcpy (cudaMemcpy D2D of the same bytes) and BM_transpose_copy_kernel;
//   BM_transpose tiled vs padded: the bank-conflict cost; BM_smem_column stride:32 vs stride:33;
//   BM_poly: constant/broadcast vs global/broadcast, constant/per_lane (serialized) vs the rest;
//   BM_h2d / BM_d2h: pinned vs pageable over 4 KiB .. 1 GiB; BM_transfer_fit: latency + bandwidth;
//   BM_mapped: zero_copy vs copy_then_kernel for 1 and 4 passes over the input.
#include <cstdint>
#include <cstring>
#include <map>
#include <memory>
#include <vector>

#include "ch04/ch04.hpp"
#include "cudalab/bench.hpp"
#include "cudalab/device.hpp"
#include "cudalab/device_fill.hpp"
#include "cudalab/memory.hpp"
#include "cudalab/stream.hpp"
#include "cudalab/timer.hpp"

using namespace cudalab;

namespace {

constexpr std::size_t kN = std::size_t{1} << 26;  // 2^26 floats = 256 MiB per array, >> 60 MB of L2

// cudaMemcpy device-to-device GB/s (read + write) for exactly `bytes`, measured once per size in
// this process: the same-bytes ceiling each 2D kernel is compared with.
double memcpy_gbps(std::size_t bytes) {
  static std::map<std::size_t, double> cache;
  if (auto it = cache.find(bytes); it != cache.end()) return it->second;
  DeviceBuffer<unsigned char> a(bytes), b(bytes);
  CUDALAB_CHECK(cudaMemset(a.data(), 1, bytes));
  Stream s;
  const TimingStats t = time_gpu([&](cudaStream_t st) {
    CUDALAB_CHECK(cudaMemcpyAsync(b.data(), a.data(), bytes, cudaMemcpyDeviceToDevice, st));
  }, s, {.warmup = 3, .repetitions = 20});
  return cache[bytes] = t.per_second(2.0 * bytes) / 1e9;
}

// ---- coalescing -----------------------------------------------------------------------------

void BM_strided_copy(benchmark::State& state) {
  const auto stride = static_cast<unsigned>(state.range(0));
  const std::size_t in_n = ch04::strided_input_size(kN, stride);  // up to 8 GiB at stride 32
  const DeviceBuffer<float> in = uniform_device_buffer(in_n, 1, -1.0f, 1.0f);
  DeviceBuffer<float> out(kN);
  bench::run(state, [&](cudaStream_t s) { ch04::strided_copy(in.data(), out.data(), kN, stride, s); },
             {.bytes = 2.0 * kN * sizeof(float)});  // useful bytes: what a coalesced copy moves
}

void BM_offset_copy(benchmark::State& state) {
  const auto offset = static_cast<unsigned>(state.range(0));
  const DeviceBuffer<float> in = uniform_device_buffer(kN + offset, 2, -1.0f, 1.0f);
  DeviceBuffer<float> out(kN);
  bench::run(state, [&](cudaStream_t s) { ch04::offset_copy(in.data(), out.data(), kN, offset, s); },
             {.bytes = 2.0 * kN * sizeof(float)});
}

void BM_coalescing_memcpy(benchmark::State& state) {  // the ceiling of both rows above
  const DeviceBuffer<float> in = uniform_device_buffer(kN, 3, -1.0f, 1.0f);
  DeviceBuffer<float> out(kN);
  bench::run(state, [&](cudaStream_t s) {
    CUDALAB_CHECK(cudaMemcpyAsync(out.data(), in.data(), kN * sizeof(float), cudaMemcpyDeviceToDevice, s));
  }, {.bytes = 2.0 * kN * sizeof(float)});
}

// ---- transpose ladder -----------------------------------------------------------------------

struct Matrices {
  int rows, cols;
  std::size_t n;
  DeviceBuffer<float> in, out;
  // Shape from the benchmark arguments: (rows, cols) start at argument `first`.
  Matrices(const benchmark::State& state, int first)
      : rows(static_cast<int>(state.range(first))), cols(static_cast<int>(state.range(first + 1))),
        n(static_cast<std::size_t>(rows) * cols), in(uniform_device_buffer(n, 4, -1.0f, 1.0f)), out(n) {}
  double bytes() const { return 2.0 * n * sizeof(float); }
};

void BM_transpose(benchmark::State& state) {  // arguments: variant, rows, cols
  Matrices m(state, 1);
  const auto v = static_cast<ch04::TransposeVariant>(state.range(0));
  state.SetLabel(std::string(ch04::name(v)));
  bench::run(state, [&](cudaStream_t s) { ch04::transpose(m.in.data(), m.out.data(), m.rows, m.cols, v, s); },
             {.bytes = m.bytes()});
  bench::add_percent(state, "memcpy_same_bytes", state.counters["GB/s"], memcpy_gbps(m.n * sizeof(float)));
}

void BM_transpose_memcpy(benchmark::State& state) {  // arguments: rows, cols
  Matrices m(state, 0);
  state.SetLabel("cudaMemcpy D2D");
  bench::run(state, [&](cudaStream_t s) {
    CUDALAB_CHECK(cudaMemcpyAsync(m.out.data(), m.in.data(), m.n * sizeof(float), cudaMemcpyDeviceToDevice, s));
  }, {.bytes = m.bytes()});
}

void BM_transpose_copy_kernel(benchmark::State& state) {  // arguments: rows, cols
  Matrices m(state, 0);
  state.SetLabel("copy_2d (naive launch shape)");
  bench::run(state, [&](cudaStream_t s) { ch04::copy_2d(m.in.data(), m.out.data(), m.rows, m.cols, s); },
             {.bytes = m.bytes()});
  bench::add_percent(state, "memcpy_same_bytes", state.counters["GB/s"], memcpy_gbps(m.n * sizeof(float)));
}

// Shapes: a square power of two (256 MiB) and an odd shape of the same size (edge tiles on every
// tile row and column).
void transpose_shapes(benchmark::internal::Benchmark* b, bool with_variants) {
  const std::vector<std::pair<int, int>> shapes{{8192, 8192}, {8191, 8209}};
  for (const auto& [r, c] : shapes) {
    if (!with_variants) {
      b->Args({r, c});
      continue;
    }
    for (const auto v : ch04::kTransposeVariants) b->Args({static_cast<std::int64_t>(v), r, c});
  }
}

// ---- bank conflicts -------------------------------------------------------------------------

void BM_smem_column(benchmark::State& state) {
  const int stride = static_cast<int>(state.range(0));
  const unsigned blocks = static_cast<unsigned>(device_info().sm_count) * 8;  // 2048 threads / SM
  const int iterations = 4096;
  DeviceBuffer<float> out(std::size_t{blocks} * ch04::kSmemThreads);
  bench::run(state, [&](cudaStream_t s) { ch04::smem_column_read(out.data(), blocks, stride, iterations, s); },
             {});
  const double loads = double(blocks) * ch04::kSmemThreads / 32 * iterations;  // warp-wide loads
  state.counters["warp_loads_per_us"] = loads / state.counters["median_us"];
  state.counters["model_conflict_ways"] = ch04::column_read_conflict_ways(stride);
}

// ---- constant memory ------------------------------------------------------------------------

void BM_poly(benchmark::State& state) {
  const auto memory = static_cast<ch04::CoeffMemory>(state.range(0));
  const auto pattern = static_cast<ch04::CoeffPattern>(state.range(1));
  const int terms = 16;
  state.SetLabel(std::string(memory == ch04::CoeffMemory::kGlobal ? "global" : "constant") + "/" +
                 (pattern == ch04::CoeffPattern::kBroadcast ? "broadcast" : "per_lane"));
  const DeviceBuffer<float> x = uniform_device_buffer(kN, 5, -0.99f, 0.99f);
  const DeviceBuffer<float> c = uniform_device_buffer(std::size_t{terms} * ch04::kPolys, 6, -1.0f, 1.0f);
  DeviceBuffer<float> y(kN);
  bench::run(state, [&](cudaStream_t s) {
    ch04::eval_polynomials(x.data(), y.data(), kN, c.data(), terms, memory, pattern, s);
  }, {.bytes = 2.0 * kN * sizeof(float), .flops = 2.0 * (terms - 1) * kN});
}

// ---- host-device transfers ------------------------------------------------------------------

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

void transfer_bench(benchmark::State& state, cudaMemcpyKind kind) {
  const bool pinned = state.range(0) != 0;
  const auto bytes = static_cast<std::size_t>(state.range(1));
  state.SetLabel(pinned ? "pinned" : "pageable");
  HostMemory host(bytes, pinned);
  DeviceBuffer<unsigned char> dev(bytes);
  bench::run(state, [&](cudaStream_t s) {
    if (kind == cudaMemcpyHostToDevice)
      CUDALAB_CHECK(cudaMemcpyAsync(dev.data(), host.p, bytes, kind, s));
    else
      CUDALAB_CHECK(cudaMemcpyAsync(host.p, dev.data(), bytes, kind, s));
  }, {.bytes = static_cast<double>(bytes)});  // bytes crossing the bus (once)
  state.counters.erase("pct_of_copy");         // HBM copy is not this bus's ceiling
}
void BM_h2d(benchmark::State& state) { transfer_bench(state, cudaMemcpyHostToDevice); }
void BM_d2h(benchmark::State& state) { transfer_bench(state, cudaMemcpyDeviceToHost); }

// Measures the whole 4 KiB .. 1 GiB sweep inside one iteration and fits t = latency + size / bw
// with ch04::fit_transfer_times (cpu/transfer_fit.cpp, unit-tested on CI).
void BM_transfer_fit(benchmark::State& state) {
  const bool pinned = state.range(0) != 0, h2d = state.range(1) != 0;
  state.SetLabel(std::string(pinned ? "pinned" : "pageable") + (h2d ? "/h2d" : "/d2h"));
  constexpr std::size_t kMax = std::size_t{1} << 30;
  HostMemory host(kMax, pinned);
  DeviceBuffer<unsigned char> dev(kMax);
  Stream stream;
  for (auto _ : state) {
    std::vector<double> sizes, seconds;
    double total_s = 0;
    for (std::size_t b = 4096; b <= kMax; b *= 4) {
      const TimingStats t = time_gpu([&](cudaStream_t s) {
        if (h2d)
          CUDALAB_CHECK(cudaMemcpyAsync(dev.data(), host.p, b, cudaMemcpyHostToDevice, s));
        else
          CUDALAB_CHECK(cudaMemcpyAsync(host.p, dev.data(), b, cudaMemcpyDeviceToHost, s));
      }, stream, {.warmup = 1, .repetitions = b >= (std::size_t{64} << 20) ? 3 : 15});
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
  DeviceBuffer<float> staging(kN), out(kN);
  CUDALAB_CHECK(cudaMemcpy(staging.data(), host.data(), kN * sizeof(float), cudaMemcpyHostToDevice));
  bench::run(state, [&](cudaStream_t s) {
    if (mode == 2)
      ch04::rotate_sum(staging.data(), out.data(), kN, passes, s);
    else
      ch04::rotate_sum_from_host(host.data(), staging.data(), out.data(), kN, passes,
                                 mode == 0 ? ch04::HostAccess::kCopyThenKernel : ch04::HostAccess::kZeroCopy, s);
  }, {.bytes = static_cast<double>(kN * sizeof(float))});  // GB/s = input consumed per second
  state.counters.erase("pct_of_copy");
}

}  // namespace

#define LAB_ROW(fn) BENCHMARK(fn)->UseManualTime()->Unit(benchmark::kMicrosecond)

LAB_ROW(BM_coalescing_memcpy);
LAB_ROW(BM_strided_copy)->ArgName("stride")->Arg(1)->Arg(2)->Arg(4)->Arg(8)->Arg(16)->Arg(32);
LAB_ROW(BM_offset_copy)->ArgName("offset")->Arg(0)->Arg(1)->Arg(2)->Arg(4)->Arg(8)->Arg(16)->Arg(31)->Arg(32);

LAB_ROW(BM_transpose_memcpy)->ArgNames({"rows", "cols"})->Apply([](auto* b) { transpose_shapes(b, false); });
LAB_ROW(BM_transpose_copy_kernel)->ArgNames({"rows", "cols"})->Apply([](auto* b) { transpose_shapes(b, false); });
LAB_ROW(BM_transpose)->ArgNames({"variant", "rows", "cols"})->Apply([](auto* b) { transpose_shapes(b, true); });

LAB_ROW(BM_smem_column)->ArgName("stride")->Arg(1)->Arg(2)->Arg(4)->Arg(8)->Arg(16)->Arg(32)->Arg(33);

LAB_ROW(BM_poly)->ArgNames({"memory", "pattern"})->ArgsProduct({{0, 1}, {0, 1}});

LAB_ROW(BM_h2d)->ArgNames({"pinned", "bytes"})->ArgsProduct({{0, 1}, benchmark::CreateRange(4096, 1 << 30, 4)});
LAB_ROW(BM_d2h)->ArgNames({"pinned", "bytes"})->ArgsProduct({{0, 1}, benchmark::CreateRange(4096, 1 << 30, 4)});
LAB_ROW(BM_transfer_fit)->ArgNames({"pinned", "h2d"})->ArgsProduct({{0, 1}, {0, 1}})->Iterations(1);
LAB_ROW(BM_mapped)->ArgNames({"access", "passes"})->ArgsProduct({{0, 1, 2}, {1, 4}});

CUDALAB_BENCH_MAIN();
