// Exercises 8.1 and 8.2 — the ring's chunks and schedule, on the CPU: the chunks tile the buffer
// for every n and size (sizes not divisible by n above all), the schedule is consistent (what a
// rank receives is what its left neighbour sends), and the ring simulated with N ranks equals the
// sum.
#include <gtest/gtest.h>

#include <set>
#include <stdexcept>
#include <vector>

#include "ch08/ch08.hpp"
#include "multi_gpu_testing.hpp"

using namespace cudalab::ch08;

TEST(RingChunk, KnownSplit) {
  // 10 elements over 4 ranks: 3, 3, 2, 2.
  EXPECT_EQ(ring_chunk(10, 4, 0), (Chunk{0, 3}));
  EXPECT_EQ(ring_chunk(10, 4, 1), (Chunk{3, 3}));
  EXPECT_EQ(ring_chunk(10, 4, 2), (Chunk{6, 2}));
  EXPECT_EQ(ring_chunk(10, 4, 3), (Chunk{8, 2}));
  EXPECT_EQ(ring_chunk(5, 1, 0), (Chunk{0, 5}));
  EXPECT_EQ(ring_chunk(2, 3, 2), (Chunk{2, 0}));
}

TEST(RingChunk, TilesEverySizeAndRankCount) {
  for (int n = 1; n <= 9; ++n)
    for (std::size_t count = 0; count <= 100; ++count) {
      std::size_t next = 0, largest = 0, smallest = count;
      for (int c = 0; c < n; ++c) {
        const Chunk ch = ring_chunk(count, n, c);
        ASSERT_EQ(ch.offset, next)
            << "gap or overlap before chunk " << c << " (count " << count << ", n " << n << ")";
        if (c > 0) {
          ASSERT_LE(ch.count, ring_chunk(count, n, c - 1).count) << "longer chunks come first";
        }
        next += ch.count;
        largest = std::max(largest, ch.count);
        smallest = std::min(smallest, ch.count);
      }
      ASSERT_EQ(next, count) << "chunks do not cover the buffer (count " << count << ", n " << n
                             << ")";
      ASSERT_LE(largest - smallest, 1u) << "count " << count << ", n " << n;
    }
}

TEST(RingChunk, LargeSizes) {
  const std::size_t count = (std::size_t{1} << 33) + 5;  // past 2^32 elements
  const Chunk last = ring_chunk(count, 8, 7);
  EXPECT_EQ(last.offset + last.count, count);
  EXPECT_EQ(ring_chunk(count, 8, 4).offset, 4 * (count / 8) + 4);
}

TEST(RingChunk, RejectsBadArguments) {
  EXPECT_THROW(ring_chunk(10, 0, 0), std::invalid_argument);
  EXPECT_THROW(ring_chunk(10, 4, 4), std::invalid_argument);
  EXPECT_THROW(ring_chunk(10, 4, -1), std::invalid_argument);
}

TEST(RingStep, KnownScheduleOfThreeRanks) {
  EXPECT_EQ(ring_steps(3), 4);
  // Rank 0: reduce-scatter sends its chunk 0, then what it received (chunk 2), and ends holding
  // the sum of chunk 1; the all-gather passes chunk 1 on, then the chunk 0 it received.
  EXPECT_EQ(ring_step(3, 0, 0), (RingStep{0, 2, true}));
  EXPECT_EQ(ring_step(3, 0, 1), (RingStep{2, 1, true}));
  EXPECT_EQ(ring_step(3, 0, 2), (RingStep{1, 0, false}));
  EXPECT_EQ(ring_step(3, 0, 3), (RingStep{0, 2, false}));
  EXPECT_EQ(ring_step(3, 2, 0), (RingStep{2, 1, true}));
  EXPECT_EQ(ring_step(2, 1, 1), (RingStep{0, 1, false}));
}

TEST(RingStep, ConsistentForEveryRankCount) {
  for (int n = 1; n <= 9; ++n) {
    ASSERT_EQ(ring_steps(n), 2 * (n - 1));
    for (int r = 0; r < n; ++r) {
      const int left = (r + n - 1) % n;
      std::set<int> reduced, gathered;
      for (int s = 0; s < ring_steps(n); ++s) {
        const RingStep st = ring_step(n, r, s);
        ASSERT_EQ(st.recv_chunk, ring_step(n, left, s).send_chunk)
            << "n " << n << ", rank " << r << ", step " << s;
        ASSERT_EQ(st.reduce, s < n - 1) << "n " << n << ", step " << s;
        (st.reduce ? reduced : gathered).insert(st.recv_chunk);
      }
      // Reduce-scatter: every chunk but the one it ends holding ((r + 1) mod n) is received... once
      // each, and the last one received is the one it holds.
      ASSERT_EQ(reduced.size(), static_cast<std::size_t>(n - 1)) << "n " << n << ", rank " << r;
      if (n > 1) {
        ASSERT_EQ(ring_step(n, r, n - 2).recv_chunk, (r + 1) % n);
      }
      ASSERT_EQ(gathered.size(), static_cast<std::size_t>(n - 1)) << "n " << n << ", rank " << r;
      ASSERT_EQ(gathered.count((r + 1) % n), 0u) << "rank " << r << " overwrote the sum it holds";
    }
  }
}

TEST(RingStep, RejectsBadArguments) {
  EXPECT_THROW(ring_step(0, 0, 0), std::invalid_argument);
  EXPECT_THROW(ring_step(2, 2, 0), std::invalid_argument);
  EXPECT_THROW(ring_step(2, 0, 2), std::invalid_argument);
  EXPECT_THROW(ring_step(1, 0, 0), std::invalid_argument);  // one rank: no step at all
}

TEST(RingCpu, EqualsThePlainSum) {
  for (int n = 1; n <= 9; ++n)
    for (std::size_t count : {std::size_t{0}, std::size_t{1}, static_cast<std::size_t>(n - 1),
                              static_cast<std::size_t>(n), static_cast<std::size_t>(n + 1),
                              std::size_t{37}, std::size_t{1000}}) {
      auto buffers = tests::rank_data(n, count);
      const std::vector<float> want = allreduce_sum_oracle(buffers);
      ring_allreduce_cpu(buffers);
      for (int r = 0; r < n; ++r)
        ASSERT_EQ(buffers[r], want) << "rank " << r << ", n " << n << ", count " << count;
    }
}

TEST(RingCpu, RejectsBadArguments) {
  std::vector<std::vector<float>> none;
  EXPECT_THROW(ring_allreduce_cpu(none), std::invalid_argument);
  std::vector<std::vector<float>> ragged{{1, 2}, {3}};
  EXPECT_THROW(ring_allreduce_cpu(ragged), std::invalid_argument);
  EXPECT_THROW(allreduce_sum_oracle(ragged), std::invalid_argument);
}
