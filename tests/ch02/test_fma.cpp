// Exercise 2.1 — the FMA throughput kernel: every thread's result value checked exactly (fp32 and
// fp64, every ILP, odd grids, a poisoned output), and the FLOP count it reports.
#include <gtest/gtest.h>

#include <vector>

#include "ch02/ch02.hpp"
#include "cudalab/memory.hpp"
#include "cudalab/testing.hpp"

using namespace cudalab;

TEST(FmaFlops, TwoFlopPerFma) {
  EXPECT_DOUBLE_EQ(ch02::fma_flops(132, 128, 8, 1000), 2.0 * 132 * 128 * 8 * 1000);
  EXPECT_DOUBLE_EQ(ch02::fma_expected(5, 4, 10), 4 * 5 + 6 + 40);
  EXPECT_DOUBLE_EQ(ch02::fma_expected(1024 + 5, 4, 10), ch02::fma_expected(5, 4, 10));
}

template <class T>
void check_fma(int blocks, int threads, int ilp, int iterations) {
  const std::size_t n = static_cast<std::size_t>(blocks) * threads;
  cudalab::testing::GuardedOutput<T> out(n);
  if constexpr (sizeof(T) == 4)
    ch02::fma_throughput_f32(out.data(), blocks, threads, ilp, iterations, 1.0f, 1.0f);
  else
    ch02::fma_throughput_f64(out.data(), blocks, threads, ilp, iterations, 1.0, 1.0);
  CUDALAB_CHECK(cudaDeviceSynchronize());
  const std::vector<T> got = out.result();
  for (std::size_t t = 0; t < n; ++t) {
    const double want = ch02::fma_expected(t, ilp, iterations);
    if (static_cast<double>(got[t]) != want) {
      ADD_FAILURE() << (sizeof(T) == 4 ? "fp32" : "fp64") << " ilp " << ilp << ", " << iterations
                    << " iterations, grid " << blocks << " x " << threads << ": out[" << t
                    << "] = " << got[t] << ", expected " << want;
      return;
    }
  }
  EXPECT_TRUE(out.guard_intact()) << "wrote past out[" << n - 1 << "]";
}

TEST(FmaGpu, ExactResultEveryIlp) {
  CUDALAB_REQUIRE_GPU();
  for (const int ilp : {1, 2, 4, 8})
    for (const int iterations : {1, 17, 1000}) {
      check_fma<float>(3, 96, ilp, iterations);
      check_fma<double>(5, 64, ilp, iterations);
    }
  // The largest iteration count keeps fp32 exact (values below 2^24), with t % 1024 != t.
  check_fma<float>(2, 1024, 8, 1 << 20);
}

TEST(FmaGpu, RefusesBadShapes) {
  CUDALAB_REQUIRE_GPU();
  DeviceBuffer<float> out(64);
  cudalab::testing::expect_throws_naming(
      [&] { ch02::fma_throughput_f32(out.data(), 1, 33, 1, 1, 1, 1); }, "threads");
  cudalab::testing::expect_throws_naming(
      [&] { ch02::fma_throughput_f32(out.data(), 1, 32, 3, 1, 1, 1); }, "ilp");
  cudalab::testing::expect_throws_naming(
      [&] { ch02::fma_throughput_f32(out.data(), 1, 32, 1, 0, 1, 1); }, "iterations");
  cudalab::testing::expect_throws_naming(
      [&] { ch02::fma_throughput_f32(out.data(), 0, 32, 1, 1, 1, 1); }, "blocks");
}
