// Exercise 2.4 — Little's law: bytes in flight = bandwidth x latency, and the occupancy it needs.
#include <gtest/gtest.h>

#include "ch02/ch02.hpp"
#include "cudalab/testing.hpp"

using namespace cudalab;

TEST(LittlesLaw, H200DramNumbers) {
  // 4.8 TB/s x 600 ns = 2.88 MB in flight; / 132 SMs = 21.8 KB per SM; at 64 B per thread (four
  // float4 loads) 341 threads per SM = 16.7% of 2048.
  const ch02::LittlesLaw r = ch02::littles_law(4800, 600, 132, 64, 2048);
  EXPECT_NEAR(r.bytes_in_flight, 2.88e6, 1);
  EXPECT_NEAR(r.bytes_per_sm, 2.88e6 / 132, 1e-6);
  EXPECT_NEAR(r.threads_per_sm, 2.88e6 / 132 / 64, 1e-9);
  EXPECT_NEAR(r.occupancy, 2.88e6 / 132 / 64 / 2048, 1e-12);
}

TEST(LittlesLaw, ScalesAsTheLawSays) {
  const ch02::LittlesLaw a = ch02::littles_law(1000, 500, 100, 16, 2048);
  const ch02::LittlesLaw twice_bw = ch02::littles_law(2000, 500, 100, 16, 2048);
  const ch02::LittlesLaw twice_bytes = ch02::littles_law(1000, 500, 100, 32, 2048);
  EXPECT_NEAR(twice_bw.bytes_in_flight, 2 * a.bytes_in_flight, 1e-6);
  EXPECT_NEAR(twice_bytes.threads_per_sm, a.threads_per_sm / 2, 1e-9);
  // One float per thread cannot feed 4.8 TB/s at 600 ns: more threads than an SM holds.
  EXPECT_GT(ch02::littles_law(4800, 600, 132, 4, 2048).occupancy, 1.0);
}

TEST(LittlesLaw, RefusesNonPositiveArguments) {
  cudalab::testing::expect_throws_naming([] { ch02::littles_law(0, 600, 132, 64, 2048); },
                                         "bandwidth_gbps");
  cudalab::testing::expect_throws_naming([] { ch02::littles_law(4800, -1, 132, 64, 2048); },
                                         "latency_ns");
  cudalab::testing::expect_throws_naming([] { ch02::littles_law(4800, 600, 0, 64, 2048); }, "sms");
  cudalab::testing::expect_throws_naming([] { ch02::littles_law(4800, 600, 132, 0, 2048); },
                                         "bytes_per_thread");
  cudalab::testing::expect_throws_naming([] { ch02::littles_law(4800, 600, 132, 64, 0); },
                                         "max_threads_per_sm");
}
