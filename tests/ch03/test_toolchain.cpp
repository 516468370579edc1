// Exercise 3.7 — cudaFuncGetAttributes: what nvcc built and what this GPU runs.
#include <gtest/gtest.h>

#include <vector>

#include "ch03/ch03.hpp"
#include "cudalab/device.hpp"
#include "cudalab/random.hpp"
#include "cudalab/testing.hpp"

using namespace cudalab;

TEST(ToolchainGpu, SimpleProbeUsesRegistersOnly) {
  CUDALAB_REQUIRE_GPU();
  const ch03::KernelInfo k = ch03::probe_kernel_info(ch03::Probe::kSimple);
  EXPECT_GT(k.num_regs, 0);
  EXPECT_LE(k.num_regs, 255);
  EXPECT_EQ(k.local_bytes, 0u) << ch03::describe(k);
  EXPECT_EQ(k.shared_bytes, 0u);
  EXPECT_GE(k.max_threads_per_block, 256);
}

TEST(ToolchainGpu, RunTimeIndexedArrayLivesInLocalMemory) {
  CUDALAB_REQUIRE_GPU();
  const ch03::KernelInfo k = ch03::probe_kernel_info(ch03::Probe::kLocalArray);
  EXPECT_GE(k.local_bytes, 64 * sizeof(unsigned)) << ch03::describe(k);
}

TEST(ToolchainGpu, MachineCodeFitsThisGpu) {
  CUDALAB_REQUIRE_GPU();
  const DeviceInfo d = device_info();
  const ch03::KernelInfo k = ch03::probe_kernel_info(ch03::Probe::kSimple);
  // SASS runs only on its own major architecture, at a minor version <= the device's.
  EXPECT_EQ(k.binary_version / 10, d.cc_major) << ch03::describe(k);
  EXPECT_LE(k.binary_version, d.cc()) << ch03::describe(k);
  EXPECT_GT(k.ptx_version, 0);
  EXPECT_LE(k.ptx_version, k.binary_version)
      << "PTX is compiled to SASS of the same or a newer architecture";
}

TEST(ToolchainGpu, LocalArrayProbeComputes) {
  CUDALAB_REQUIRE_GPU();
  Rng rng;
  const auto in = rng.uniform<int>(3001, -1000, 1000);
  auto din = to_device(in);
  DeviceBuffer<int> dout(in.size());
  poison_device(dout.data(), dout.bytes());
  ch03::run_local_array_probe(din.data(), dout.data(), in.size());
  std::vector<int> want(in.size());
  for (std::size_t i = 0; i < in.size(); ++i) want[i] = ch03::local_array_probe_oracle(in[i]);
  EXPECT_MATCHES(compare(dout.to_host(), want, {}, "local-array probe (n = 3001)"));
}

TEST(ToolchainArgs, UnknownProbeIsRejected) {
  EXPECT_THROW(ch03::probe_kernel_info(static_cast<ch03::Probe>(7)), std::invalid_argument);
}
