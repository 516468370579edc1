// Device facts: the no-GPU signal on CI, sane numbers on a GPU.
#include <cuda_runtime_api.h>
#include <gtest/gtest-spi.h>
#include <gtest/gtest.h>

#include "cudalab/device.hpp"
#include "cudalab/testing.hpp"

using namespace cudalab;

TEST(Device, HasGpuAgreesWithReason) {
  // Without a driver (CI) has_gpu() is false and the reason says why; with one, no reason.
  EXPECT_EQ(has_gpu(), no_gpu_reason().empty()) << no_gpu_reason();
}

TEST(DeviceGpu, PropertiesAreSane) {
  CUDALAB_REQUIRE_GPU();
  const DeviceInfo d = device_info();
  EXPECT_FALSE(d.name.empty());
  EXPECT_GE(d.cc_major, 5);
  EXPECT_GT(d.sm_count, 0);
  EXPECT_EQ(d.warp_size, 32);
  EXPECT_GE(d.max_threads_per_block, 1024);
  EXPECT_GT(d.l2_bytes, 0u);
  EXPECT_GT(d.peak_dram_gbps(), 100.0);
  EXPECT_GT(d.peak_fp32_tflops(), 1.0);
  EXPECT_GE(d.driver_version, d.runtime_version / 1000 * 1000)
      << "driver older than the runtime's major version: expect cudaErrorInsufficientDriver";
}

TEST(DeviceGpu, CurrentCcAgreesWithTheProperties) {
  CUDALAB_REQUIRE_GPU();
  int device = 0;
  ASSERT_EQ(cudaGetDevice(&device), cudaSuccess);
  EXPECT_EQ(current_cc(), device_info(device).cc());
}

// The skip rule labels a test gpu by its suite name; a GPU test in a suite without the "Gpu"
// suffix would be labelled cpu and run on CI, so the helper fails such a test.
TEST(SkipRule, GpuTestOutsideAGpuSuiteFails) {
  EXPECT_NONFATAL_FAILURE((void)cudalab::testing::gpu_skip_reason(), "does not end in 'Gpu'");
}

TEST(SkipRuleGpu, ReasonIsEmptyOnAGpuAndStartsWithTheSkipPhraseElsewhere) {
  const std::string r = cudalab::testing::gpu_skip_reason();
  if (has_gpu()) {
    EXPECT_TRUE(r.empty()) << r;
  } else {
    EXPECT_EQ(r.rfind("skipped: no GPU", 0), 0u) << r;  // the phrase ctest's skip pattern matches
  }
}
