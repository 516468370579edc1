// Exercise 4.5 — copy-then-kernel and zero-copy give the same sums (exact: the oracle adds the
// same floats in the same order), plus the transfer-time model of cpu/transfer_fit.cpp on
// synthetic data (CPU: runs on CI).
#include <gtest/gtest.h>

#include <cmath>
#include <span>
#include <string>
#include <tuple>
#include <vector>

#include "ch04/ch04.hpp"
#include "cudalab/delay.hpp"
#include "cudalab/random.hpp"
#include "cudalab/stream.hpp"
#include "cudalab/testing.hpp"

using namespace cudalab;

namespace {
std::vector<float> rotate_sum_oracle(std::span<const float> in, int passes) {
  const std::size_t n = in.size();
  std::vector<float> out(n);
  const std::size_t shift = n ? ch04::kRotation % n : 0;
  for (std::size_t i = 0; i < n; ++i) {
    float acc = 0.0f;
    std::size_t j = i;
    for (int r = 0; r < passes; ++r) {
      acc += in[j];
      j += shift;
      if (j >= n) j -= n;
    }
    out[i] = acc;
  }
  return out;
}

using Case = std::tuple<std::size_t, int>;  // n, passes
std::string case_name(const ::testing::TestParamInfo<Case>& p) {
  return "n_" + std::to_string(std::get<0>(p.param)) + "_passes_" +
         std::to_string(std::get<1>(p.param));
}

// Runs one access mode on a NON-BLOCKING stream with a poisoned staging buffer while the legacy
// default stream is held by a 20 ms delay (cudalab/delay.hpp): a copy that is not ordered before
// the kernel (left on the legacy stream) then starts after the kernel has summed the poison, on
// every run, however fast the copy would have been on an idle GPU.
void check_access(ch04::HostAccess access, std::size_t n, int passes, const char* what) {
  Rng rng;
  PinnedBuffer<float> host(n, cudaHostAllocMapped);
  rng.fill_uniform<float>(host.span(), -1.0f, 1.0f);
  DeviceBuffer<float> staging(n);
  cudalab::testing::GuardedOutput<float> out(n);
  Stream stream;  // cudaStreamNonBlocking
  // A warm-up of the call and of the delay with nothing in flight: with lazy module loading the
  // first launch of a kernel may wait for the whole device, which would end the delay before the
  // kernel under test is enqueued (delay.hpp).
  delay_stream(cudaStreamLegacy, 1.0);
  ch04::rotate_sum_from_host(host.data(), staging.data(), out.data(), n, passes, access, stream);
  CUDALAB_CHECK(cudaDeviceSynchronize());
  poison_device(staging.data(), staging.bytes());
  poison_device(out.data(), (n + out.kGuard) * sizeof(float));
  CUDALAB_CHECK(cudaDeviceSynchronize());
  delay_stream(cudaStreamLegacy, kOrderingDelayUs);
  ch04::rotate_sum_from_host(host.data(), staging.data(), out.data(), n, passes, access, stream);
  stream.synchronize();  // the copy and the kernel on `stream` do not wait for the legacy stream
  EXPECT_MATCHES(compare(out.result(), rotate_sum_oracle(host.span(), passes), {},
                         std::string(what) + " (exercise 4.5, n = " + std::to_string(n) +
                             ", passes = " + std::to_string(passes) + ")"));
  EXPECT_TRUE(out.guard_intact());
  // Technique: the two modes must differ in how the data gets there. Copy-then-kernel copies the
  // input into `staging` (so staging now holds it); zero-copy reads the mapped host memory in place
  // (so staging, passed anyway, keeps its poison). Zero-copy used for both modes, or a copy used
  // for both, fails here although its sums are right.
  const std::vector<float> staged = staging.to_host();
  const std::string mode = std::string(what) + " (exercise 4.5, n = " + std::to_string(n) + ")";
  if (access == ch04::HostAccess::kCopyThenKernel) {
    EXPECT_MATCHES(
        compare(staged, std::vector<float>(host.span().begin(), host.span().end()), {},
                mode + ": the staging buffer must hold the copied input (was the copy skipped, "
                       "the kernel reading host memory directly?)"));
  } else {
    const std::size_t written = count_overwritten(std::span<const float>(staged), 0, n);
    EXPECT_EQ(written, 0u)
        << mode << ": " << written << " of " << n
        << " staging elements were written: zero-copy must read the mapped host memory "
           "in place (cudaHostGetDevicePointer), not copy it to the device first";
  }
}
}  // namespace

class ZeroCopyGpu : public ::testing::TestWithParam<Case> {};

TEST_P(ZeroCopyGpu, CopyThenKernelMatchesOracle) {
  CUDALAB_REQUIRE_GPU();
  const auto [n, passes] = GetParam();
  check_access(ch04::HostAccess::kCopyThenKernel, n, passes,
               "rotate_sum_from_host copy-then-kernel");
}

TEST_P(ZeroCopyGpu, ZeroCopyMatchesOracle) {
  CUDALAB_REQUIRE_GPU();
  const auto [n, passes] = GetParam();
  check_access(ch04::HostAccess::kZeroCopy, n, passes, "rotate_sum_from_host zero-copy");
}

// Zero-copy needs no staging buffer at all: with staging = nullptr it must read the mapped host
// memory in place (a copy to a device buffer has nowhere to go).
TEST_P(ZeroCopyGpu, ZeroCopyNeedsNoStaging) {
  CUDALAB_REQUIRE_GPU();
  const auto [n, passes] = GetParam();
  Rng rng;
  PinnedBuffer<float> host(n, cudaHostAllocMapped);
  rng.fill_uniform<float>(host.span(), -1.0f, 1.0f);
  cudalab::testing::GuardedOutput<float> out(n);
  ch04::rotate_sum_from_host(host.data(), nullptr, out.data(), n, passes,
                             ch04::HostAccess::kZeroCopy);
  CUDALAB_CHECK(cudaDeviceSynchronize());
  EXPECT_MATCHES(compare(out.result(), rotate_sum_oracle(host.span(), passes), {},
                         "rotate_sum_from_host zero-copy, staging = nullptr (exercise 4.5, n = " +
                             std::to_string(n) + ", passes = " + std::to_string(passes) + ")"));
  EXPECT_TRUE(out.guard_intact());
}

TEST_P(ZeroCopyGpu, DeviceResidentMatchesOracle) {
  CUDALAB_REQUIRE_GPU();
  const auto [n, passes] = GetParam();
  Rng rng;
  const auto in = rng.uniform<float>(n, -1.0f, 1.0f);
  auto d_in = to_device(in);
  cudalab::testing::GuardedOutput<float> out(n);
  ch04::rotate_sum(d_in.data(), out.data(), n, passes);
  CUDALAB_CHECK(cudaDeviceSynchronize());
  EXPECT_MATCHES(compare(out.result(), rotate_sum_oracle(in, passes), {},
                         "rotate_sum (n = " + std::to_string(n) + ")"));
  EXPECT_TRUE(out.guard_intact());
}

// The stream contract (cudalab/testing.hpp, replay_from_capture): all the work on the caller's
// stream. A launch without the stream argument runs on the legacy default stream while the call is
// recorded, not in the recorded graph, so the replay leaves the output poisoned.
TEST(RotateSumStreamGpu, AllWorkOnTheCallersStream) {
  CUDALAB_REQUIRE_GPU();
  const std::size_t n = 4097;
  const int passes = 3;
  Rng rng;
  const auto in = rng.uniform<float>(n, -1.0f, 1.0f);
  auto d_in = to_device(in);
  cudalab::testing::GuardedOutput<float> out(n);
  cudalab::testing::replay_from_capture(
      [&](cudaStream_t s) { ch04::rotate_sum(d_in.data(), out.data(), n, passes, s); },
      [&] { out.repoison(); });
  EXPECT_MATCHES(compare(out.result(), rotate_sum_oracle(in, passes), {},
                         "rotate_sum replayed from a capture of its stream"));
}

INSTANTIATE_TEST_SUITE_P(Sizes, ZeroCopyGpu,
                         ::testing::Combine(::testing::Values(std::size_t{1}, std::size_t{33},
                                                              std::size_t{1000}, std::size_t{4097},
                                                              (std::size_t{1} << 22) + 5),
                                            ::testing::Values(1, 3)),
                         case_name);

TEST(ZeroCopyArgsGpu, RejectsPageableHostMemory) {
  CUDALAB_REQUIRE_GPU();
  std::vector<float> pageable(100, 1.0f);
  DeviceBuffer<float> staging(100), out(100);
  try {
    ch04::rotate_sum_from_host(pageable.data(), staging.data(), out.data(), 100, 1,
                               ch04::HostAccess::kZeroCopy);
    FAIL() << "expected std::invalid_argument";
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find("'host_in'"), std::string::npos) << e.what();
  }
}

TEST(ZeroCopyArgs, RejectsBadPasses) {
  EXPECT_THROW(ch04::rotate_sum(nullptr, nullptr, 0, 0), std::invalid_argument);
  EXPECT_THROW(ch04::rotate_sum_from_host(nullptr, nullptr, nullptr, 0, ch04::kMaxPasses + 1,
                                          ch04::HostAccess::kZeroCopy),
               std::invalid_argument);
  EXPECT_NO_THROW(ch04::rotate_sum(nullptr, nullptr, 0, 1));
  EXPECT_NO_THROW(
      ch04::rotate_sum_from_host(nullptr, nullptr, nullptr, 0, 1, ch04::HostAccess::kZeroCopy));
}

// ---- transfer model -------------------------------------------------------------------------

namespace {
std::vector<double> sweep_sizes() {  // 4 KiB .. 1 GiB, x4
  std::vector<double> s;
  for (double b = 4096; b <= 1073741824.0; b *= 4) s.push_back(b);
  return s;
}
}  // namespace

TEST(TransferFit, RecoversAnExactLine) {
  const double latency = 8e-6, bandwidth = 50e9;
  const auto sizes = sweep_sizes();
  std::vector<double> t;
  for (const double b : sizes) t.push_back(latency + b / bandwidth);
  const ch04::TransferFit f = ch04::fit_transfer_times(sizes, t);
  EXPECT_NEAR(f.latency_s, latency, 1e-12);
  EXPECT_NEAR(f.bandwidth_bytes_per_s / bandwidth, 1.0, 1e-9);
  EXPECT_NEAR(f.r2, 1.0, 1e-12);
  EXPECT_NEAR(f.half_bandwidth_bytes(), latency * bandwidth, 1e-3);  // 400 KB
  EXPECT_NEAR(f.effective_bandwidth(f.half_bandwidth_bytes()) / bandwidth, 0.5, 1e-9);
  EXPECT_NEAR(f.predict_seconds(1e9), latency + 1e9 / bandwidth, 1e-15);
}

TEST(TransferFit, ToleratesMeasurementNoise) {
  // +-3% deterministic jitter on every time, like a shared machine: the bandwidth (set by the
  // large sizes) comes back within a few percent, the latency within its noise.
  const double latency = 10e-6, bandwidth = 25e9;
  const auto sizes = sweep_sizes();
  std::vector<double> t;
  for (std::size_t i = 0; i < sizes.size(); ++i)
    t.push_back((latency + sizes[i] / bandwidth) * (1.0 + (i % 2 ? 0.03 : -0.03)));
  const ch04::TransferFit f = ch04::fit_transfer_times(sizes, t);
  EXPECT_NEAR(f.bandwidth_bytes_per_s / bandwidth, 1.0, 0.05);
  EXPECT_GT(f.r2, 0.99);
}

TEST(TransferFit, LatencySurvivesBandwidthWobbleAtLargeSizes) {
  // +-5% bandwidth wobble on the sizes >= 64 MiB only (what a shared bus does). An unweighted fit
  // of absolute times returns a latency of ~57 us here; the relative (1 / t^2) weighting keeps it
  // near the true 10 us, because the small sizes now decide the intercept.
  const double latency = 10e-6, bandwidth = 50e9;
  const auto sizes = sweep_sizes();
  std::vector<double> t;
  for (std::size_t i = 0; i < sizes.size(); ++i) {
    const double wobble = sizes[i] >= 64.0 * 1048576 ? (i % 2 ? 1.05 : 0.95) : 1.0;
    t.push_back(latency + sizes[i] / (bandwidth * wobble));
  }
  const ch04::TransferFit f = ch04::fit_transfer_times(sizes, t);
  EXPECT_NEAR(f.latency_s / latency, 1.0, 0.05);
  EXPECT_NEAR(f.bandwidth_bytes_per_s / bandwidth, 1.0, 0.05);
}

TEST(TransferFit, PureLatencyAndPureBandwidth) {
  const std::vector<double> sizes{1e3, 1e6, 1e9};
  const ch04::TransferFit flat =
      ch04::fit_transfer_times(sizes, std::vector<double>{5e-6, 5e-6, 5e-6});
  EXPECT_NEAR(flat.latency_s, 5e-6, 1e-15);
  // Times that fall with size are noise, not a bus: a non-positive slope reports bandwidth 0.
  const ch04::TransferFit falling =
      ch04::fit_transfer_times(sizes, std::vector<double>{6e-6, 5e-6, 4e-6});
  EXPECT_EQ(falling.bandwidth_bytes_per_s, 0.0);
  const ch04::TransferFit line =
      ch04::fit_transfer_times(sizes, std::vector<double>{1e-7, 1e-4, 1e-1});
  EXPECT_NEAR(line.latency_s, 0.0, 1e-12);
  EXPECT_NEAR(line.bandwidth_bytes_per_s, 1e10, 1e-2);
}

TEST(TransferFit, RejectsBadInput) {
  const std::vector<double> two{1e3, 1e6}, one{1e3}, times{1e-6, 1e-5};
  EXPECT_THROW(ch04::fit_transfer_times(one, std::vector<double>{1e-6}), std::invalid_argument);
  EXPECT_THROW(ch04::fit_transfer_times(two, std::vector<double>{1e-6}), std::invalid_argument);
  EXPECT_THROW(ch04::fit_transfer_times(std::vector<double>{1e3, 1e3}, times),
               std::invalid_argument);
  EXPECT_THROW(ch04::fit_transfer_times(two, std::vector<double>{1e-6, 0.0}),
               std::invalid_argument);
  EXPECT_THROW(ch04::fit_transfer_times(std::vector<double>{-1.0, 1e6}, times),
               std::invalid_argument);
  EXPECT_THROW(ch04::fit_transfer_times(two, std::vector<double>{1e-6, NAN}),
               std::invalid_argument);
}
