// The tensor-core throughput kernels (worked): mma.sync per type, mma.sp (2:4), wgmma (sm_90a).
// Operands are all ones, so every accumulator holds an exact integer the host predicts.
#include <gtest/gtest.h>

#include <stdexcept>
#include <string>
#include <vector>

#include "ch02/ch02.hpp"
#include "cudalab/memory.hpp"
#include "cudalab/testing.hpp"

using namespace cudalab;

TEST(TensorFlops, CountsAsTheSheetDoes) {
  // m16n8k16: 2 x 16 x 8 x 16 = 4096 FLOP per mma; 4 chains per warp.
  EXPECT_DOUBLE_EQ(ch02::mma_flops(ch02::MmaKind::bf16, 1, 32, 1), 4 * 4096.0);
  EXPECT_DOUBLE_EQ(ch02::mma_flops(ch02::MmaKind::tf32, 1, 32, 1), 4 * 2048.0);
  EXPECT_DOUBLE_EQ(ch02::mma_flops(ch02::MmaKind::int8, 1, 32, 1), 4 * 8192.0);
  // The sparse row counts the dense-equivalent K = 32, like the "with sparsity" figures.
  EXPECT_DOUBLE_EQ(ch02::mma_flops(ch02::MmaKind::bf16_sparse, 1, 32, 1), 4 * 8192.0);
  // wgmma m64n256k16: 2 x 64 x 256 x 16 per instruction, 4 per iteration per warpgroup.
  EXPECT_DOUBLE_EQ(ch02::wgmma_flops(ch02::WgmmaKind::bf16, 1, 128, 1), 4 * 524288.0);
  EXPECT_DOUBLE_EQ(ch02::wgmma_flops(ch02::WgmmaKind::fp8, 1, 256, 1), 2 * 4 * 1048576.0);
}

TEST(TensorGpu, MmaSyncEveryType) {
  CUDALAB_REQUIRE_GPU();
  using K = ch02::MmaKind;
  for (const K kind : {K::fp16, K::bf16, K::tf32, K::int8, K::fp8, K::bf16_sparse}) {
    if (!ch02::mma_supported(kind)) continue;  // fp8 before sm_89: UnsupportedTypeIsRefusedNotRun
    for (const int iterations : {1, 5}) {
      const int blocks = 3, threads = 96;
      cudalab::testing::GuardedOutput<float> out(blocks * threads);
      ch02::mma_throughput(kind, out.data(), blocks, threads, iterations);
      CUDALAB_CHECK(cudaDeviceSynchronize());
      const std::vector<float> got = out.result();
      for (std::size_t t = 0; t < got.size(); ++t)
        ASSERT_EQ(got[t], ch02::mma_expected(kind, iterations))
            << "kind " << static_cast<int>(kind) << ", thread " << t << ", " << iterations
            << " iterations";
      EXPECT_TRUE(out.guard_intact());
    }
  }
}

TEST(TensorGpu, UnsupportedTypeIsRefusedNotRun) {
  CUDALAB_REQUIRE_GPU();
  if (ch02::mma_supported(ch02::MmaKind::fp8)) GTEST_SKIP() << "skipped: this GPU has fp8 mma";
  DeviceBuffer<float> out(32);
  EXPECT_THROW(ch02::mma_throughput(ch02::MmaKind::fp8, out.data(), 1, 32, 1), std::runtime_error);
}

TEST(TensorGpu, WgmmaBf16AndFp8) {
  CUDALAB_REQUIRE_GPU();
  DeviceBuffer<float> probe(256);
  if (!ch02::wgmma_supported()) {
    EXPECT_THROW(ch02::wgmma_throughput(ch02::WgmmaKind::bf16, probe.data(), 1, 128, 1),
                 std::runtime_error);
    GTEST_SKIP() << "skipped: wgmma needs compute capability 9.0";
  }
  for (const ch02::WgmmaKind kind : {ch02::WgmmaKind::bf16, ch02::WgmmaKind::fp8})
    for (const int threads : {128, 256})
      for (const int iterations : {1, 3}) {
        const int blocks = 2;
        cudalab::testing::GuardedOutput<float> out(blocks * threads);
        ch02::wgmma_throughput(kind, out.data(), blocks, threads, iterations);
        CUDALAB_CHECK(cudaDeviceSynchronize());
        const std::vector<float> got = out.result();
        for (std::size_t t = 0; t < got.size(); ++t)
          ASSERT_EQ(got[t], ch02::wgmma_expected(kind, iterations))
              << (kind == ch02::WgmmaKind::bf16 ? "bf16" : "fp8") << ", thread " << t;
        EXPECT_TRUE(out.guard_intact());
      }
  cudalab::testing::expect_throws_naming(
      [&] { ch02::wgmma_throughput(ch02::WgmmaKind::bf16, probe.data(), 1, 192, 1); }, "threads");
}
