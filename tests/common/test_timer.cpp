// Timing: the median is a median; events time GPU work, not host work.
#include <gtest/gtest.h>

#include "cudalab/memory.hpp"
#include "cudalab/testing.hpp"
#include "cudalab/timer.hpp"

using namespace cudalab;

TEST(Timer, MedianOddAndEven) {
  EXPECT_FLOAT_EQ(summarize({3, 1, 2}).median_ms, 2.0f);
  EXPECT_FLOAT_EQ(summarize({4, 1, 3, 2}).median_ms, 2.5f);
  const TimingStats s = summarize({5, 1, 9});
  EXPECT_FLOAT_EQ(s.min_ms, 1.0f);
  EXPECT_FLOAT_EQ(s.max_ms, 9.0f);
  EXPECT_DOUBLE_EQ(summarize({2}).per_second(1e6), 5e8);  // 1 MB in 2 ms
  EXPECT_EQ(summarize({}).median_ms, 0.0f);
}

TEST(Timer, RejectsZeroRepetitions) {
  EXPECT_THROW(time_gpu([](cudaStream_t) {}, nullptr, {.warmup = 0, .repetitions = 0}),
               std::invalid_argument);
}

TEST(TimerGpu, TimesEveryRepetition) {
  CUDALAB_REQUIRE_GPU();
  DeviceBuffer<char> a(1 << 24), b(1 << 24);
  int calls = 0;
  const TimingStats s = time_gpu(
      [&](cudaStream_t st) {
        ++calls;
        CUDALAB_CHECK(cudaMemcpyAsync(b.data(), a.data(), a.bytes(), cudaMemcpyDeviceToDevice, st));
      },
      nullptr, {.warmup = 2, .repetitions = 5, .flush_l2 = true});
  EXPECT_EQ(calls, 7);
  ASSERT_EQ(s.ms.size(), 5u);
  EXPECT_GT(s.median_ms, 0.0f);
  EXPECT_LE(s.min_ms, s.median_ms);
  EXPECT_LE(s.median_ms, s.max_ms);
}
