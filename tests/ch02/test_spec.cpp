// The spec-sheet calculator (worked, host code): every published figure of the table reproduced
// within 1%, each trap named on a doctored sheet, the 102% guard on synthetic rows.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <stdexcept>
#include <string>
#include <vector>

#include "ch02/spec.hpp"
#include "cudalab/device.hpp"
#include "cudalab/testing.hpp"

using namespace cudalab;
using namespace cudalab::ch02;

namespace {

const GpuSpec& gpu(const char* key) {
  const GpuSpec* g = find_gpu(key);
  if (g == nullptr) throw std::runtime_error(std::string("not in the table: ") + key);
  return *g;
}

std::vector<TrapKind> kinds(const std::vector<Trap>& traps) {
  std::vector<TrapKind> k;
  for (const Trap& t : traps) k.push_back(t.kind);
  return k;
}

std::string describe(const std::vector<Trap>& traps) {
  std::string s;
  for (const Trap& t : traps) s += std::string(trap_name(t.kind)) + ": " + t.what + "\n";
  return s.empty() ? "no trap" : s;
}

}  // namespace

TEST(SpecTable, ReproducesEveryPublishedFigureWithinOnePercent) {
  int checked = 0;
  for (const GpuSpec& g : gpu_table()) {
    int of_gpu = 0;
    for (const Metric m : kAllMetrics) {
      const Published p = g.published[index(m)];
      if (p.dense > 0) {
        const double got = sheet_dense(g, m);
        EXPECT_NEAR(got, p.dense, 0.01 * p.dense)
            << g.key << " " << metric_name(m) << " dense: " << formula(g, m);
        ++checked, ++of_gpu;
      }
      if (p.sparse > 0) {
        const double got = sheet_sparse(g, m);
        EXPECT_NEAR(got, p.sparse, 0.01 * p.sparse)
            << g.key << " " << metric_name(m) << " with sparsity: 2 x " << formula(g, m);
        ++checked, ++of_gpu;
      }
    }
    EXPECT_GE(of_gpu, 3) << g.key << ": a table row with almost no published figure checks nothing";
  }
  EXPECT_GE(checked, 60) << "published figures checked";
}

TEST(SpecTable, HasTheGpusOfTheCourse) {
  for (const char* key :
       {"V100-SXM2", "A100-40GB", "A100-80GB", "H100-SXM", "H200", "L4", "RTX-4090", "B200"})
    EXPECT_NE(find_gpu(key), nullptr) << key;
  EXPECT_EQ(find_gpu("h200"), find_gpu("H200")) << "keys are case-insensitive";
  EXPECT_EQ(find_gpu("NVIDIA H200"), find_gpu("H200")) << "cudaDeviceProp names are found too";
  EXPECT_EQ(find_gpu("H300"), nullptr);
  const std::string known = known_gpus();
  for (const GpuSpec& g : gpu_table()) EXPECT_NE(known.find(g.key), std::string::npos);
  for (const GpuSpec& g : gpu_table()) {  // every row is a real GPU, not a half-filled entry
    EXPECT_GT(g.sms, 0) << g.key;
    EXPECT_GT(g.bus_width_bits, 0) << g.key;
    EXPECT_GT(g.mem_clock_mhz, 0) << g.key;
    EXPECT_GT(g.l2_mb, 0) << g.key;
    EXPECT_FALSE(g.source.empty()) << g.key;
  }
}

TEST(SpecTable, HopperArithmeticAsTheSheetDoesIt) {
  const GpuSpec& h = gpu("H200");
  // 132 SM x 1.83 GHz x 4096 FLOP/clk/SM = 989.4 dense BF16 TFLOP/s; FP8 twice that.
  EXPECT_NEAR(sheet_dense(h, Metric::bf16), 132 * 1.83e9 * 4096 / 1e12, 1e-9);
  EXPECT_NEAR(sheet_dense(h, Metric::fp8), 2 * sheet_dense(h, Metric::bf16), 1e-9);
  EXPECT_NEAR(sheet_sparse(h, Metric::bf16), 1978.9, 0.1);
  // CUDA-core rows at 1.98 GHz: 132 x 128 x 2 x 1.98 GHz = 66.9; FP64 tensor at 1.98 GHz too.
  EXPECT_NEAR(sheet_dense(h, Metric::fp32), 66.9, 0.05);
  EXPECT_NEAR(sheet_dense(h, Metric::fp64_tensor), 66.9, 0.05);
  EXPECT_DOUBLE_EQ(sheet_clock_mhz(h, Metric::fp64_tensor), 1980);
  EXPECT_DOUBLE_EQ(sheet_clock_mhz(h, Metric::tf32), 1830);
  // DRAM: 2 x 3201 MHz x 6016 bit / 8 = 4814 GB/s.
  EXPECT_NEAR(sheet_dense(h, Metric::dram), 4814.4, 0.1);
  EXPECT_NEAR(dram_gbps(6016, 3201), 4814.4, 0.1);
  // The clock-adjusted peak scales with the clock read during a run.
  EXPECT_NEAR(peak_at_clock(h, Metric::bf16, 1755), sheet_dense(h, Metric::bf16) * 1755 / 1830,
              1e-9);
  EXPECT_EQ(formula(h, Metric::bf16), "132 SM x 4096 FLOP/clk/SM x 1830 MHz");
  EXPECT_EQ(formula(h, Metric::fp32), "132 SM x 128 lanes x 2 FLOP/FMA x 1980 MHz");
  EXPECT_EQ(formula(h, Metric::dram), "2 x 3201 MHz x 6016 bit / 8");
  EXPECT_NEAR(smem_peak_gbps(h, 1980), 132 * 128 * 1.98, 1e-6);
  // No sparse figure for rows without 2:4 support or for CUDA-core rows.
  EXPECT_EQ(sheet_sparse(h, Metric::fp32), 0);
  EXPECT_EQ(sheet_sparse(h, Metric::fp64_tensor), 0);
  EXPECT_EQ(sheet_sparse(gpu("V100-SXM2"), Metric::fp16), 0);
}

TEST(SpecTraps, WithSparsityRowIsTwiceDense) {
  for (const bool footnote : {true, false}) {
    const std::vector<Trap> t =
        find_traps({.gpu = "H200", .rows = {{Metric::bf16, 1979, footnote}}});
    ASSERT_EQ(kinds(t), std::vector<TrapKind>{TrapKind::sparsity}) << describe(t);
    EXPECT_NEAR(t[0].honest, 989.4, 0.1);
    EXPECT_NE(t[0].what.find("989.4"), std::string::npos) << t[0].what;
  }
  const std::vector<Trap> t = find_traps({.gpu = "H100-SXM", .rows = {{Metric::int8, 3958}}});
  EXPECT_EQ(kinds(t), std::vector<TrapKind>{TrapKind::sparsity}) << describe(t);
  const std::vector<Trap> l4 = find_traps({.gpu = "L4", .rows = {{Metric::fp8, 485, true}}});
  EXPECT_EQ(kinds(l4), std::vector<TrapKind>{TrapKind::sparsity}) << describe(l4);
}

TEST(SpecTraps, TensorRowAtTheBoostClock) {
  // 132 x 4096 x 1.98 GHz = 1070.5: a tensor row computed at the CUDA-core clock.
  const std::vector<Trap> t = find_traps({.gpu = "H200", .rows = {{Metric::bf16, 1070.5}}});
  ASSERT_EQ(kinds(t), std::vector<TrapKind>{TrapKind::boost_clock}) << describe(t);
  EXPECT_NEAR(t[0].honest, 989.4, 0.1);
  // Both at once: 2141 = with sparsity at the boost clock.
  const std::vector<Trap> both = find_traps({.gpu = "H100-SXM", .rows = {{Metric::fp16, 2141}}});
  EXPECT_EQ(kinds(both), (std::vector<TrapKind>{TrapKind::boost_clock, TrapKind::sparsity}))
      << describe(both);
  // Where the tensor and CUDA-core clocks are the same there is no such trap.
  const std::vector<Trap> a100 = find_traps({.gpu = "A100-80GB", .rows = {{Metric::bf16, 312}}});
  EXPECT_TRUE(a100.empty()) << describe(a100);
}

TEST(SpecTraps, SustainedClockBelowTheSheet) {
  // An H100 PCIe-like power cap: 1395 MHz sustained against the 1980 MHz of the sheet.
  const std::vector<Trap> t = find_traps(
      {.gpu = "H100-SXM", .rows = {{Metric::fp32, 66.9}}, .observed_sm_clock_mhz = 1395});
  ASSERT_EQ(kinds(t), std::vector<TrapKind>{TrapKind::sustained_clock}) << describe(t);
  EXPECT_NEAR(t[0].honest, 132 * 256 * 1.395e9 / 1e12, 1e-9);
  // Within 2% of the sheet's clock: no trap.
  const std::vector<Trap> ok = find_traps(
      {.gpu = "H100-SXM", .rows = {{Metric::fp32, 66.9}}, .observed_sm_clock_mhz = 1965});
  EXPECT_TRUE(ok.empty()) << describe(ok);
  // Tensor rows are judged against their own (1830 MHz) clock: 1800 MHz is fine for them.
  const std::vector<Trap> tc =
      find_traps({.gpu = "H200", .rows = {{Metric::bf16, 989.4}}, .observed_sm_clock_mhz = 1800});
  EXPECT_TRUE(tc.empty()) << describe(tc);
}

TEST(SpecTraps, DualIssueFp32CudaCores) {
  const std::vector<Trap> t = find_traps({.gpu = "RTX-4090", .rows = {{Metric::fp32, 82.6}}});
  ASSERT_EQ(kinds(t), std::vector<TrapKind>{TrapKind::dual_issue_fp32}) << describe(t);
  EXPECT_NEAR(t[0].honest, 41.3, 0.1);
  EXPECT_EQ(kinds(find_traps({.gpu = "L4", .rows = {{Metric::fp32, 30.3}}})),
            std::vector<TrapKind>{TrapKind::dual_issue_fp32});
  // Hopper's 128 FP32 lanes per SM are all FP32: no trap on the same kind of row.
  const std::vector<Trap> h = find_traps({.gpu = "H200", .rows = {{Metric::fp32, 66.9}}});
  EXPECT_TRUE(h.empty()) << describe(h);
}

TEST(SpecTraps, DriverReportedBusWidth) {
  // B200: 2 x 3996 MHz x 8192 bit / 8 = 8184 GB/s from the bus older drivers reported.
  const std::vector<Trap> t = find_traps({.gpu = "B200", .rows = {{Metric::dram, 8184}}});
  ASSERT_EQ(kinds(t), std::vector<TrapKind>{TrapKind::bus_width}) << describe(t);
  EXPECT_NEAR(t[0].honest, 7672.3, 0.1);
  const std::vector<Trap> r =
      find_traps({.gpu = "B200", .reported_bus_width_bits = 8192, .reported_mem_clock_mhz = 3996});
  ASSERT_EQ(kinds(r), std::vector<TrapKind>{TrapKind::bus_width}) << describe(r);
  EXPECT_NEAR(r[0].claimed, 8183.8, 0.1);
  EXPECT_NEAR(r[0].honest, 7672.3, 0.1);
  // The real bus, or an H200 whose driver reports what it has: no trap.
  EXPECT_TRUE(find_traps({.gpu = "B200", .rows = {{Metric::dram, 7700}}}).empty());
  EXPECT_TRUE(find_traps({.gpu = "H200", .reported_bus_width_bits = 6016}).empty());
}

TEST(SpecTraps, MigSlicesAreNotSevenths) {
  const std::vector<Trap> t =
      find_traps({.gpu = "H200", .mig_profile = "1g.18gb", .mig_instances = 7});
  ASSERT_EQ(kinds(t), std::vector<TrapKind>{TrapKind::mig}) << describe(t);
  EXPECT_NE(t[0].what.find("112 of the H200's 132 SMs"), std::string::npos) << t[0].what;
  EXPECT_NE(t[0].what.find("16.00 GiB, not 18"), std::string::npos) << t[0].what;
  EXPECT_DOUBLE_EQ(t[0].honest, 16.0);
  EXPECT_DOUBLE_EQ(t[0].claimed, 18.0);
  cudalab::testing::expect_throws_naming(
      [] { find_traps({.gpu = "H200", .mig_profile = "1g.10gb"}); }, "mig_profile");
  cudalab::testing::expect_throws_naming(
      [] { find_traps({.gpu = "H200", .mig_profile = "1g.18gb", .mig_instances = 8}); },
      "mig_instances");
  cudalab::testing::expect_throws_naming(
      [] { find_traps({.gpu = "V100-SXM2", .mig_profile = "1g.5gb"}); }, "mig_profile");
}

TEST(SpecTraps, CleanSheetHasNoTrapAndNoiseIsUnexplained) {
  for (const GpuSpec& g : gpu_table()) {
    Sheet s{.gpu = std::string(g.key)};
    for (const Metric m : kAllMetrics)
      if (g.published[index(m)].dense > 0 && !(m == Metric::fp32 && g.fp32_dual_issue))
        s.rows.push_back({m, g.published[index(m)].dense});
    const std::vector<Trap> t = find_traps(s);
    EXPECT_TRUE(t.empty()) << g.key << ": " << describe(t);
  }
  const std::vector<Trap> t = find_traps({.gpu = "H200", .rows = {{Metric::fp32, 100}}});
  EXPECT_EQ(kinds(t), std::vector<TrapKind>{TrapKind::unexplained}) << describe(t);
  const std::vector<Trap> none = find_traps({.gpu = "V100-SXM2", .rows = {{Metric::int8, 62}}});
  EXPECT_EQ(kinds(none), std::vector<TrapKind>{TrapKind::unexplained}) << "V100 has no int8 tensor";
  cudalab::testing::expect_throws_naming([] { find_traps({.gpu = "H300"}); }, "gpu");
}

TEST(SpecGuard, RowsAbove102PercentFail) {
  struct Row {
    double measured, peak;
    bool ok;
  };
  // Synthetic rows: a good kernel, one at the edge, a FLOP counted twice, bytes read+write
  // counted for a read, nonsense.
  for (const Row& r : std::vector<Row>{{58.0, 66.9, true},
                                       {66.9 * 1.02, 66.9, true},
                                       {66.9 * 1.0201, 66.9, false},
                                       {2 * 58.0, 66.9, false},
                                       {2 * 3900.0, 4814.4, false},
                                       {0.0, 1.0, true},
                                       {-1.0, 1.0, false},
                                       {std::nan(""), 1.0, false}}) {
    const GuardVerdict v = guard(r.measured, r.peak);
    EXPECT_EQ(v.ok, r.ok) << r.measured << " / " << r.peak << ": " << v.what;
    EXPECT_EQ(v.what.empty(), r.ok) << "a failing row says why";
    if (std::isfinite(r.measured)) {
      EXPECT_NEAR(v.ratio, r.measured / r.peak, 1e-12);
    }
  }
  cudalab::testing::expect_throws_naming([] { guard(1.0, 0.0); }, "peak");
}

TEST(SpecJson, SheetRowsAndJsonCarryTheFormula) {
  const GpuSpec& h = gpu("H200");
  const std::vector<SheetRow> rows = sheet_rows(h);
  ASSERT_EQ(rows.size(), 9u) << "every metric of the H200";
  const std::string j = sheet_json(h);
  EXPECT_NE(j.find("\"formula\": \"132 SM x 4096 FLOP/clk/SM x 1830 MHz\""), std::string::npos);
  EXPECT_NE(j.find("\"profile\": \"1g.18gb\""), std::string::npos);
  EXPECT_EQ(std::count(j.begin(), j.end(), '{'), std::count(j.begin(), j.end(), '}'));
  // B200: no CUDA-core clock published, so no FP32 row, and its tensor clock is marked implied.
  const std::vector<SheetRow> b = sheet_rows(gpu("B200"));
  EXPECT_TRUE(
      std::none_of(b.begin(), b.end(), [](const SheetRow& r) { return r.metric == Metric::fp32; }));
  EXPECT_NE(formula(gpu("B200"), Metric::bf16).find("implied"), std::string::npos);
  EXPECT_EQ(metric_from_name("BF16"), Metric::bf16);
  EXPECT_EQ(metric_from_name("fp4"), std::nullopt);
}

// The calculator fed from this device: when the GPU is in the table, what cudaDeviceProp reports
// (SMs, bus, memory clock, L2, the maximum SM clock) agrees with the table row.
TEST(SpecDeviceGpu, TableAgreesWithThisDevice) {
  CUDALAB_REQUIRE_GPU();
  const DeviceInfo d = device_info();
  const GpuSpec* g = find_gpu(d.name);
  if (g == nullptr)
    GTEST_SKIP() << "skipped: " << d.name << " is not in the table (" << known_gpus() << ")";
  EXPECT_EQ(d.sm_count, g->sms) << d.name;
  EXPECT_EQ(d.cc(), g->cc) << d.name;
  EXPECT_EQ(d.bus_width_bits, g->reported_bus_width_bits) << d.name << ": the driver's bus width";
  EXPECT_NEAR(d.mem_clock_khz / 1000.0, g->mem_clock_mhz, 0.01 * g->mem_clock_mhz) << d.name;
  EXPECT_NEAR(d.l2_bytes / 1048576.0, g->l2_mb, 1.0) << d.name;
  if (g->core_clock_mhz > 0) {
    EXPECT_NEAR(d.sm_clock_khz / 1000.0, g->core_clock_mhz, 0.01 * g->core_clock_mhz)
        << d.name << ": the maximum SM clock is the clock of the CUDA-core rows";
  }
  EXPECT_NEAR(d.peak_dram_gbps(), dram_gbps(g->reported_bus_width_bits, g->mem_clock_mhz),
              0.01 * d.peak_dram_gbps())
      << "DeviceInfo's derived peak and the calculator agree";
}
