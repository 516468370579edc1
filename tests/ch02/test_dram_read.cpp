// Exercise 2.3 — the DRAM read kernel: every element read exactly once, at any size (tails that
// are not whole float4s, n = 0), on grids smaller and larger than the data.
#include <gtest/gtest.h>

#include <cstdint>
#include <vector>

#include "ch02/ch02.hpp"
#include "cudalab/memory.hpp"
#include "cudalab/random.hpp"
#include "cudalab/testing.hpp"

using namespace cudalab;

namespace {

// Small integers (exact in fp32 sums); element i's value depends on i so that a skipped or
// doubled element changes the total.
std::vector<float> integer_input(std::size_t n) {
  std::vector<float> x(n);
  for (std::size_t i = 0; i < n; ++i) x[i] = static_cast<float>((i * 2654435761u >> 7) % 8);
  return x;
}

}  // namespace

TEST(DramReadGpu, ReadsEveryElementOnce) {
  CUDALAB_REQUIRE_GPU();
  for (const std::size_t n :
       {std::size_t{0}, std::size_t{1}, std::size_t{3}, std::size_t{4}, std::size_t{31},
        std::size_t{1001}, std::size_t{1} << 20, (std::size_t{1} << 20) + 7})
    for (const int blocks : {1, 7, 264})
      for (const int threads : {32, 96, 256}) {
        const std::vector<float> x = integer_input(n);
        const DeviceBuffer<float> in = to_device(x.empty() ? std::vector<float>{0.f} : x);
        const std::size_t T = static_cast<std::size_t>(blocks) * threads;
        cudalab::testing::GuardedOutput<float> partial(T);
        ch02::dram_read(in.data(), n, partial.data(), blocks, threads);
        CUDALAB_CHECK(cudaDeviceSynchronize());
        double got = 0, want = 0;
        for (const float p : partial.result()) got += p;
        for (const float v : x) want += v;
        ASSERT_EQ(got, want) << "sum of partials, n = " << n << ", grid " << blocks << " x "
                             << threads << " (an element read twice or never)";
        ASSERT_TRUE(partial.guard_intact()) << "n = " << n;
      }
}

TEST(DramReadGpu, RefusesMisalignedInput) {
  CUDALAB_REQUIRE_GPU();
  DeviceBuffer<float> in(64), partial(32);
  cudalab::testing::expect_throws_naming(
      [&] { ch02::dram_read(in.data() + 1, 16, partial.data(), 1, 32); }, "in");
  cudalab::testing::expect_throws_naming(
      [&] { ch02::dram_read(in.data(), 16, partial.data(), 1, 2000); }, "threads");
}
