// What every chapter's benchmark JSON says about clocks and MIG (common/src/bench.cpp): the
// clock-event reason names the report flags by, and the per-instance note of a MIG run.
#include <gtest/gtest.h>

#include <string>

#include "cudalab/bench.hpp"

using namespace cudalab;

TEST(BenchContext, ClockReasonsByName) {
  EXPECT_EQ(bench::clock_reasons_text(0), "none");
  EXPECT_EQ(bench::clock_reasons_text(0x1), "GpuIdle");
  EXPECT_EQ(bench::clock_reasons_text(0x4 | 0x40), "SwPowerCap,HwThermalSlowdown");
  EXPECT_EQ(bench::clock_reasons_text(0x1ff),
            "GpuIdle,ApplicationsClocksSetting,SwPowerCap,HwSlowdown,SyncBoost,SwThermalSlowdown,"
            "HwThermalSlowdown,HwPowerBrakeSlowdown,DisplayClockSetting");
  EXPECT_EQ(bench::clock_reasons_text(0x1 | 0x1000), "GpuIdle,0x1000");  // a newer driver's bit
}

TEST(BenchContext, SlowdownReasonsExcludeIdleSyncBoostAndDisplay) {
  EXPECT_EQ(bench::kClockSlowdownReasons & (0x1 | 0x10 | 0x100), 0u);
  for (unsigned long long bit : {0x2ull, 0x4ull, 0x8ull, 0x20ull, 0x40ull, 0x80ull})
    EXPECT_NE(bench::kClockSlowdownReasons & bit, 0u) << bit;
}

TEST(BenchContext, MigNoteNamesTheInstance) {
  EXPECT_EQ(bench::mig_note(false, 132, 150'020'816'896ull), "");
  const std::string n = bench::mig_note(true, 16, 17'179'869'184ull);  // 1g.18gb on an H200
  EXPECT_NE(n.find("16 SMs, 16.00 GiB"), std::string::npos) << n;
  EXPECT_NE(n.find("not the GPU's"), std::string::npos) << n;
}
