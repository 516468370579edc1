// Chapter 2 benchmarks: this GPU's measured card, row by row, each beside its clock-adjusted peak
// (the spec-sheet calculator, ch02/spec.hpp, at the SM clock NVML reads while the row's kernels
// run) and, where one exists, the vendor library in the same run.
//   ./build/gpu/bench/bench_ch02 --benchmark_out=ch02.json --benchmark_out_format=json
//
//   BM_fma_f32/ilp:I/warps:W      FMA throughput, I independent chains, W resident warps per SM
//   BM_fma_f64/ilp:I/warps:W      (the "warps hide latency" heatmap; exercise 2.1)
//   BM_sgemm_cublas/8192          cublasSgemm, FP32 CUDA cores (the vendor row of 2.1)
//   BM_gemm_cublas/<type>/8192    cublasGemmEx TN, tf32 / fp16 / bf16 (fp32 out) / int8 (int32 out)
//   BM_mma/<kind>                 mma.sync issue rate per type, and 2:4 sparse bf16 (mma.sp)
//   BM_wgmma/<bf16|fp8>           wgmma m64n256 from shared memory (sm_90a)
//   BM_chase/bytes:B              pointer-chase latency over a B-byte ring (counters: cycles, ns)
//   BM_chase_shared/bytes:16384   the same in shared memory
//   BM_dram_read/warps:W          exercise 2.3 beside cudaMemcpy of the same bytes (interleaved)
//   BM_dram_write/warps:W, BM_dram_copy/warps:W, BM_memcpy_d2d
//   BM_l2_read/bytes:B/warps:W    L2-resident reads (ld.global.cg)
//   BM_l1_read/warps:W            L1-resident reads, BM_smem/stride:S/warps:W the bank ladder
//
// Counters every row adds (besides GB/s or TFLOP/s): sm_mhz (sm_mhz_during, the median of NVML
// readings taken while the row's kernels ran) and mem_mhz (NVML after the loop; nvml = 0 when
// they are the maximum clocks of cudaDeviceProp instead), power_w, temp_c,
// clock_event_reasons (NVML bits), peak (the clock-adjusted peak in the row's unit), pct_of_peak,
// guard_ok (0: above 102% of the peak, a wrong count: the label says so); warps_per_sm (asked)
// and resident_warps_per_sm (what the occupancy API says one SM holds of it). Rows without a
// published or derivable peak (L2) have no peak counters.
#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include <algorithm>
#include <cstdint>
#include <exception>
#include <functional>
#include <numeric>
#include <string>
#include <type_traits>
#include <vector>

#include "ch02/ch02.hpp"
#include "ch02/spec.hpp"
#include "cudalab/bench.hpp"
#include "cudalab/cublas.hpp"
#include "cudalab/device.hpp"
#include "cudalab/memory.hpp"

using namespace cudalab;

namespace {

const DeviceInfo& dev() {
  static const DeviceInfo d = device_info();
  return d;
}
const ch02::GpuSpec* spec() {
  static const ch02::GpuSpec* g = ch02::find_gpu(dev().name);
  return g;
}

// Resident warps per SM -> (blocks, threads): one wave that fills every SM with W warps.
struct Grid {
  int blocks, threads;
};
Grid grid_for(int warps_per_sm, int unit = 32) {
  const int threads = std::min(warps_per_sm * 32, 1024);
  const int per_sm = std::max(1, warps_per_sm * 32 / threads);
  return {dev().sm_count * per_sm, std::max(threads, unit)};
}

// The occupancy a row really ran at: the W warps per SM it asked for, or fewer when registers
// or the block limit keep that many from being resident (the grid then runs in waves).
void record_occupancy(benchmark::State& state, int warps_asked, int resident_capacity) {
  state.counters["warps_per_sm"] = warps_asked;
  state.counters["resident_warps_per_sm"] = std::min(warps_asked, resident_capacity);
}

// Records the clock, power, temperature and reasons, and the ratio to the peak at the SM clock the
// row ran at: bench::run's median of the readings taken while its kernels ran (sm_mhz_during),
// else a reading after the timed loop, else cudaDeviceProp's maximum.
// `peak_of_clock(sm_mhz, mem_mhz)` returns the peak in the row's unit.
template <class F>
void record_peak(benchmark::State& state, const char* unit_counter, F peak_of_clock) {
  const bench::GpuSample g = bench::sample_gpu();
  const auto during = state.counters.find("sm_mhz_during");
  const double sm = during != state.counters.end() && during->second > 0 ? double(during->second)
                    : g.ok && g.sm_mhz > 0                               ? g.sm_mhz
                                           : dev().sm_clock_khz / 1000.0;
  const double mem = g.ok && g.mem_mhz > 0 ? g.mem_mhz : dev().mem_clock_khz / 1000.0;
  state.counters["sm_mhz"] = sm;
  state.counters["mem_mhz"] = mem;
  state.counters["nvml"] = g.ok ? 1 : 0;
  if (g.ok) {
    state.counters["power_w"] = g.power_w;
    state.counters["temp_c"] = g.temperature_c;
    state.counters["clock_event_reasons"] = static_cast<double>(g.clock_event_reasons);
  }
  const auto it = state.counters.find(unit_counter);
  const double peak = peak_of_clock(sm, mem);
  if (it == state.counters.end() || peak <= 0) return;
  const ch02::GuardVerdict v = ch02::guard(it->second, peak);
  state.counters["peak"] = peak;
  state.counters["pct_of_peak"] = 100 * v.ratio;
  state.counters["guard_ok"] = v.ok ? 1 : 0;
  if (!v.ok) state.SetLabel("ABOVE 102% OF PEAK: " + v.what);
}

double compute_peak(ch02::Metric m, double sm_mhz) {
  return spec() ? ch02::peak_at_clock(*spec(), m, sm_mhz) : 0.0;
}

// ---- FMA -------------------------------------------------------------------------------------

template <class T>
void bm_fma(benchmark::State& state, int ilp, int warps) {
  const Grid g = grid_for(warps);
  const double threads = double(g.blocks) * g.threads;
  // ~4e10 FLOP per launch (about a millisecond at the peak), within the exact-result range.
  const int iterations =
      static_cast<int>(std::clamp(4e10 / (2.0 * ilp * threads), 64.0, double(1 << 20)));
  DeviceBuffer<T> out(static_cast<std::size_t>(threads));
  auto work = [&](cudaStream_t s) {
    if constexpr (sizeof(T) == 4)
      ch02::fma_throughput_f32(out.data(), g.blocks, g.threads, ilp, iterations, 1.0f, 1.0f, s);
    else
      ch02::fma_throughput_f64(out.data(), g.blocks, g.threads, ilp, iterations, 1.0, 1.0, s);
  };
  const std::string key = std::string(sizeof(T) == 4 ? "fma_f32/" : "fma_f64/") +
                          std::to_string(ilp) + "/" + std::to_string(warps);
  if (!bench::verify(state, key, [&] {
        work(nullptr);
        const std::vector<T> h = out.to_host();
        for (std::size_t t = 0; t < h.size(); ++t)
          if (static_cast<double>(h[t]) != ch02::fma_expected(t, ilp, iterations))
            return "out[" + std::to_string(t) + "] = " + std::to_string(double(h[t])) +
                   ", expected " + std::to_string(ch02::fma_expected(t, ilp, iterations));
        return std::string();
      }))
    return;
  bench::run(state, work, {.flops = ch02::fma_flops(g.blocks, g.threads, ilp, iterations)});
  record_occupancy(state, warps, ch02::fma_resident_warps(sizeof(T) == 8, ilp, g.threads));
  record_peak(state, "TFLOP/s", [](double sm, double) {
    return compute_peak(sizeof(T) == 4 ? ch02::Metric::fp32 : ch02::Metric::fp64, sm);
  });
}

// ---- cuBLAS ----------------------------------------------------------------------------------

constexpr int kGemm = 8192;

// Small integers (exact in every type and in fp32 sums of 8192 products).
float gemm_a(std::size_t i, std::size_t k) {
  return float(int((i * 7 + k * 13) % 5) - 2);
}
float gemm_b(std::size_t j, std::size_t k) {
  return float(int((j * 11 + k * 3) % 5) - 2);
}

enum class GemmType { fp32, tf32, fp16, bf16, int8 };

template <class T>
DeviceBuffer<T> gemm_operand(bool is_a) {
  const std::size_t n = std::size_t(kGemm) * kGemm;
  std::vector<T> h(n);
  for (std::size_t r = 0; r < kGemm; ++r)
    for (std::size_t k = 0; k < kGemm; ++k) {
      const float v = is_a ? gemm_a(r, k) : gemm_b(r, k);
      if constexpr (std::is_same_v<T, __half>)
        h[r * kGemm + k] = __float2half(v);
      else if constexpr (std::is_same_v<T, __nv_bfloat16>)
        h[r * kGemm + k] = __float2bfloat16(v);
      else
        h[r * kGemm + k] = static_cast<T>(v);
    }
  return to_device(h);
}

// Row-major C (M x N) = A (M x K) Bt^T with Bt (N x K) row-major (TN): with column-major cuBLAS,
// C^T = Bt A^T, Bt taken with op T. Checked on 16 sampled entries against a double dot product.
template <class T, class Out>
void bm_gemm(benchmark::State& state, GemmType type) {
  const DeviceBuffer<T> a = gemm_operand<T>(true), b = gemm_operand<T>(false);
  DeviceBuffer<Out> c(std::size_t(kGemm) * kGemm);
  CublasHandle h(type == GemmType::tf32 ? CUBLAS_TF32_TENSOR_OP_MATH : CUBLAS_DEFAULT_MATH);
  auto work = [&](cudaStream_t s) {
    CUDALAB_CHECK_CUBLAS(cublasSetStream(h, s));
    if (type == GemmType::fp32) {
      const float one = 1, zero = 0;
      CUDALAB_CHECK_CUBLAS(cublasSgemm(h, CUBLAS_OP_T, CUBLAS_OP_N, kGemm, kGemm, kGemm, &one,
                                       reinterpret_cast<const float*>(b.data()), kGemm,
                                       reinterpret_cast<const float*>(a.data()), kGemm, &zero,
                                       reinterpret_cast<float*>(c.data()), kGemm));
    } else if (type == GemmType::int8) {
      const int one = 1, zero = 0;
      CUDALAB_CHECK_CUBLAS(cublasGemmEx(h, CUBLAS_OP_T, CUBLAS_OP_N, kGemm, kGemm, kGemm, &one,
                                        b.data(), CUDA_R_8I, kGemm, a.data(), CUDA_R_8I, kGemm,
                                        &zero, c.data(), CUDA_R_32I, kGemm, CUBLAS_COMPUTE_32I,
                                        CUBLAS_GEMM_DEFAULT));
    } else {
      const float one = 1, zero = 0;
      const cudaDataType_t in = type == GemmType::tf32   ? CUDA_R_32F
                                : type == GemmType::fp16 ? CUDA_R_16F
                                                         : CUDA_R_16BF;
      const cublasComputeType_t compute =
          type == GemmType::tf32 ? CUBLAS_COMPUTE_32F_FAST_TF32 : CUBLAS_COMPUTE_32F;
      CUDALAB_CHECK_CUBLAS(cublasGemmEx(h, CUBLAS_OP_T, CUBLAS_OP_N, kGemm, kGemm, kGemm, &one,
                                        b.data(), in, kGemm, a.data(), in, kGemm, &zero, c.data(),
                                        CUDA_R_32F, kGemm, compute, CUBLAS_GEMM_DEFAULT));
    }
  };
  if (!bench::verify(state, "gemm/" + std::to_string(int(type)), [&] {
        work(nullptr);
        CUDALAB_CHECK(cudaDeviceSynchronize());
        for (int s = 0; s < 16; ++s) {
          const std::size_t i = (s * 2654435761u) % kGemm, j = (s * 40503u + 17) % kGemm;
          double want = 0;
          for (std::size_t k = 0; k < kGemm; ++k) want += double(gemm_a(i, k)) * gemm_b(j, k);
          Out got{};
          CUDALAB_CHECK(
              cudaMemcpy(&got, c.data() + i * kGemm + j, sizeof(Out), cudaMemcpyDeviceToHost));
          if (double(got) != want)
            return "C[" + std::to_string(i) + "][" + std::to_string(j) +
                   "] = " + std::to_string(double(got)) + ", expected " + std::to_string(want);
        }
        return std::string();
      }))
    return;
  bench::run(state, work, {.flops = 2.0 * kGemm * kGemm * double(kGemm)});
  const ch02::Metric m = type == GemmType::fp32   ? ch02::Metric::fp32
                         : type == GemmType::tf32 ? ch02::Metric::tf32
                         : type == GemmType::fp16 ? ch02::Metric::fp16
                         : type == GemmType::bf16 ? ch02::Metric::bf16
                                                  : ch02::Metric::int8;
  record_peak(state, "TFLOP/s", [m](double sm, double) { return compute_peak(m, sm); });
}

// ---- tensor cores ------------------------------------------------------------------------------

ch02::Metric metric_of(ch02::MmaKind k) {
  switch (k) {
    case ch02::MmaKind::fp16:
      return ch02::Metric::fp16;
    case ch02::MmaKind::tf32:
      return ch02::Metric::tf32;
    case ch02::MmaKind::int8:
      return ch02::Metric::int8;
    case ch02::MmaKind::fp8:
      return ch02::Metric::fp8;
    default:
      return ch02::Metric::bf16;
  }
}

void bm_mma(benchmark::State& state, ch02::MmaKind kind) {
  if (!ch02::mma_supported(kind)) {
    state.SkipWithError("this GPU has no such mma.sync (fp8 needs sm_89)");
    return;
  }
  const Grid g = grid_for(16);
  const int iterations = 16384;
  DeviceBuffer<float> out(std::size_t(g.blocks) * g.threads);
  // Checked with a few iterations (exact whatever the accumulator's internal precision), timed
  // with many: the same kernel.
  if (!bench::verify(state, "mma/" + std::to_string(int(kind)), [&] {
        ch02::mma_throughput(kind, out.data(), g.blocks, g.threads, 3);
        const std::vector<float> h = out.to_host();
        for (std::size_t t = 0; t < h.size(); ++t)
          if (h[t] != ch02::mma_expected(kind, 3))
            return "out[" + std::to_string(t) + "] = " + std::to_string(h[t]);
        return std::string();
      }))
    return;
  bench::run(state,
             [&](cudaStream_t s) {
               ch02::mma_throughput(kind, out.data(), g.blocks, g.threads, iterations, s);
             },
             {.flops = ch02::mma_flops(kind, g.blocks, g.threads, iterations)});
  const bool sparse = kind == ch02::MmaKind::bf16_sparse;
  record_peak(state, "TFLOP/s", [&](double sm, double) {
    const double dense = compute_peak(metric_of(kind), sm);
    return sparse && spec() && spec()->sparse_tensor ? 2 * dense : dense;
  });
}

void bm_wgmma(benchmark::State& state, ch02::WgmmaKind kind) {
  if (!ch02::wgmma_supported()) {
    state.SkipWithError("wgmma needs a compute capability 9.0 GPU (sm_90a)");
    return;
  }
  const int blocks = dev().sm_count, threads = 256, iterations = 2048;
  DeviceBuffer<float> out(std::size_t(blocks) * threads);
  if (!bench::verify(state, "wgmma/" + std::to_string(int(kind)), [&] {
        ch02::wgmma_throughput(kind, out.data(), blocks, threads, 3);
        const std::vector<float> h = out.to_host();
        for (std::size_t t = 0; t < h.size(); ++t)
          if (h[t] != ch02::wgmma_expected(kind, 3))
            return "out[" + std::to_string(t) + "] = " + std::to_string(h[t]);
        return std::string();
      }))
    return;
  bench::run(state,
             [&](cudaStream_t s) {
               ch02::wgmma_throughput(kind, out.data(), blocks, threads, iterations, s);
             },
             {.flops = ch02::wgmma_flops(kind, blocks, threads, iterations)});
  const ch02::Metric m = kind == ch02::WgmmaKind::bf16 ? ch02::Metric::bf16 : ch02::Metric::fp8;
  record_peak(state, "TFLOP/s", [m](double sm, double) { return compute_peak(m, sm); });
}

// ---- latency -----------------------------------------------------------------------------------

constexpr std::size_t kChaseStride = 128;  // one L1/L2 line per hop
constexpr long long kChaseSteps = 1 << 14;

void bm_chase(benchmark::State& state, std::size_t bytes, bool shared) {
  std::vector<std::uint32_t> ring;
  try {
    ring = ch02::make_chase_ring(bytes, shared ? 4 : kChaseStride, 2024);
  } catch (const std::exception& e) {
    state.SkipWithError(e.what());  // the starter's make_chase_ring (exercise 2.2)
    return;
  }
  const DeviceBuffer<std::uint32_t> d = to_device(ring);
  DeviceBuffer<long long> result(2);
  const long long lines = static_cast<long long>(bytes / (shared ? 4 : kChaseStride));
  // One lap warms the level under test; rings over twice the L2 get none (it would take seconds
  // and warm nothing). Those rings instead resume where the previous run ended: every run from
  // word 0 would re-time the same first lines, L2-resident after the first run, and the "DRAM"
  // plateau would read the L2 latency.
  const bool beyond_l2 = bytes > 2 * dev().l2_bytes;
  const long long warm = beyond_l2 ? 4096 : lines;
  if (!bench::verify(state, "chase/" + std::to_string(bytes) + (shared ? "s" : "g"), [&] {
        ch02::pointer_chase(d.data(), ring.size(), warm, kChaseSteps, shared, result.data());
        const std::vector<long long> r = result.to_host();
        const std::uint32_t want = ch02::chase_end(ring, warm, kChaseSteps);
        return r[1] == want ? std::string()
                            : "the chase ended at word " + std::to_string(r[1]) + ", expected " +
                                  std::to_string(want);
      }))
    return;
  bench::run(
      state,
      [&](cudaStream_t s) {
        ch02::pointer_chase(d.data(), ring.size(), warm, kChaseSteps, shared, result.data(), s,
                            beyond_l2);
      },
      {}, 0);
  const std::vector<long long> r = result.to_host();
  const double cycles = double(r[0]) / kChaseSteps;
  state.counters["bytes_ring"] = double(bytes);
  state.counters["cycles_per_load"] = cycles;
  record_peak(state, "none", [](double, double) { return 0.0; });
  state.counters["ns_per_load"] = cycles / state.counters["sm_mhz"] * 1e3;
}

// ---- bandwidth ---------------------------------------------------------------------------------

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

void bm_dram_copy(benchmark::State& state, int warps) {
  const Grid g = grid_for(warps);
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
  record_occupancy(state, warps,
                   ch02::bandwidth_resident_warps(ch02::BandwidthKernel::copy, g.threads));
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

// ---- registration ------------------------------------------------------------------------------

std::string mma_name(ch02::MmaKind k) {
  switch (k) {
    case ch02::MmaKind::fp16:
      return "fp16";
    case ch02::MmaKind::bf16:
      return "bf16";
    case ch02::MmaKind::tf32:
      return "tf32";
    case ch02::MmaKind::int8:
      return "int8";
    case ch02::MmaKind::fp8:
      return "fp8";
    case ch02::MmaKind::bf16_sparse:
      return "bf16_sparse";
  }
  return "?";
}

const bool registered = [] {
  const std::vector<int> warps = {1, 2, 4, 8, 16, 32, 64};
  for (const int ilp : {1, 2, 4, 8})
    for (const int w : warps)
      bench::add("BM_fma_f32/ilp:" + std::to_string(ilp) + "/warps:" + std::to_string(w),
                 [=](benchmark::State& s) { bm_fma<float>(s, ilp, w); });
  for (const int ilp : {1, 2, 4, 8})
    for (const int w : {4, 16, 32})
      bench::add("BM_fma_f64/ilp:" + std::to_string(ilp) + "/warps:" + std::to_string(w),
                 [=](benchmark::State& s) { bm_fma<double>(s, ilp, w); });
  bench::add("BM_sgemm_cublas/8192",
             [](benchmark::State& s) { bm_gemm<float, float>(s, GemmType::fp32); });
  bench::add("BM_gemm_cublas/tf32/8192",
             [](benchmark::State& s) { bm_gemm<float, float>(s, GemmType::tf32); });
  bench::add("BM_gemm_cublas/fp16/8192",
             [](benchmark::State& s) { bm_gemm<__half, float>(s, GemmType::fp16); });
  bench::add("BM_gemm_cublas/bf16/8192",
             [](benchmark::State& s) { bm_gemm<__nv_bfloat16, float>(s, GemmType::bf16); });
  bench::add("BM_gemm_cublas/int8/8192",
             [](benchmark::State& s) { bm_gemm<std::int8_t, std::int32_t>(s, GemmType::int8); });
  // Ring sizes: powers of two and 1.5 x powers of two, 8 KiB .. 256 MiB.
  for (std::size_t b = std::size_t{8} << 10; b <= (std::size_t{256} << 20); b *= 2) {
    bench::add("BM_chase/bytes:" + std::to_string(b), [=](benchmark::State& s) {
      bm_chase(s, b, false);
    })->Iterations(2);
    if (b < (std::size_t{256} << 20))
      bench::add("BM_chase/bytes:" + std::to_string(b / 2 * 3), [=](benchmark::State& s) {
        bm_chase(s, b / 2 * 3, false);
      })->Iterations(2);
  }
  bench::add("BM_chase_shared/bytes:16384", [](benchmark::State& s) {
    bm_chase(s, 16384, true);
  })->Iterations(2);
  for (const int w : warps) {
    bench::add("BM_dram_read/warps:" + std::to_string(w),
               [=](benchmark::State& s) { bm_dram_read(s, w); });
    bench::add("BM_dram_write/warps:" + std::to_string(w),
               [=](benchmark::State& s) { bm_dram_write(s, w); });
    bench::add("BM_dram_copy/warps:" + std::to_string(w),
               [=](benchmark::State& s) { bm_dram_copy(s, w); });
  }
  bench::add("BM_memcpy_d2d", [](benchmark::State& s) { bm_memcpy_d2d(s); });
  for (const std::size_t mb : {1, 2, 4, 8, 16, 24, 32, 40, 48, 64, 96})
    bench::add("BM_l2_read/bytes:" + std::to_string(mb << 20) + "/warps:64",
               [=](benchmark::State& s) { bm_l2_read(s, mb << 20, 64); });
  for (const int w : {1, 2, 4, 8, 16, 32})
    bench::add("BM_l2_read/bytes:" + std::to_string(16 << 20) + "/warps:" + std::to_string(w),
               [=](benchmark::State& s) { bm_l2_read(s, 16 << 20, w); });
  for (const int w : warps)
    bench::add("BM_l1_read/warps:" + std::to_string(w),
               [=](benchmark::State& s) { bm_l1_read(s, w); });
  for (const int stride : {1, 2, 4, 8, 16, 32})
    bench::add("BM_smem/stride:" + std::to_string(stride) + "/warps:32",
               [=](benchmark::State& s) { bm_smem(s, stride, 32); });
  for (const int w : {1, 2, 4, 8, 16, 64})
    bench::add("BM_smem/stride:1/warps:" + std::to_string(w),
               [=](benchmark::State& s) { bm_smem(s, 1, w); });
  // The hand-written tensor-core rows last: inline PTX is where a fault that poisons the CUDA
  // context would come from, and then every later row of the process would fail too.
  for (const ch02::MmaKind k :
       {ch02::MmaKind::fp16, ch02::MmaKind::bf16, ch02::MmaKind::tf32, ch02::MmaKind::int8,
        ch02::MmaKind::fp8, ch02::MmaKind::bf16_sparse})
    bench::add("BM_mma/" + mma_name(k), [=](benchmark::State& s) { bm_mma(s, k); });
  bench::add("BM_wgmma/bf16", [](benchmark::State& s) { bm_wgmma(s, ch02::WgmmaKind::bf16); });
  bench::add("BM_wgmma/fp8", [](benchmark::State& s) { bm_wgmma(s, ch02::WgmmaKind::fp8); });
  return true;
}();

}  // namespace

CUDALAB_BENCH_MAIN();
