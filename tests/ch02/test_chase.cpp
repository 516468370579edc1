// Exercise 2.2 — the chase ring (CPU): one cycle through every line, one word per line, hops of
// at least a line and never to a neighbouring line, seeded. Then the chase kernel on a GPU
// (worked): it visits the ring it is given and ends where the host twin says.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <numeric>
#include <utility>
#include <vector>

#include "ch02/ch02.hpp"
#include "cudalab/memory.hpp"
#include "cudalab/testing.hpp"

using namespace cudalab;

namespace {

// Walks the ring from word 0 and checks every property the latency benchmark relies on.
void expect_good_ring(const std::vector<std::uint32_t>& ring, std::size_t bytes,
                      std::size_t stride) {
  const std::size_t w = stride / 4, lines = bytes / stride;
  ASSERT_EQ(ring.size(), bytes / 4) << "bytes = " << bytes << ", stride = " << stride;
  std::vector<char> seen(lines, 0);
  std::uint32_t j = 0;
  std::size_t adjacent = 0;
  for (std::size_t step = 0; step < lines; ++step) {
    ASSERT_LT(j, ring.size()) << "hop " << step << " leaves the ring";
    ASSERT_EQ(j % w, 0u) << "hop " << step << " lands inside a line (word " << j << ")";
    ASSERT_FALSE(seen[j / w]) << "line " << j / w << " visited twice before the cycle closed "
                              << "(after " << step << " hops of " << lines << ")";
    seen[j / w] = 1;
    const std::uint32_t next = ring[j];
    const std::size_t a = j / w, b = next / w;
    if (a + 1 == b || b + 1 == a) ++adjacent;
    j = next;
  }
  EXPECT_EQ(j, 0u) << "after " << lines << " hops the chase must be back at word 0: one cycle";
  if (lines >= 5) {
    EXPECT_EQ(adjacent, 0u) << "hops to a neighbouring line (prefetched for free)";
  }
  // Words off the ring are 0 (a stray value would be a second, hidden ring).
  for (std::size_t i = 0; i < ring.size(); ++i)
    if (i % w != 0) {
      ASSERT_EQ(ring[i], 0u) << "word " << i << " is not the first of its line";
    }
}

}  // namespace

TEST(ChaseRing, OneCycleThroughEveryLine) {
  for (std::size_t stride : {std::size_t{4}, std::size_t{64}, std::size_t{128}, std::size_t{4096}})
    for (std::size_t lines :
         {std::size_t{2}, std::size_t{3}, std::size_t{5}, std::size_t{6}, std::size_t{7},
          std::size_t{33}, std::size_t{1000}, std::size_t{65537}})
      for (std::uint64_t seed : {1u, 2u, 12345u}) {
        if (lines * stride > (std::size_t{16} << 20)) continue;  // keep the test fast
        SCOPED_TRACE(::testing::Message()
                     << "stride " << stride << ", lines " << lines << ", seed " << seed);
        expect_good_ring(ch02::make_chase_ring(lines * stride, stride, seed), lines * stride,
                         stride);
      }
}

TEST(ChaseRing, RandomOrderAndSeeded) {
  const std::size_t stride = 128, lines = 4096;
  const auto a = ch02::make_chase_ring(lines * stride, stride, 7);
  EXPECT_EQ(a, ch02::make_chase_ring(lines * stride, stride, 7)) << "same seed, same ring";
  EXPECT_NE(a, ch02::make_chase_ring(lines * stride, stride, 8)) << "another seed, another ring";
  // Not a constant stride (which a stride prefetcher learns): many distinct hop distances.
  std::vector<long long> d;
  std::uint32_t j = 0;
  for (std::size_t i = 0; i < lines; ++i) {
    d.push_back(static_cast<long long>(a[j]) - static_cast<long long>(j));
    j = a[j];
  }
  std::sort(d.begin(), d.end());
  const auto distinct = std::unique(d.begin(), d.end()) - d.begin();
  EXPECT_GT(distinct, static_cast<long>(lines / 4)) << "hop distances look regular";
}

TEST(ChaseRing, VisitOrderDoesNotSweepTheAddresses) {
  // A ring can pass every local check (no adjacent hop, many hop lengths) and still walk the
  // buffer in address order: the sequential ring with its adjacent hops patched by a few random
  // swaps visits line ~k at step k most of the time, and a stream prefetcher follows that sweep.
  // In a random order, step k lands within L/64 lines of line k for about 1 step in 32.
  const std::size_t stride = 128, lines = 4096, window = lines / 64;
  for (std::uint64_t seed : {1u, 7u, 2024u}) {
    const auto ring = ch02::make_chase_ring(lines * stride, stride, seed);
    std::size_t near_diagonal = 0;
    std::uint32_t j = 0;
    for (std::size_t k = 0; k < lines; ++k) {
      const std::size_t line = j / (stride / 4);
      if ((line > k ? line - k : k - line) <= window) ++near_diagonal;
      j = ring[j];
    }
    EXPECT_LT(near_diagonal, lines / 8)
        << "seed " << seed << ": " << near_diagonal << " of " << lines
        << " steps visit a line within " << window
        << " lines of their step number: the walk sweeps the buffer in address order";
  }
}

TEST(ChaseRing, RefusesBadArguments) {
  cudalab::testing::expect_throws_naming([] { ch02::make_chase_ring(4096, 96, 1); },
                                         "stride_bytes");
  cudalab::testing::expect_throws_naming([] { ch02::make_chase_ring(4096, 2, 1); }, "stride_bytes");
  cudalab::testing::expect_throws_naming([] { ch02::make_chase_ring(128, 128, 1); }, "bytes");
  cudalab::testing::expect_throws_naming([] { ch02::make_chase_ring(1000, 128, 1); }, "bytes");
}

// The kernel chases the ring it is given. This test builds its ring itself (Sattolo's algorithm:
// one random cycle) so that it checks the kernel, not exercise 2.2.
TEST(ChaseKernelGpu, EndsWhereTheHostTwinEnds) {
  CUDALAB_REQUIRE_GPU();
  for (const bool shared : {false, true})
    for (std::size_t lines : {std::size_t{3}, std::size_t{257}, std::size_t{8191}}) {
      const std::size_t stride = shared ? 4 : 128, w = stride / 4;
      std::vector<std::uint32_t> order(lines);
      std::iota(order.begin(), order.end(), 0u);
      std::uint64_t s = 99;
      for (std::size_t i = lines - 1; i > 0; --i) {
        s = s * 6364136223846793005ull + 1442695040888963407ull;
        std::swap(order[i], order[(s >> 33) % i]);  // Sattolo: j < i, one cycle
      }
      std::vector<std::uint32_t> ring(lines * w, 0);
      for (std::size_t k = 0; k < lines; ++k)
        ring[order[k] * w] = static_cast<std::uint32_t>(order[(k + 1) % lines] * w);
      const DeviceBuffer<std::uint32_t> d = to_device(ring);
      DeviceBuffer<long long> result(2);
      poison_device(result.data(), result.bytes());
      const long long warm = static_cast<long long>(lines), steps = 1000 + 7;
      ch02::pointer_chase(d.data(), ring.size(), warm, steps, shared, result.data());
      CUDALAB_CHECK(cudaDeviceSynchronize());
      const std::vector<long long> r = result.to_host();
      EXPECT_EQ(r[1], ch02::chase_end(ring, warm, steps))
          << (shared ? "shared" : "global") << ", lines " << lines;
      EXPECT_GE(r[0], steps) << "fewer cycles than loads: the chase did not run";
      // One full lap from word 0 visits every line once and comes back to word 0.
      ch02::pointer_chase(d.data(), ring.size(), 0, static_cast<long long>(lines), shared,
                          result.data());
      CUDALAB_CHECK(cudaDeviceSynchronize());
      EXPECT_EQ(result.to_host()[1], 0) << "one lap of " << lines << " loads must end at word 0";
      // Resumed calls continue the walk (the benchmark's rings beyond L2): two calls of 5 + 7
      // loads from word 0 end where one walk of 12 loads ends, not where 7 from word 0 end.
      ch02::pointer_chase(d.data(), ring.size(), 2, 3, shared, result.data());
      ch02::pointer_chase(d.data(), ring.size(), 3, 4, shared, result.data(), nullptr, true);
      CUDALAB_CHECK(cudaDeviceSynchronize());
      EXPECT_EQ(result.to_host()[1], ch02::chase_end(ring, 0, 12))
          << (shared ? "shared" : "global") << ", lines " << lines << ": resume restarted";
    }
  cudalab::testing::expect_throws_naming(
      [] { ch02::pointer_chase(nullptr, 16, 0, 1, false, nullptr); }, "ring");
}
