// RAII owners: round trips, moves, pitch, poison.
#include <gtest/gtest.h>

#include <numeric>
#include <utility>
#include <vector>

#include "cudalab/memory.hpp"
#include "cudalab/stream.hpp"
#include "cudalab/testing.hpp"

using namespace cudalab;

TEST(MemoryGpu, DeviceBufferRoundTrip) {
  CUDALAB_REQUIRE_GPU();
  std::vector<int> h(1000);
  std::iota(h.begin(), h.end(), -500);
  auto d = to_device(h);
  EXPECT_EQ(d.size(), 1000u);
  EXPECT_EQ(d.bytes(), 4000u);
  EXPECT_EQ(d.to_host(), h);
}

TEST(MemoryGpu, MoveLeavesSourceEmpty) {
  CUDALAB_REQUIRE_GPU();
  DeviceBuffer<float> a(16);
  float* p = a.data();
  DeviceBuffer<float> b(std::move(a));
  EXPECT_EQ(b.data(), p);
  EXPECT_EQ(a.data(), nullptr);  // NOLINT(bugprone-use-after-move): checking the moved-from state
  EXPECT_EQ(a.size(), 0u);
  DeviceBuffer<float> c;
  c = std::move(b);
  EXPECT_EQ(c.data(), p);
}

TEST(MemoryGpu, EmptyBufferAllocatesNothing) {
  CUDALAB_REQUIRE_GPU();
  DeviceBuffer<double> d(0);
  EXPECT_EQ(d.data(), nullptr);
  EXPECT_TRUE(d.to_host().empty());
}

TEST(MemoryGpu, UploadLargerThanBufferIsRejected) {
  CUDALAB_REQUIRE_GPU();
  DeviceBuffer<int> d(2);
  const std::vector<int> h(3, 1);
  EXPECT_THROW(d.upload(h), std::invalid_argument);
}

TEST(MemoryGpu, PitchedRowsAreAlignedAndRoundTrip) {
  CUDALAB_REQUIRE_GPU();
  PitchedBuffer<unsigned char> p(7, 33);
  EXPECT_GE(p.pitch_bytes(), 33u);
  EXPECT_EQ(p.pitch_bytes() % 128, 0u) << "cudaMallocPitch pads rows to an aligned boundary";
  std::vector<unsigned char> h(7 * 33);
  std::iota(h.begin(), h.end(), static_cast<unsigned char>(0));
  p.upload(h);
  EXPECT_EQ(p.to_host(), h);
}

TEST(MemoryGpu, PinnedBufferAndStreamCopy) {
  CUDALAB_REQUIRE_GPU();
  PinnedBuffer<float> h(256);
  for (std::size_t i = 0; i < h.size(); ++i) h[i] = static_cast<float>(i);
  DeviceBuffer<float> d(256);
  Stream s;
  CUDALAB_CHECK(cudaMemcpyAsync(d.data(), h.data(), h.bytes(), cudaMemcpyHostToDevice, s));
  s.synchronize();
  const std::vector<float> back = d.to_host();
  EXPECT_EQ(back[255], 255.0f);
}

TEST(MemoryGpu, HostPointerIsRejectedAsDevicePointer) {
  CUDALAB_REQUIRE_GPU();
  std::vector<float> host(4);
  EXPECT_THROW(require_device_pointer(host.data(), host.size(), "x"), std::invalid_argument);
  DeviceBuffer<float> d(4);
  EXPECT_NO_THROW(require_device_pointer(d.data(), d.size(), "x"));
}

TEST(MemoryGpu, GuardedOutputSeesWritesPastTheEnd) {
  CUDALAB_REQUIRE_GPU();
  cudalab::testing::GuardedOutput<float> out(10);
  const float one = 1.0f;
  CUDALAB_CHECK(cudaMemcpy(out.data() + 12, &one, sizeof one, cudaMemcpyHostToDevice));
  const std::vector<float> r = out.result();
  EXPECT_EQ(r.size(), 10u);
  EXPECT_TRUE(is_poison(r[0]));
  EXPECT_FALSE(out.guard_intact());
}
