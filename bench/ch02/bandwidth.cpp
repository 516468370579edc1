// Chapter 2 benchmarks, bandwidth by level (rows: fma.cpp's header):
//   BM_dram_read|write|copy/warps:W, BM_dram_copy/tiles, BM_memcpy_d2d, BM_l2_read/bytes:B/warps:W,
//   BM_l2_read/bytes:B/tiles, BM_l1_read/warps:W, BM_smem/stride:S/warps:W
// (/tiles: one block per tile, a grid of short blocks, instead of a resident grid of W warps per
// SM)
#include <algorithm>
#include <functional>
#include <numeric>
#include <string>
#include <vector>

#include "ch02/ch02.hpp"
#include "ch02_bench.hpp"
#include "cudalab/bench.hpp"
#include "cudalab/memory.hpp"

using namespace cudalab;
using namespace cudalab::bench_ch02;

namespace {

constexpr std::size_t kDramFloats = std::size_t{1} << 28;  // 1 GiB per array, >> L2

// 1 GiB of ones, made once (every DRAM row reads the same buffer).
const DeviceBuffer<float>& ones() {
  static const DeviceBuffer<float> b = [] {
    DeviceBuffer<float> x(kDramFloats);
    ch02::fill_write(x.data(), kDramFloats, 1.0f, dev().sm_count * 4, 256);
    CUDALAB_CHECK(cudaDeviceSynchronize());
    return x;
  }();
  return b;
}

double dram_peak(double, double mem_mhz) {
  return spec() ? ch02::dram_gbps(spec()->bus_width_bits, mem_mhz)
                : ch02::dram_gbps(dev().bus_width_bits, mem_mhz);
}

std::string sum_mismatch(const std::vector<float>& partial, double want) {
  double got = 0;
  for (const float p : partial) got += p;
  return got == want ? std::string()
                     : "sum " + std::to_string(got) + ", expected " + std::to_string(want);
}

// Samples of a large output: the first, middle and last 2^20 elements.
std::string sample_mismatch(const float* d, std::size_t n, const float* want_src, float value) {
  const std::size_t k = std::size_t{1} << 20;
  for (const std::size_t at : {std::size_t{0}, n / 2, n - k}) {
    std::vector<float> got(k), want(k, value);
    CUDALAB_CHECK(cudaMemcpy(got.data(), d + at, k * 4, cudaMemcpyDeviceToHost));
    if (want_src != nullptr)
      CUDALAB_CHECK(cudaMemcpy(want.data(), want_src + at, k * 4, cudaMemcpyDeviceToHost));
    if (got != want) return "wrong values near element " + std::to_string(at);
  }
  return {};
}

void bm_dram_read(benchmark::State& state, int warps) {
  const Grid g = grid_for(warps);
  const DeviceBuffer<float>& in = ones();
  DeviceBuffer<float> partial(std::size_t(g.blocks) * g.threads);
  auto work = [&](cudaStream_t s) {
    ch02::dram_read(in.data(), kDramFloats, partial.data(), g.blocks, g.threads, s);
  };
  if (!bench::verify(state, "dram_read/" + std::to_string(warps), [&] {
        work(nullptr);
        return sum_mismatch(partial.to_host(), double(kDramFloats));
      }))
    return;
  const double bytes = 4.0 * kDramFloats;
  const bench::CopyBase copy(bytes);
  bench::run_vs(state, work, std::cref(copy), {.bytes = bytes});
  state.counters["bytes_in_flight_per_thread"] = ch02::kReadBytesInFlight;
  record_occupancy(state, warps, ch02::dram_read_resident_warps(g.threads));
  record_peak(state, "GB/s", dram_peak);
}

void bm_dram_write(benchmark::State& state, int warps) {
  const Grid g = grid_for(warps);
  DeviceBuffer<float> out(kDramFloats);
  auto work = [&](cudaStream_t s) {
    ch02::fill_write(out.data(), kDramFloats, 3.0f, g.blocks, g.threads, s);
  };
  if (!bench::verify(state, "dram_write/" + std::to_string(warps), [&] {
        work(nullptr);
        CUDALAB_CHECK(cudaDeviceSynchronize());
        return sample_mismatch(out.data(), kDramFloats, nullptr, 3.0f);
      }))
    return;
  const double bytes = 4.0 * kDramFloats;
  const bench::CopyBase copy(bytes);
  bench::run_vs(state, work, std::cref(copy), {.bytes = bytes});
  state.counters["bytes_in_flight_per_thread"] = ch02::kWriteBytesInFlight;
  record_occupancy(state, warps,
                   ch02::bandwidth_resident_warps(ch02::BandwidthKernel::fill, g.threads));
  record_peak(state, "GB/s", dram_peak);
}

// warps > 0: a resident grid of `warps` per SM walks the tiles (the occupancy sweep); 0: one block
// of kTileThreads per tile (the card's headline copy row).
constexpr int kTileThreads = 256;
void bm_dram_copy(benchmark::State& state, int warps) {
  const Grid g = warps > 0 ? grid_for(warps) : Grid{0, kTileThreads};
  const DeviceBuffer<float>& in = ones();
  DeviceBuffer<float> out(kDramFloats);
  auto work = [&](cudaStream_t s) {
    ch02::copy_kernel(in.data(), out.data(), kDramFloats, g.blocks, g.threads, s);
  };
  if (!bench::verify(state, "dram_copy/" + std::to_string(warps), [&] {
        work(nullptr);
        CUDALAB_CHECK(cudaDeviceSynchronize());
        return sample_mismatch(out.data(), kDramFloats, nullptr, 1.0f);
      }))
    return;
  const double bytes = 8.0 * kDramFloats;  // read + write
  const bench::CopyBase copy(bytes);
  bench::run_vs(state, work, std::cref(copy), {.bytes = bytes});
  state.counters["bytes_in_flight_per_thread"] = ch02::kCopyBytesInFlight;
  const int resident = ch02::bandwidth_resident_warps(ch02::BandwidthKernel::copy, g.threads);
  record_occupancy(state, warps > 0 ? warps : resident, resident);
  record_peak(state, "GB/s", dram_peak);
}

void bm_memcpy_d2d(benchmark::State& state) {
  const DeviceBuffer<float>& in = ones();
  DeviceBuffer<float> out(kDramFloats);
  auto work = [&](cudaStream_t s) {
    CUDALAB_CHECK(
        cudaMemcpyAsync(out.data(), in.data(), 4 * kDramFloats, cudaMemcpyDeviceToDevice, s));
  };
  if (!bench::verify(state, "memcpy", [&] {
        work(nullptr);
        CUDALAB_CHECK(cudaDeviceSynchronize());
        return sample_mismatch(out.data(), kDramFloats, nullptr, 1.0f);
      }))
    return;
  bench::run(state, work, {.bytes = 8.0 * kDramFloats});
  record_peak(state, "GB/s", dram_peak);
}

void bm_l2_read(benchmark::State& state, std::size_t bytes, int warps) {
  const Grid g = grid_for(warps);
  const std::size_t n = bytes / 4;
  const int passes = static_cast<int>(std::max<std::size_t>(4, (std::size_t{1} << 32) / bytes));
  const DeviceBuffer<float>& in = ones();  // its first `bytes`
  DeviceBuffer<float> partial(std::size_t(g.blocks) * g.threads);
  auto work = [&](cudaStream_t s) {
    ch02::l2_read(in.data(), n, passes, partial.data(), g.blocks, g.threads, s);
  };
  if (!bench::verify(state, "l2/" + std::to_string(bytes) + "/" + std::to_string(warps), [&] {
        work(nullptr);
        return sum_mismatch(partial.to_host(), double(n) * passes);
      }))
    return;
  bench::run(state, work, {.bytes = double(bytes) * passes});
  state.counters["bytes_buffer"] = double(bytes);
  state.counters["bytes_in_flight_per_thread"] = ch02::kCopyBytesInFlight;
  record_occupancy(state, warps,
                   ch02::bandwidth_resident_warps(ch02::BandwidthKernel::l2_read, g.threads));
  record_peak(state, "GB/s", [](double, double) { return 0.0; });  // no sheet figure for L2
}

// The L2 read as one block of kTileThreads per tile (the card's L2 row): a buffer of >= 8 MiB.
void bm_l2_tiles(benchmark::State& state, std::size_t bytes) {
  const std::size_t n = bytes / 4;
  const int passes = static_cast<int>(std::max<std::size_t>(4, (std::size_t{1} << 32) / bytes));
  const DeviceBuffer<float>& in = ones();  // its first `bytes`
  DeviceBuffer<float> partial(ch02::kL2ReadSlots);
  auto work = [&](cudaStream_t s) {
    ch02::l2_read_tiles(in.data(), n, passes, partial.data(), kTileThreads, s);
  };
  if (!bench::verify(state, "l2_tiles/" + std::to_string(bytes), [&] {
        CUDALAB_CHECK(cudaMemset(partial.data(), 0, partial.bytes()));
        work(nullptr);
        return sum_mismatch(partial.to_host(), double(n) * passes);
      }))
    return;
  bench::run(state, work, {.bytes = double(bytes) * passes});
  state.counters["bytes_buffer"] = double(bytes);
  const int resident =
      ch02::bandwidth_resident_warps(ch02::BandwidthKernel::l2_tiles, kTileThreads);
  record_occupancy(state, resident, resident);
  record_peak(state, "GB/s", [](double, double) { return 0.0; });  // no sheet figure for L2
}

void bm_l1_read(benchmark::State& state, int warps) {
  const Grid g = grid_for(warps);
  const std::size_t n = 8192;  // 32 KiB per SM
  const int passes = 2048;
  const DeviceBuffer<float>& in = ones();
  DeviceBuffer<float> partial(std::size_t(g.blocks) * g.threads);
  auto work = [&](cudaStream_t s) {
    ch02::l1_read(in.data(), n, passes, partial.data(), g.blocks, g.threads, s);
  };
  if (!bench::verify(state, "l1/" + std::to_string(warps), [&] {
        work(nullptr);
        return sum_mismatch(partial.to_host(), double(n) * passes * g.blocks);
      }))
    return;
  bench::run(state, work, {.bytes = 4.0 * n * passes * g.blocks});
  record_occupancy(state, warps,
                   ch02::bandwidth_resident_warps(ch02::BandwidthKernel::l1_read, g.threads));
  record_peak(state, "GB/s",
              [](double sm, double) { return spec() ? ch02::smem_peak_gbps(*spec(), sm) : 0.0; });
}

void bm_smem(benchmark::State& state, int stride, int warps) {
  const Grid g = grid_for(warps);
  const int iterations = 4096;
  DeviceBuffer<float> partial(std::size_t(g.blocks) * g.threads);
  auto work = [&](cudaStream_t s) {
    ch02::smem_read(stride, iterations, partial.data(), g.blocks, g.threads, s);
  };
  if (!bench::verify(state, "smem/" + std::to_string(stride) + "/" + std::to_string(warps), [&] {
        work(nullptr);
        const std::vector<float> h = partial.to_host();
        for (std::size_t t = 0; t < h.size(); ++t)
          if (h[t] != ch02::smem_expected(t, g.threads, stride, iterations))
            return "partial[" + std::to_string(t) + "] = " + std::to_string(h[t]);
        return std::string();
      }))
    return;
  bench::run(state, work, {.bytes = 4.0 * 8 * iterations * double(g.blocks) * g.threads});
  state.counters["conflict_ways"] = std::gcd(stride, 32);
  record_occupancy(state, warps,
                   ch02::bandwidth_resident_warps(ch02::BandwidthKernel::smem_read, g.threads));
  record_peak(state, "GB/s",
              [](double sm, double) { return spec() ? ch02::smem_peak_gbps(*spec(), sm) : 0.0; });
}

[[maybe_unused]] const bool kRegistered = [] {
  for (const int w : kWarps) {
    bench::add("BM_dram_read/warps:" + std::to_string(w),
               [=](benchmark::State& s) { bm_dram_read(s, w); });
    bench::add("BM_dram_write/warps:" + std::to_string(w),
               [=](benchmark::State& s) { bm_dram_write(s, w); });
    bench::add("BM_dram_copy/warps:" + std::to_string(w),
               [=](benchmark::State& s) { bm_dram_copy(s, w); });
  }
  bench::add("BM_dram_copy/tiles", [](benchmark::State& s) { bm_dram_copy(s, 0); });
  bench::add("BM_memcpy_d2d", [](benchmark::State& s) { bm_memcpy_d2d(s); });
  for (const std::size_t mb : {1, 2, 4, 8, 16, 24, 32, 40, 48, 64, 96})
    bench::add("BM_l2_read/bytes:" + std::to_string(mb << 20) + "/warps:64",
               [=](benchmark::State& s) { bm_l2_read(s, mb << 20, 64); });
  for (const std::size_t mb : {8, 16, 24, 32, 40, 48, 64})
    bench::add("BM_l2_read/bytes:" + std::to_string(mb << 20) + "/tiles",
               [=](benchmark::State& s) { bm_l2_tiles(s, mb << 20); });
  for (const int w : {1, 2, 4, 8, 16, 32})
    bench::add("BM_l2_read/bytes:" + std::to_string(16 << 20) + "/warps:" + std::to_string(w),
               [=](benchmark::State& s) { bm_l2_read(s, 16 << 20, w); });
  for (const int w : kWarps)
    bench::add("BM_l1_read/warps:" + std::to_string(w),
               [=](benchmark::State& s) { bm_l1_read(s, w); });
  for (const int stride : {1, 2, 4, 8, 16, 32})
    bench::add("BM_smem/stride:" + std::to_string(stride) + "/warps:32",
               [=](benchmark::State& s) { bm_smem(s, stride, 32); });
  for (const int w : {1, 2, 4, 8, 16, 64})
    bench::add("BM_smem/stride:1/warps:" + std::to_string(w),
               [=](benchmark::State& s) { bm_smem(s, 1, w); });
  return true;
}();

}  // namespace
