// The benchmark helper: manual time from events, counters derived from the median, the copy
// ceiling measured in the same process, and a main() that does not fail without a GPU.
#include <benchmark/benchmark.h>
#include <gtest/gtest.h>

#include <fstream>
#include <iterator>
#include <map>
#include <string>
#include <vector>

#include "cudalab/bench.hpp"
#include "cudalab/device.hpp"
#include "cudalab/memory.hpp"
#include "cudalab/testing.hpp"

using namespace cudalab;

namespace {

// Keeps the counters of every run instead of printing them.
class Capture : public benchmark::BenchmarkReporter {
 public:
  bool ReportContext(const Context&) override { return true; }
  void ReportRuns(const std::vector<Run>& runs) override {
    for (const auto& r : runs) {
      std::map<std::string, double> c;
      for (const auto& [k, v] : r.counters) c[k] = v.value;
      counters.push_back(c);
    }
  }
  std::vector<std::map<std::string, double>> counters;
};

}  // namespace

TEST(Bench, MainWithoutGpuSaysSoAndSucceeds) {
  if (has_gpu()) GTEST_SKIP() << "skipped: this check is for machines without a GPU";
  char name[] = "bench", filter[] = "--benchmark_filter=NONE";
  char* argv[] = {name, filter, nullptr};
  ::testing::internal::CaptureStdout();
  EXPECT_EQ(bench::main(2, argv), 0);
  EXPECT_NE(::testing::internal::GetCapturedStdout().find("nothing to measure"), std::string::npos);
}

// bench::verify: a wrong result makes the row an error row ("wrong result: ..."), never a number,
// and the check runs once per key however many repetitions (no GPU needed: a failing check makes
// no device call). Read back through the JSON file, whose fields GB 1.7 and 1.8 share.
TEST(Bench, AWrongResultIsAnErrorRowCheckedOnce) {
  int calls = 0;
  benchmark::RegisterBenchmark("verify_wrong_result", [&calls](benchmark::State& st) {
    if (!bench::verify(st, "verify_wrong_result", [&calls] {
          ++calls;
          return std::string("sum is 3, want 4");
        }))
      return;
    for (auto _ : st) {
    }
  })->Iterations(1);
  std::string out = "--benchmark_out=" + ::testing::TempDir() + "verify_wrong_result.json";
  char name[] = "bench", filter[] = "--benchmark_filter=^verify_wrong_result",
       reps[] = "--benchmark_repetitions=2", format[] = "--benchmark_out_format=json";
  char* argv[] = {name, filter, reps, format, out.data(), nullptr};
  int argc = 5;
  benchmark::Initialize(&argc, argv);
  ::testing::internal::CaptureStdout();
  benchmark::RunSpecifiedBenchmarks();
  ::testing::internal::GetCapturedStdout();
  EXPECT_EQ(calls, 1);
  std::ifstream json(::testing::TempDir() + "verify_wrong_result.json");
  const std::string text((std::istreambuf_iterator<char>(json)), std::istreambuf_iterator<char>());
  EXPECT_NE(text.find("wrong result: sum is 3, want 4"), std::string::npos) << text;
  EXPECT_EQ(text.find("\"GB/s\""), std::string::npos) << "an error row carries no number";
  // Leave Google Benchmark as the next test expects it: no rows, default flags.
  benchmark::ClearRegisteredBenchmarks();
  char all[] = "--benchmark_filter=.", one[] = "--benchmark_repetitions=1",
       no_out[] = "--benchmark_out=";
  char* reset[] = {name, all, one, no_out, nullptr};
  int reset_argc = 4;
  benchmark::Initialize(&reset_argc, reset);
}

TEST(BenchGpu, CountersComeFromTheMedianEventTime) {
  CUDALAB_REQUIRE_GPU();
  const std::size_t bytes = std::size_t{256} << 20;
  DeviceBuffer<char> a(bytes), b(bytes);
  CUDALAB_CHECK(cudaMemset(a.data(), 1, bytes));
  benchmark::RegisterBenchmark(
      "copy_256MiB",
      [&](benchmark::State& st) {
        bench::run(st,
                   [&](cudaStream_t s) {
                     CUDALAB_CHECK(
                         cudaMemcpyAsync(b.data(), a.data(), bytes, cudaMemcpyDeviceToDevice, s));
                   },
                   {.bytes = 2.0 * bytes, .flops = 1e9});
      })
      ->UseManualTime()
      ->Iterations(10);
  Capture capture;
  char name[] = "bench";
  char* argv[] = {name, nullptr};
  int argc = 1;
  benchmark::Initialize(&argc, argv);
  ASSERT_EQ(benchmark::RunSpecifiedBenchmarks(&capture), 1u);
  ASSERT_EQ(capture.counters.size(), 1u);
  const auto& c = capture.counters[0];
  ASSERT_TRUE(c.count("median_us") && c.count("GB/s") && c.count("TFLOP/s") &&
              c.count("pct_of_copy"));
  EXPECT_GT(c.at("median_us"), 0.0);
  EXPECT_NEAR(c.at("GB/s"), 2.0 * bytes / (c.at("median_us") * 1e-6) / 1e9, 1e-6 * c.at("GB/s"));
  EXPECT_NEAR(c.at("TFLOP/s"), 1e9 / (c.at("median_us") * 1e-6) / 1e12, 1e-6 * c.at("TFLOP/s"));
  EXPECT_NEAR(c.at("pct_of_copy"), 100.0 * c.at("GB/s") / bench::copy_ceiling_gbps(),
              1e-6 * c.at("pct_of_copy"));
  // A device-to-device copy of 256 MiB is the ceiling's own operation: within a factor of two.
  EXPECT_GT(c.at("pct_of_copy"), 50.0);
  EXPECT_LT(c.at("pct_of_copy"), 200.0);
}

// bench::run_vs: work and base alternate in every iteration; the same copy as both reads parity.
TEST(BenchGpu, RunVsReportsTheBaseAndTheInterleavedRatio) {
  CUDALAB_REQUIRE_GPU();
  benchmark::ClearRegisteredBenchmarks();
  const std::size_t bytes = std::size_t{256} << 20;
  DeviceBuffer<char> a(bytes), b(bytes), c(bytes);
  CUDALAB_CHECK(cudaMemset(a.data(), 1, bytes));
  benchmark::RegisterBenchmark("copy_vs_copy",
                               [&](benchmark::State& st) {
                                 bench::run_vs(
                                     st,
                                     [&](cudaStream_t s) {
                                       CUDALAB_CHECK(cudaMemcpyAsync(b.data(), a.data(), bytes,
                                                                     cudaMemcpyDeviceToDevice, s));
                                     },
                                     [&](cudaStream_t s) {
                                       CUDALAB_CHECK(cudaMemcpyAsync(c.data(), a.data(), bytes,
                                                                     cudaMemcpyDeviceToDevice, s));
                                     },
                                     {.bytes = 2.0 * bytes});
                               })
      ->UseManualTime()
      ->Iterations(20);
  Capture capture;
  char name[] = "bench";
  char* argv[] = {name, nullptr};
  int argc = 1;
  benchmark::Initialize(&argc, argv);
  ASSERT_EQ(benchmark::RunSpecifiedBenchmarks(&capture), 1u);
  const auto& r = capture.counters.at(0);
  ASSERT_TRUE(r.count("vs_base") && r.count("base_us") && r.count("base_GB/s") && r.count("GB/s"));
  EXPECT_GT(r.at("vs_base"), 0.8);
  EXPECT_LT(r.at("vs_base"), 1.25);
  EXPECT_NEAR(r.at("base_GB/s"), 2.0 * bytes / (r.at("base_us") * 1e-6) / 1e9,
              1e-6 * r.at("base_GB/s"));
  benchmark::ClearRegisteredBenchmarks();
}

// bench::ReadBase: reads every one of its N bytes once (its checked sum is the bytes', at a size
// that leaves a tail of n % 16 bytes and at one of many blocks), times like any base, and reads
// nothing for N = 0.
TEST(BenchGpu, ReadBaseReadsEveryByteOnce) {
  CUDALAB_REQUIRE_GPU();
  for (const double n : {1.0, 15.0, 16.0, 4097.0, 1e6 + 3, 64.0 * (1 << 20) + 5}) {
    const bench::ReadBase read(n);
    EXPECT_EQ(read.bytes(), static_cast<std::size_t>(n));
    EXPECT_EQ(read.check(), "") << n << " bytes";
    EXPECT_EQ(read.check(), "") << n << " bytes, again (the partial sums are overwritten)";
  }
  const bench::ReadBase none(0);
  EXPECT_EQ(none.bytes(), 0u);
  EXPECT_EQ(none.check(), "");
  none(nullptr);
  CUDALAB_CHECK(cudaDeviceSynchronize());
}
