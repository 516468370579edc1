// Exercise 9.1 — scale_rows: the CPU oracle, then the kernel against it on shapes that are not
// multiples of the block or of a warp, with poisoned outputs and a guard zone.
#include <gtest/gtest.h>

#include <cstddef>
#include <stdexcept>
#include <utility>
#include <vector>

#include "ch09/ch09.hpp"
#include "cudalab/memory.hpp"
#include "cudalab/random.hpp"
#include "cudalab/testing.hpp"

using namespace cudalab;

TEST(ScaleRowsOracle, ScalesEachRowByItsFactor) {
  const std::vector<float> out =
      ch09::scale_rows_cpu({1.0f, 2.0f, 3.0f, 4.0f, 5.0f, 6.0f}, {2.0f, -1.0f}, 2, 3);
  EXPECT_EQ(out, (std::vector<float>{2.0f, 4.0f, 6.0f, -4.0f, -5.0f, -6.0f}));
  EXPECT_THROW(ch09::scale_rows_cpu({1.0f}, {1.0f}, 2, 3), std::invalid_argument);
}

TEST(ScaleRowsGpu, MatchesOracleOnOddShapes) {
  CUDALAB_REQUIRE_GPU();
  Rng rng;
  const std::pair<std::size_t, std::size_t> shapes[] = {{1, 1},   {1, 33},    {31, 1},
                                                        {33, 31}, {257, 129}, {1000, 1003}};
  for (auto [rows, cols] : shapes) {
    const std::vector<float> x = rng.uniform<float>(rows * cols, -1.0f, 1.0f);
    const std::vector<float> s = rng.uniform<float>(rows, -2.0f, 2.0f);
    const DeviceBuffer<float> in = to_device(x), scale = to_device(s);
    cudalab::testing::GuardedOutput<float> out(rows * cols);
    ch09::scale_rows(in.data(), scale.data(), out.data(), rows, cols);
    CUDALAB_CHECK(cudaDeviceSynchronize());
    // One float multiply per element on both sides: exact.
    EXPECT_EQ(out.result(), ch09::scale_rows_cpu(x, s, rows, cols))
        << "scale_rows, " << rows << " x " << cols;
    EXPECT_TRUE(out.guard_intact())
        << "scale_rows wrote past out[rows * cols - 1], " << rows << " x " << cols;
  }
}

// The stream contract (cudalab/testing.hpp, replay_from_capture): the kernel on the caller's
// stream; the replay of a capture must give a plain call's bits.
TEST(ScaleRowsStreamGpu, AllWorkOnTheCallersStream) {
  CUDALAB_REQUIRE_GPU();
  Rng rng;
  const std::size_t rows = 257, cols = 129;
  const DeviceBuffer<float> in = to_device(rng.uniform<float>(rows * cols, -1.0f, 1.0f));
  const DeviceBuffer<float> scale = to_device(rng.uniform<float>(rows, -2.0f, 2.0f));
  cudalab::testing::GuardedOutput<float> out(rows * cols);
  EXPECT_TRUE(cudalab::testing::replay_matches_plain_call(
      [&](cudaStream_t s) { ch09::scale_rows(in.data(), scale.data(), out.data(), rows, cols, s); },
      out, "scale_rows (exercise 9.1)"));
}

// The coalescing contract, checked on the kernel's own mapping (not by timing it): consecutive
// threads must own consecutive addresses, so each warp's 32 four-byte loads fill 4 sectors.
TEST(ScaleRowsGpu, AWarpOwnsConsecutiveAddresses) {
  CUDALAB_REQUIRE_GPU();
  const std::pair<std::size_t, std::size_t> shapes[] = {{1, 1}, {33, 31}, {257, 129}, {64, 1024}};
  for (auto [rows, cols] : shapes) {
    DeviceBuffer<std::size_t> owners(rows * cols);
    CUDALAB_CHECK(cudaMemset(owners.data(), 0xff, owners.bytes()));  // poison
    ch09::scale_rows_owners(rows, cols, owners.data());
    CUDALAB_CHECK(cudaDeviceSynchronize());
    const std::vector<std::size_t> got = owners.to_host();
    for (std::size_t i = 0; i < got.size(); ++i) {
      ASSERT_EQ(got[i], i) << "thread " << i << " owns memory index " << got[i] << " (" << rows
                           << " x " << cols
                           << "): a warp's neighbours should own neighbouring addresses";
    }
  }
}

TEST(ScaleRowsGpu, EmptyShapesLaunchNothing) {
  CUDALAB_REQUIRE_GPU();
  ch09::scale_rows(nullptr, nullptr, nullptr, 0, 5);
  ch09::scale_rows(nullptr, nullptr, nullptr, 5, 0);
  CUDALAB_CHECK(cudaDeviceSynchronize());
}
