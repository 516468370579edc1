// Seeds: reproducible, overridable, and the device fill agrees with its host twin.
#include <gtest/gtest.h>

#include <cstdlib>
#include <vector>

#include "cudalab/device_fill.hpp"
#include "cudalab/memory.hpp"
#include "cudalab/random.hpp"
#include "cudalab/testing.hpp"

using namespace cudalab;

TEST(Random, SameSeedSameNumbers) {
  Rng a(42), b(42), c(43);
  const auto x = a.uniform<float>(100, -1.0f, 1.0f);
  EXPECT_EQ(x, b.uniform<float>(100, -1.0f, 1.0f));
  EXPECT_NE(x, c.uniform<float>(100, -1.0f, 1.0f));
  for (float v : x) {
    EXPECT_GE(v, -1.0f);
    EXPECT_LT(v, 1.0f);
  }
}

TEST(Random, EnvironmentOverridesTheSeed) {
  ::setenv("CUDALAB_SEED", "12345", 1);
  EXPECT_EQ(seed_from_env(), 12345u);
  EXPECT_EQ(Rng().seed(), 12345u);
  ::setenv("CUDALAB_SEED", "12x", 1);
  EXPECT_THROW(seed_from_env(), std::invalid_argument);
  ::setenv("CUDALAB_SEED", "18446744073709551615", 1);  // 2^64 - 1: the largest seed
  EXPECT_EQ(seed_from_env(), 18446744073709551615u);
  // strtoull reads "-1" as 2^64 - 1 and saturates past it: neither is a seed
  for (const char* bad : {"-1", "+5", " 7", "18446744073709551616", "99999999999999999999999"}) {
    ::setenv("CUDALAB_SEED", bad, 1);
    EXPECT_THROW(seed_from_env(), std::invalid_argument) << bad;
  }
  ::unsetenv("CUDALAB_SEED");
}

TEST(Random, IntegersStayInRange) {
  Rng r(7);
  for (int v : r.uniform<int>(1000, -3, 3)) {
    EXPECT_GE(v, -3);
    EXPECT_LE(v, 3);
  }
  for (int i = 0; i < 1000; ++i) {
    const int v = uniform_at(99, static_cast<std::size_t>(i), 0, 9);
    EXPECT_GE(v, 0);
    EXPECT_LE(v, 9);
  }
}

// CPU-only (runs on CI): the range is checked before any allocation, and n = 0 needs no device.
TEST(Random, UniformDeviceBufferChecksArgumentsFirst) {
  cudalab::testing::expect_throws_naming([] { (void)uniform_device_buffer(16, 1, 5, 4); }, "lo");
  EXPECT_EQ(uniform_device_buffer(0, 1, -1.0f, 1.0f).size(), 0u);
  EXPECT_EQ(uniform_device_buffer(0, 1, 5, 5).size(), 0u);
}

TEST(RandomGpu, DeviceFillMatchesHostTwin) {
  CUDALAB_REQUIRE_GPU();
  const std::size_t n = 100'003;
  DeviceBuffer<float> f(n);
  DeviceBuffer<int> k(n);
  fill_uniform_device(f.data(), n, 5, -2.0f, 3.0f);
  fill_uniform_device(k.data(), n, 6, -100, 100);
  const auto hf = f.to_host();
  const auto hk = k.to_host();
  for (std::size_t i = 0; i < n; i += 97) {
    ASSERT_EQ(hf[i], uniform_at(5, i, -2.0f, 3.0f)) << "index " << i;
    ASSERT_EQ(hk[i], uniform_at(6, i, -100, 100)) << "index " << i;
  }
}

TEST(RandomGpu, PoisonDeviceSetsAllBits) {
  CUDALAB_REQUIRE_GPU();
  DeviceBuffer<float> d(33);
  poison_device(d.data(), d.bytes());
  for (float v : d.to_host()) EXPECT_TRUE(is_poison(v));
}

// The buffer holds the fill's values and the fill is finished: nothing is left on the stream it
// ran on, so a kernel on a non-blocking stream reads complete data.
TEST(RandomGpu, UniformDeviceBufferIsFilledAndFinished) {
  CUDALAB_REQUIRE_GPU();
  const std::size_t n = (std::size_t{1} << 23) + 3;  // a fill still running were it not waited for
  const DeviceBuffer<float> f = uniform_device_buffer(n, 7, -1.0f, 1.0f);
  EXPECT_EQ(cudaStreamQuery(nullptr), cudaSuccess);
  const DeviceBuffer<int> k = uniform_device_buffer(n, 8, -100, 100);
  EXPECT_EQ(cudaStreamQuery(nullptr), cudaSuccess);
  ASSERT_EQ(f.size(), n);
  ASSERT_EQ(k.size(), n);
  const auto hf = f.to_host();
  const auto hk = k.to_host();
  for (std::size_t i = 0; i < n; i += 101) {
    ASSERT_EQ(hf[i], uniform_at(7, i, -1.0f, 1.0f)) << "index " << i;
    ASSERT_EQ(hk[i], uniform_at(8, i, -100, 100)) << "index " << i;
  }
  EXPECT_EQ(hf[n - 1], uniform_at(7, n - 1, -1.0f, 1.0f));
  EXPECT_EQ(hk[n - 1], uniform_at(8, n - 1, -100, 100));
}
