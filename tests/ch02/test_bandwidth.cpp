// The worked bandwidth kernels of the card: write, copy, L2 and L1 reads, the shared-memory
// ladder. Each checked exactly on odd sizes with poisoned outputs and guard zones.
#include <gtest/gtest.h>

#include <vector>

#include "ch02/ch02.hpp"
#include "cudalab/memory.hpp"
#include "cudalab/testing.hpp"

using namespace cudalab;

namespace {

std::vector<float> integer_input(std::size_t n) {
  std::vector<float> x(n);
  for (std::size_t i = 0; i < n; ++i) x[i] = static_cast<float>((i * 40503u >> 5) % 8);
  return x;
}
double sum(const std::vector<float>& v) {
  double s = 0;
  for (const float x : v) s += x;
  return s;
}

}  // namespace

// The arguments are checked before anything runs on the GPU: a CPU test.
TEST(BandwidthArgs, CopyRefusesBadGrids) {
  cudalab::testing::expect_throws_naming([] { ch02::copy_kernel(nullptr, nullptr, 0, -1, 128); },
                                         "blocks");
  cudalab::testing::expect_throws_naming([] { ch02::copy_kernel(nullptr, nullptr, 0, 0, 0); },
                                         "threads");
  cudalab::testing::expect_throws_naming([] { ch02::copy_kernel(nullptr, nullptr, 0, 0, 2048); },
                                         "threads");
}

TEST(BandwidthGpu, FillAndCopyAnySize) {
  CUDALAB_REQUIRE_GPU();
  for (const std::size_t n : {std::size_t{0}, std::size_t{1}, std::size_t{5}, std::size_t{4099},
                              (std::size_t{1} << 20) + 3}) {
    const std::vector<float> x = integer_input(n);
    const DeviceBuffer<float> in = to_device(x.empty() ? std::vector<float>{0.f} : x);
    // Resident grids (7 blocks walk the tiles; 2 threads a block leave a 3-float tail to a
    // loop) and one block per tile (blocks = 0).
    cudalab::testing::GuardedOutput<float> copied(n), short_blocks(n), two(n), filled(n);
    ch02::copy_kernel(in.data(), copied.data(), n, 7, 128);
    ch02::copy_kernel(in.data(), short_blocks.data(), n, 0, 96);
    ch02::copy_kernel(in.data(), two.data(), n, 3, 2);
    ch02::fill_write(filled.data(), n, 2.5f, 3, 64);
    CUDALAB_CHECK(cudaDeviceSynchronize());
    EXPECT_EQ(copied.result(), x) << "copy, n = " << n;
    EXPECT_EQ(short_blocks.result(), x) << "copy, one block per tile, n = " << n;
    EXPECT_EQ(two.result(), x) << "copy, 2 threads a block, n = " << n;
    EXPECT_EQ(filled.result(), std::vector<float>(n, 2.5f)) << "fill, n = " << n;
    EXPECT_TRUE(copied.guard_intact()) << "copy, n = " << n;
    EXPECT_TRUE(short_blocks.guard_intact()) << "copy, one block per tile, n = " << n;
    EXPECT_TRUE(two.guard_intact()) << "copy, 2 threads a block, n = " << n;
    EXPECT_TRUE(filled.guard_intact()) << "fill, n = " << n;
  }
}

TEST(BandwidthGpu, CacheReadsSumEveryPass) {
  CUDALAB_REQUIRE_GPU();
  for (const std::size_t n : {std::size_t{1}, std::size_t{4097}, std::size_t{16384}})
    for (const int passes : {1, 3}) {
      const std::vector<float> x = integer_input(n);
      const DeviceBuffer<float> in = to_device(x);
      const int blocks = 5, threads = 96;
      cudalab::testing::GuardedOutput<float> l2(blocks * threads), l1(blocks * threads);
      ch02::l2_read(in.data(), n, passes, l2.data(), blocks, threads);
      ch02::l1_read(in.data(), n, passes, l1.data(), blocks, threads);
      CUDALAB_CHECK(cudaDeviceSynchronize());
      EXPECT_EQ(sum(l2.result()), passes * sum(x)) << "l2_read, n = " << n;
      EXPECT_EQ(sum(l1.result()), blocks * passes * sum(x))
          << "l1_read: every block reads all of it, n = " << n;
      EXPECT_TRUE(l2.guard_intact());
      EXPECT_TRUE(l1.guard_intact());
    }
  DeviceBuffer<float> big(20000), p(32);
  cudalab::testing::expect_throws_naming(
      [&] { ch02::l1_read(big.data(), 20000, 1, p.data(), 1, 32); }, "n");
}

TEST(BandwidthGpu, L2TilesSumEveryPass) {
  CUDALAB_REQUIRE_GPU();
  // Slots start at zero and the kernel adds into them. (1 << 20) + 7: many slabs, a partial last
  // one and an odd float; 100 threads: a last warp of 4 lanes. NaN behind the input: a tile taken
  // for whole (the unguarded path) when it is not reads them.
  const std::vector<float> zeros(ch02::kL2ReadSlots, 0.0f);
  for (const std::size_t n : {std::size_t{1}, std::size_t{4097}, (std::size_t{1} << 20) + 7})
    for (const int passes : {1, 3})
      for (const int threads : {96, 100, 256}) {
        const std::vector<float> x = integer_input(n);
        const cudalab::testing::GuardedInput<float> in(x);
        cudalab::testing::GuardedOutput<float> slots(zeros.size(), zeros);
        ch02::l2_read_tiles(in.data(), n, passes, slots.data(), threads);
        CUDALAB_CHECK(cudaDeviceSynchronize());
        EXPECT_EQ(sum(slots.result()), passes * sum(x))
            << "n = " << n << ", passes " << passes << ", threads " << threads;
        EXPECT_TRUE(slots.guard_intact());
      }
  DeviceBuffer<float> p(ch02::kL2ReadSlots);
  cudalab::testing::expect_throws_naming(
      [&] { ch02::l2_read_tiles(p.data(), 16, 0, p.data(), 64); }, "passes");
}

TEST(BandwidthGpu, SharedLadderEveryStride) {
  CUDALAB_REQUIRE_GPU();
  for (const int stride : {1, 2, 3, 4, 8, 16, 32}) {
    const int blocks = 3, threads = 160, iterations = 37;
    cudalab::testing::GuardedOutput<float> out(blocks * threads);
    ch02::smem_read(stride, iterations, out.data(), blocks, threads);
    CUDALAB_CHECK(cudaDeviceSynchronize());
    const std::vector<float> got = out.result();
    for (std::size_t t = 0; t < got.size(); ++t)
      ASSERT_EQ(got[t], ch02::smem_expected(t, threads, stride, iterations))
          << "stride " << stride << ", thread " << t;
    EXPECT_TRUE(out.guard_intact());
  }
  DeviceBuffer<float> p(32);
  cudalab::testing::expect_throws_naming([&] { ch02::smem_read(33, 1, p.data(), 1, 32); },
                                         "stride");
}
