#include "cudalab/bench.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cstdio>
#include <exception>
#include <map>
#include <string>
#include <vector>

#include "cudalab/check.hpp"
#include "cudalab/device.hpp"
#include "cudalab/memory.hpp"
#include "cudalab/stream.hpp"
#include "cudalab/timer.hpp"

#if defined(CUDALAB_HAVE_NVML)
#include <nvml.h>
#endif

namespace cudalab::bench {
namespace {

#if defined(CUDALAB_HAVE_NVML)
// NVML handle of the CUDA device in use (matched by PCI bus id, not by index: the two orders
// can differ when CUDA_VISIBLE_DEVICES is set).
struct Nvml {
  bool ok = false;
  nvmlDevice_t dev{};
  Nvml() {
    if (nvmlInit_v2() != NVML_SUCCESS) return;
    int cuda_dev = 0;
    char bus[32] = {};
    if (cudaGetDevice(&cuda_dev) != cudaSuccess ||
        cudaDeviceGetPCIBusId(bus, sizeof bus, cuda_dev) != cudaSuccess)
      return;
    ok = nvmlDeviceGetHandleByPciBusId_v2(bus, &dev) == NVML_SUCCESS;
  }
  ~Nvml() { nvmlShutdown(); }
  unsigned clock(nvmlClockType_t t) const {
    unsigned v = 0;
    return ok && nvmlDeviceGetClockInfo(dev, t, &v) == NVML_SUCCESS ? v : 0;
  }
  unsigned temperature() const {
    unsigned v = 0;
    return ok && nvmlDeviceGetTemperature(dev, NVML_TEMPERATURE_GPU, &v) == NVML_SUCCESS ? v : 0;
  }
  unsigned power_w() const {
    unsigned mw = 0;
    return ok && nvmlDeviceGetPowerUsage(dev, &mw) == NVML_SUCCESS ? mw / 1000 : 0;
  }
  unsigned long long event_reasons() const {
    unsigned long long r = 0;
    return ok && nvmlDeviceGetCurrentClocksEventReasons(dev, &r) == NVML_SUCCESS ? r : 0;
  }
};

// MIG mode of the GPU this process runs on (the CUDA device is then one instance of it).
bool mig_enabled(nvmlDevice_t dev) {
  unsigned current = 0, pending = 0;
  return nvmlDeviceGetMigMode(dev, &current, &pending) == NVML_SUCCESS &&
         current == NVML_DEVICE_MIG_ENABLE;
}
#endif

}  // namespace

std::string clock_reasons_text(unsigned long long mask) {
  if (mask == 0) return "none";
  std::string s;
  const auto add = [&s](const std::string& name) {
    if (!s.empty()) s.push_back(',');
    s.append(name);
  };
  unsigned long long known = 0;
  for (const ClockReason& r : kClockReasons) {
    known |= r.bit;
    if (mask & r.bit) add(r.name);
  }
  if (mask & ~known) add(fmt::format("0x{:x}", mask & ~known));
  return s;
}

std::string mig_note(bool mig_enabled, int instance_sms, std::size_t instance_bytes) {
  if (!mig_enabled) return "";
  return fmt::format(
      "on: figures are this MIG instance's ({} SMs, {:.2f} GiB), not the GPU's; peaks and ceilings "
      "in this context are the instance's too",
      instance_sms, static_cast<double>(instance_bytes) / (1ull << 30));
}

double copy_ceiling_gbps() {
  static const double gbps = [] {
    const std::size_t bytes = std::size_t{1} << 30;
    DeviceBuffer<unsigned char> a(bytes), b(bytes);
    CUDALAB_CHECK(cudaMemset(a.data(), 1, bytes));
    Stream s;
    const TimingStats t = time_gpu(
        [&](cudaStream_t st) {
          CUDALAB_CHECK(cudaMemcpyAsync(b.data(), a.data(), bytes, cudaMemcpyDeviceToDevice, st));
        },
        s, {.warmup = 3, .repetitions = 20});
    return t.per_second(2.0 * bytes) / 1e9;  // read + write
  }();
  return gbps;
}

void add_percent(benchmark::State& state, const char* name, double value, double reference) {
  if (reference > 0) state.counters[fmt::format("pct_of_{}", name)] = 100.0 * value / reference;
}

namespace {

#if defined(CUDALAB_HAVE_NVML)
Nvml& nvml_handle() {
  static Nvml nvml;
  return nvml;
}
#endif

// The clock and its event reasons just before a row's first timed iteration (after its warm-up)
// and after its last, so that the report can flag a row that ran throttled.
void record_clocks(benchmark::State& state, const char* when) {
#if defined(CUDALAB_HAVE_NVML)
  const Nvml& nvml = nvml_handle();
  if (!nvml.ok) return;
  const std::string w = when;
  state.counters["sm_mhz_" + w] = nvml.clock(NVML_CLOCK_SM);
  state.counters["clock_reasons_" + w] = static_cast<double>(nvml.event_reasons());
  if (w == "after") state.counters["temp_c_after"] = nvml.temperature();
#else
  (void)state;
  (void)when;
#endif
}

// The SM clock read while the row's kernels run: after a timed launch, before the wait for it (the
// host is idle then). A reading after the loop meets an idle or a recovering GPU: on an H100 a
// cuBLAS GEMM read 1665 MHz after its loop where the readings during its run said 1980, and in
// another run such a reading (1530 MHz) put the row at 104% of its "clock-adjusted" peak. The
// first 32 iterations are sampled, then one in 32, so that a row of thousands of microsecond
// launches does not pay an NVML call each; sm_mhz_during is their median.
class ClockSampler {
 public:
  void maybe_sample() {
#if defined(CUDALAB_HAVE_NVML)
    const Nvml& nvml = nvml_handle();
    if (nvml.ok && (n_ < 32 || n_ % 32 == 0)) mhz_.push_back(nvml.clock(NVML_CLOCK_SM));
#endif
    ++n_;
  }
  void record(benchmark::State& state) {
    if (mhz_.empty()) return;
    std::sort(mhz_.begin(), mhz_.end());
    const std::size_t m = mhz_.size();
    state.counters["sm_mhz_during"] = m % 2 ? mhz_[m / 2] : 0.5 * (mhz_[m / 2 - 1] + mhz_[m / 2]);
  }

 private:
  std::vector<double> mhz_;
  long long n_ = 0;
};

}  // namespace

void run(benchmark::State& state, const std::function<void(cudaStream_t)>& work, Work w,
         int warmup) {
  Stream stream;
  for (int i = 0; i < warmup; ++i) work(stream);
  record_clocks(state, "before");
  Event start, stop;
  std::vector<float> ms;
  ClockSampler clocks;
  for (auto _ : state) {
    start.record(stream);
    work(stream);
    stop.record(stream);
    clocks.maybe_sample();
    stop.synchronize();
    const float t = stop.elapsed_ms_since(start);
    state.SetIterationTime(t * 1e-3);
    ms.push_back(t);
  }
  const TimingStats st = summarize(std::move(ms));
  const double sec = st.median_ms * 1e-3;
  state.counters["median_us"] = st.median_ms * 1e3;
  if (w.bytes > 0 && sec > 0) {
    const double gbps = w.bytes / sec / 1e9;
    state.counters["bytes"] = w.bytes;
    state.counters["GB/s"] = gbps;
    add_percent(state, "copy", gbps, copy_ceiling_gbps());
  }
  if (w.flops > 0 && sec > 0) {
    state.counters["flops"] = w.flops;
    state.counters["TFLOP/s"] = w.flops / sec / 1e12;
  }
  clocks.record(state);
  record_clocks(state, "after");
}

void run_vs(benchmark::State& state, const std::function<void(cudaStream_t)>& work,
            const std::function<void(cudaStream_t)>& base, Work w, int warmup) {
  Stream stream;
  for (int i = 0; i < warmup; ++i) {
    work(stream);
    base(stream);
  }
  record_clocks(state, "before");
  Event w0, w1, b0, b1;
  std::vector<float> work_ms, base_ms, ratios;
  bool work_first = true;
  ClockSampler clocks;
  for (auto _ : state) {
    auto timed = [&](const std::function<void(cudaStream_t)>& f, Event& e0, Event& e1) {
      e0.record(stream);
      f(stream);
      e1.record(stream);
    };
    if (work_first) {
      timed(work, w0, w1);
      timed(base, b0, b1);
    } else {
      timed(base, b0, b1);
      timed(work, w0, w1);
    }
    clocks.maybe_sample();
    (work_first ? b1 : w1).synchronize();  // the later of the two
    work_first = !work_first;
    const float tw = w1.elapsed_ms_since(w0), tb = b1.elapsed_ms_since(b0);
    state.SetIterationTime(tw * 1e-3);
    work_ms.push_back(tw);
    base_ms.push_back(tb);
    if (tw > 0) ratios.push_back(tb / tw);
  }
  const TimingStats st = summarize(std::move(work_ms)), sb = summarize(std::move(base_ms));
  const double sec = st.median_ms * 1e-3, base_sec = sb.median_ms * 1e-3;
  state.counters["median_us"] = st.median_ms * 1e3;
  state.counters["base_us"] = sb.median_ms * 1e3;
  if (!ratios.empty()) {
    std::sort(ratios.begin(), ratios.end());
    const std::size_t m = ratios.size();
    state.counters["vs_base"] = m % 2 ? ratios[m / 2] : 0.5 * (ratios[m / 2 - 1] + ratios[m / 2]);
  }
  if (w.bytes > 0 && sec > 0 && base_sec > 0) {
    const double gbps = w.bytes / sec / 1e9;
    state.counters["bytes"] = w.bytes;
    state.counters["GB/s"] = gbps;
    state.counters["base_GB/s"] = w.bytes / base_sec / 1e9;
    add_percent(state, "copy", gbps, copy_ceiling_gbps());
  }
  if (w.flops > 0 && sec > 0 && base_sec > 0) {
    state.counters["flops"] = w.flops;
    state.counters["TFLOP/s"] = w.flops / sec / 1e12;
    state.counters["base_TFLOP/s"] = w.flops / base_sec / 1e12;
  }
  clocks.record(state);
  record_clocks(state, "after");
}

CopyBase::CopyBase(double moved_bytes)
    : src_(static_cast<std::size_t>(moved_bytes / 2)),
      dst_(static_cast<std::size_t>(moved_bytes / 2)) {
  if (src_.bytes() > 0) CUDALAB_CHECK(cudaMemset(src_.data(), 1, src_.bytes()));
}

void CopyBase::operator()(cudaStream_t stream) const {
  if (src_.bytes() > 0)
    CUDALAB_CHECK(
        cudaMemcpyAsync(dst_.data(), src_.data(), src_.bytes(), cudaMemcpyDeviceToDevice, stream));
}

bool verify(benchmark::State& state, const std::string& key,
            const std::function<std::string()>& check) {
  static std::map<std::string, std::string> verdicts;  // key -> "" (right) or what is wrong
  auto it = verdicts.find(key);
  if (it == verdicts.end()) {
    std::string what;
    try {
      what = check();
    } catch (const std::exception& e) {
      what = std::string("the check threw: ") + e.what();
    }
    if (what.empty())
      CUDALAB_CHECK(cudaDeviceSynchronize());  // nothing of the check overlaps the timing
    it = verdicts.emplace(key, what).first;
  }
  if (it->second.empty()) return true;
  const std::string msg = "wrong result: " + it->second;
  state.SkipWithError(msg.c_str());
  return false;
}

GpuSample sample_gpu() {
  GpuSample g;
#if defined(CUDALAB_HAVE_NVML)
  static Nvml nvml;
  if (nvml.ok) {
    g.ok = true;
    g.sm_mhz = nvml.clock(NVML_CLOCK_SM);
    g.mem_mhz = nvml.clock(NVML_CLOCK_MEM);
    g.temperature_c = nvml.temperature();
    g.power_w = nvml.power_w();
    g.clock_event_reasons = nvml.event_reasons();
  }
#endif
  return g;
}

void add_context() {
  const DeviceInfo d = device_info();
  benchmark::AddCustomContext("gpu", d.name);
  benchmark::AddCustomContext("compute_capability", fmt::format("{}.{}", d.cc_major, d.cc_minor));
  benchmark::AddCustomContext("sm_count", std::to_string(d.sm_count));
  benchmark::AddCustomContext("l2_mb", fmt::format("{:.0f}", d.l2_bytes / 1048576.0));
  benchmark::AddCustomContext("max_sm_clock_mhz", std::to_string(d.sm_clock_khz / 1000));
  benchmark::AddCustomContext("peak_dram_GBps", fmt::format("{:.0f}", d.peak_dram_gbps()));
  benchmark::AddCustomContext("peak_fp32_TFLOPs", fmt::format("{:.1f}", d.peak_fp32_tflops()));
  benchmark::AddCustomContext("cuda_driver", std::to_string(d.driver_version));
  benchmark::AddCustomContext("cuda_runtime", std::to_string(d.runtime_version));
  benchmark::AddCustomContext("copy_ceiling_GBps", fmt::format("{:.0f}", copy_ceiling_gbps()));
#if defined(CUDALAB_HAVE_NVML)
  Nvml nvml;
  if (nvml.ok) {
    char driver[96] = {};
    if (nvmlSystemGetDriverVersion(driver, sizeof driver) == NVML_SUCCESS)
      benchmark::AddCustomContext("nvidia_driver", driver);
    benchmark::AddCustomContext("sm_clock_mhz_at_start", std::to_string(nvml.clock(NVML_CLOCK_SM)));
    benchmark::AddCustomContext("mem_clock_mhz_at_start",
                                std::to_string(nvml.clock(NVML_CLOCK_MEM)));
    benchmark::AddCustomContext("temperature_c_at_start", std::to_string(nvml.temperature()));
    benchmark::AddCustomContext("power_w_at_start", std::to_string(nvml.power_w()));
    benchmark::AddCustomContext("clock_event_reasons_at_start",
                                clock_reasons_text(nvml.event_reasons()));
    const std::string mig = mig_note(mig_enabled(nvml.dev), d.sm_count, d.global_bytes);
    benchmark::AddCustomContext("mig", mig.empty() ? "off" : mig);
  }
#else
  benchmark::AddCustomContext("nvml", "not built (no nvml.h at configure time)");
#endif
}

int main(int argc, char** argv) {
  // --benchmark_list_tests works without a GPU (registration touches no device): scripts check
  // the row names that bench/chNN/chNN.toml declares against it.
  bool list_only = false;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    if (a == "--benchmark_list_tests" || a == "--benchmark_list_tests=true") list_only = true;
  }
  benchmark::Initialize(&argc, argv);
  if (benchmark::ReportUnrecognizedArguments(argc, argv)) return 1;
  try {
    if (list_only) {
      benchmark::RunSpecifiedBenchmarks();
      return 0;
    }
    if (!has_gpu()) {
      std::printf("%s — nothing to measure: benchmarks need a CUDA device.\n",
                  no_gpu_reason().c_str());
      return 0;
    }
    add_context();
    benchmark::RunSpecifiedBenchmarks();
    benchmark::Shutdown();
  } catch (const std::exception& e) {
    std::fprintf(stderr, "benchmark failed: %s\n", e.what());
    return 1;
  }
  return 0;
}

}  // namespace cudalab::bench
