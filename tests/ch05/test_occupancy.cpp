// Exercise 5.8 — the occupancy calculator against hand-worked answers for six generations (CPU,
// runs on CI), and against cudaOccupancyMaxActiveBlocksPerMultiprocessor on real kernels (GPU).
#include <cuda_occupancy.h>  // the toolkit's header-only occupancy calculator (host code)
#include <cuda_runtime_api.h>
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "ch05/occupancy.hpp"
#include "cudalab/check.hpp"
#include "cudalab/random.hpp"
#include "cudalab/testing.hpp"

using namespace cudalab;
using ch05::OccupancyLimiter;

namespace {

struct Known {
  int cc, threads, regs;
  std::size_t smem;
  int blocks, warps;
  OccupancyLimiter limiter;
  const char* why;  // the arithmetic, shown when the case fails
};

// Worked by hand from the limits in arch_limits() and the rules in occupancy_calculator.cpp.
const std::vector<Known> kKnown{
    {90, 256, 32, 0, 8, 64, OccupancyLimiter::kWarps,
     "64 warps / 8 per block = 8; regs: 1024 per warp, 16384 / 1024 = 16 warps per quadrant -> 8 "
     "blocks too"},
    {90, 96, 40, 0, 16, 48, OccupancyLimiter::kRegisters,
     "regs per warp round_up(40 x 32, 256) = 1280; 16384 / 1280 = 12 warps per quadrant x 4 = 48 "
     "warps "
     "/ 3 = 16 blocks (65536 / 3840 = 17 ignores the quadrants)"},
    {90, 256, 16, 48 * 1024, 4, 32, OccupancyLimiter::kSharedMemory,
     "48 KiB + 1 KiB reserved = 50176 B; 233472 / 50176 = 4 blocks"},
    {90, 256, 255, 0, 1, 8, OccupancyLimiter::kRegisters,
     "round_up(255 x 32, 256) = 8192 per warp; 16384 / 8192 = 2 warps per quadrant = 8 warps = 1 "
     "block"},
    {90, 128, 32, 227 * 1024, 1, 4, OccupancyLimiter::kSharedMemory,
     "227 KiB + 1 KiB = 228 KiB: exactly one block"},
    {90, 128, 32, 227 * 1024 + 1, 0, 0, OccupancyLimiter::kDoesNotFit,
     "one byte over the 227 KiB a block may have"},
    {90, 32, 16, 0, 32, 32, OccupancyLimiter::kBlocks, "32 one-warp blocks: the 32-block limit"},
    {80, 1024, 64, 0, 1, 32, OccupancyLimiter::kRegisters,
     "2048 regs per warp, 16384 / 2048 = 8 warps per quadrant = 32 warps: one 32-warp block"},
    {80, 1024, 72, 0, 0, 0, OccupancyLimiter::kDoesNotFit,
     "round_up(72 x 32, 256) = 2304 x 32 warps = 73728 > 65536 registers per block"},
    {80, 256, 32, 100 * 1024, 1, 8, OccupancyLimiter::kSharedMemory,
     "100 KiB + 1 KiB = 103424 B; 167936 / 103424 = 1"},
    {86, 128, 32, 0, 12, 48, OccupancyLimiter::kWarps, "48 warps / 4 = 12 blocks"},
    {86, 32, 16, 0, 16, 16, OccupancyLimiter::kBlocks, "16 blocks per SM on sm_86"},
    {86, 256, 64, 0, 4, 32, OccupancyLimiter::kRegisters,
     "2048 per warp, 8 warps per quadrant = 32 warps / 8 = 4 blocks"},
    {89, 32, 16, 0, 24, 24, OccupancyLimiter::kBlocks, "24 blocks per SM on sm_89"},
    {89, 512, 32, 40 * 1024, 2, 32, OccupancyLimiter::kSharedMemory,
     "41 KiB per block, 100 KiB per SM -> 2 blocks (warps would allow 3)"},
    {75, 256, 32, 0, 4, 32, OccupancyLimiter::kWarps, "Turing: 32 warps / 8 = 4 blocks"},
    {75, 256, 32, 32 * 1024, 2, 16, OccupancyLimiter::kSharedMemory,
     "64 KiB / 32 KiB = 2, no reserve before sm_80"},
    {75, 64, 24, 64 * 1024 + 1, 0, 0, OccupancyLimiter::kDoesNotFit,
     "over the 64 KiB per block of Turing"},
    {70, 64, 24, 3100, 29, 58, OccupancyLimiter::kSharedMemory,
     "round_up(3100, 256) = 3328 B; 98304 / 3328 = 29 blocks (warps 32, blocks 32, regs 42)"},
    {70, 64, 24, 3000, 32, 64, OccupancyLimiter::kWarps,
     "round_up(3000, 256) = 3072 B: 32 blocks fit, as many as the warp and block limits allow"},
    {70, 1024, 0, 0, 2, 64, OccupancyLimiter::kWarps, "0 registers: no register limit"},
};

std::string describe_case(const Known& k) {
  return "sm_" + std::to_string(k.cc) + ", " + std::to_string(k.threads) + " threads, " +
         std::to_string(k.regs) + " regs/thread, " + std::to_string(k.smem) + " B shared: " + k.why;
}

}  // namespace

TEST(OccupancyCalculator, KnownAnswersForSixGenerations) {
  for (const Known& k : kKnown) {
    const ch05::Occupancy o = ch05::occupancy(ch05::arch_limits(k.cc), k.threads, k.regs, k.smem);
    EXPECT_EQ(o.blocks_per_sm, k.blocks) << describe_case(k) << "\n  got: " << ch05::describe(o);
    EXPECT_EQ(o.warps_per_sm, k.warps) << describe_case(k) << "\n  got: " << ch05::describe(o);
    EXPECT_EQ(o.limiter, k.limiter) << describe_case(k) << "\n  got: " << ch05::describe(o);
    const double want_occ = static_cast<double>(k.warps) / ch05::arch_limits(k.cc).max_warps_per_sm;
    EXPECT_DOUBLE_EQ(o.occupancy, want_occ) << describe_case(k);
  }
}

// A second, independent oracle on the CPU: the toolkit's own calculator (cuda_occupancy.h, the code
// behind the Occupancy Calculator spreadsheet), fed the same published limits, over a grid of
// configurations on all six generations. Its max-blocks-per-SM table is its own, not ours.
TEST(OccupancyCalculator, AgreesWithTheToolkitHeader) {
  int checked = 0;
  for (int cc : {70, 75, 80, 86, 89, 90}) {
    const ch05::ArchLimits a = ch05::arch_limits(cc);
    cudaOccDeviceProp prop;
    prop.computeMajor = cc / 10;
    prop.computeMinor = cc % 10;
    prop.maxThreadsPerBlock = a.max_threads_per_block;
    prop.maxThreadsPerMultiprocessor = a.max_threads_per_sm;
    prop.regsPerBlock = a.regs_per_block;
    prop.regsPerMultiprocessor = a.regs_per_sm;
    prop.warpSize = a.warp_size;
    prop.sharedMemPerBlock = 48 * 1024;
    prop.sharedMemPerMultiprocessor = a.smem_per_sm;
    prop.numSms = 1;
    prop.sharedMemPerBlockOptin = a.smem_per_block;
    prop.reservedSharedMemPerBlock = a.smem_reserved_per_block;
    cudaOccDeviceState state;  // default carve-out: the largest shared-memory configuration
    for (int regs : {1, 8, 16, 24, 32, 33, 40, 48, 56, 64, 72, 80, 96, 128, 168, 200, 255}) {
      cudaOccFuncAttributes attr;
      attr.maxThreadsPerBlock = 1024;
      attr.numRegs = regs;
      attr.sharedSizeBytes = 0;
      attr.shmemLimitConfig = FUNC_SHMEM_LIMIT_OPTIN;  // opted in to the per-block maximum
      attr.maxDynamicSharedSizeBytes = a.smem_per_block;
      attr.numBlockBarriers = 1;
      for (int threads : {1, 31, 32, 33, 64, 96, 128, 160, 192, 256, 384, 512, 640, 768, 1024}) {
        for (std::size_t smem : {0, 1, 1000, 4096, 12345, 48 * 1024, 64 * 1024, 70000, 99 * 1024,
                                 100 * 1024, 163 * 1024, 200 * 1024, 227 * 1024, 228 * 1024}) {
          cudaOccResult want;
          ASSERT_EQ(
              cudaOccMaxActiveBlocksPerMultiprocessor(&want, &prop, &attr, &state, threads, smem),
              CUDA_OCC_SUCCESS);
          const ch05::Occupancy o = ch05::occupancy(a, threads, regs, smem);
          EXPECT_EQ(o.blocks_per_sm, want.activeBlocksPerMultiprocessor)
              << "sm_" << cc << ", " << threads << " threads, " << regs << " registers, " << smem
              << " B shared memory\n  ours: " << ch05::describe(o);
          ++checked;
        }
      }
    }
  }
  EXPECT_EQ(checked, 6 * 17 * 15 * 14);
}

TEST(OccupancyCalculator, MoreRegistersNeverRaiseOccupancy) {
  const auto a = ch05::arch_limits(90);
  for (int threads : {64, 128, 256, 512, 1024}) {
    int last = 1 << 30;
    for (int regs = 1; regs <= 255; ++regs) {
      const int b = ch05::occupancy(a, threads, regs, 0).blocks_per_sm;
      EXPECT_LE(b, last) << threads << " threads, " << regs << " registers";
      last = b;
    }
  }
}

TEST(OccupancyCalculator, PublishedLimits) {
  EXPECT_EQ(ch05::arch_limits(90).max_warps_per_sm, 64);
  EXPECT_EQ(ch05::arch_limits(86).max_warps_per_sm, 48);
  EXPECT_EQ(ch05::arch_limits(75).max_warps_per_sm, 32);
  EXPECT_EQ(ch05::arch_limits(89).max_blocks_per_sm, 24);
  EXPECT_EQ(ch05::arch_limits(90).smem_per_sm, 233472u);
  EXPECT_EQ(ch05::arch_limits(80).smem_per_sm, 167936u);
  EXPECT_THROW(ch05::arch_limits(60), std::invalid_argument);
  EXPECT_THROW(ch05::arch_limits(100), std::invalid_argument);
}

TEST(OccupancyCalculatorArgs, RejectsBadArgumentsByName) {
  const auto a = ch05::arch_limits(90);
  const auto throws_naming = [](auto&& call, const char* arg) {
    cudalab::testing::expect_throws_naming(call, arg);
  };
  throws_naming([&] { ch05::occupancy(a, 0, 32, 0); }, "block_threads");
  throws_naming([&] { ch05::occupancy(a, 1025, 32, 0); }, "block_threads");
  throws_naming([&] { ch05::occupancy(a, 256, 256, 0); }, "regs_per_thread");
  throws_naming([&] { ch05::occupancy(a, 256, -1, 0); }, "regs_per_thread");
  throws_naming([&] { ch05::occupancy(ch05::ArchLimits{}, 256, 32, 0); }, "arch");
}

// ---- GPU: the calculator agrees with the runtime on real kernels ----------------------------

namespace {

const std::vector<ch05::OccupancyProbe> kProbes{
    ch05::OccupancyProbe::kKeep4,         ch05::OccupancyProbe::kKeep32,
    ch05::OccupancyProbe::kKeep64,        ch05::OccupancyProbe::kKeep128,
    ch05::OccupancyProbe::kKeep64Bounded, ch05::OccupancyProbe::kKeep4Smem16K,
    ch05::OccupancyProbe::kKeep4Smem40K};

cudaDeviceProp props() {
  int dev = 0;
  CUDALAB_CHECK(cudaGetDevice(&dev));
  cudaDeviceProp p{};
  CUDALAB_CHECK(cudaGetDeviceProperties(&p, dev));
  return p;
}

// The published table's row for this GPU, or (for a generation not in the table) the same limits
// read from the device: what the API uses.
ch05::ArchLimits limits_for_this_gpu(const cudaDeviceProp& p) {
  const int cc = p.major * 10 + p.minor;
  for (int known : {70, 75, 80, 86, 89, 90})
    if (cc == known) return ch05::arch_limits(cc);
  ch05::ArchLimits a = ch05::arch_limits(90);
  a.cc = cc;
  a.max_threads_per_sm = p.maxThreadsPerMultiProcessor;
  a.max_warps_per_sm = p.maxThreadsPerMultiProcessor / 32;
  a.max_blocks_per_sm = p.maxBlocksPerMultiProcessor;
  a.regs_per_sm = p.regsPerMultiprocessor;
  a.regs_per_block = p.regsPerBlock;
  a.smem_per_sm = p.sharedMemPerMultiprocessor;
  a.smem_per_block = p.sharedMemPerBlockOptin;
  a.smem_reserved_per_block = p.reservedSharedMemPerBlock;
  return a;
}

}  // namespace

TEST(OccupancyApiGpu, PublishedTableMatchesThisDevice) {
  CUDALAB_REQUIRE_GPU();
  const cudaDeviceProp p = props();
  const int cc = p.major * 10 + p.minor;
  bool known = false;
  for (int k : {70, 75, 80, 86, 89, 90}) known = known || k == cc;
  if (!known) GTEST_SKIP() << "skipped: sm_" << cc << " is not in the published table";
  const ch05::ArchLimits a = ch05::arch_limits(cc);
  EXPECT_EQ(a.max_threads_per_sm, p.maxThreadsPerMultiProcessor);
  EXPECT_EQ(a.max_blocks_per_sm, p.maxBlocksPerMultiProcessor);
  EXPECT_EQ(a.regs_per_sm, p.regsPerMultiprocessor);
  EXPECT_EQ(a.regs_per_block, p.regsPerBlock);
  EXPECT_EQ(a.smem_per_sm, p.sharedMemPerMultiprocessor);
  EXPECT_EQ(a.smem_per_block, p.sharedMemPerBlockOptin);
  EXPECT_EQ(a.smem_reserved_per_block, p.reservedSharedMemPerBlock);
}

TEST(OccupancyApiGpu, CalculatorAgreesWithTheRuntime) {
  CUDALAB_REQUIRE_GPU();
  const ch05::ArchLimits a = limits_for_this_gpu(props());
  for (const auto probe : kProbes) {
    const ch05::ProbeResources r = ch05::probe_resources(probe);
    for (int threads : {32, 64, 96, 128, 160, 256}) {
      for (std::size_t dyn :
           {std::size_t{0}, std::size_t{10000}, std::size_t{60 * 1024}, std::size_t{150 * 1024}}) {
        const int api = ch05::probe_blocks_per_sm(probe, threads, dyn);
        const ch05::Occupancy o = ch05::occupancy(a, threads, r.num_regs, r.static_smem + dyn);
        EXPECT_EQ(o.blocks_per_sm, api)
            << ch05::to_string(probe) << ": " << threads << " threads, " << r.num_regs
            << " registers, " << r.static_smem << " B static + " << dyn
            << " B dynamic shared\n  calculator: " << ch05::describe(o);
      }
    }
  }
}

TEST(OccupancyApiGpu, LaunchBoundsCapRegisters) {
  CUDALAB_REQUIRE_GPU();
  const auto bounded = ch05::probe_resources(ch05::OccupancyProbe::kKeep64Bounded);
  const auto free_ = ch05::probe_resources(ch05::OccupancyProbe::kKeep64);
  // __launch_bounds__(256, 4): 4 blocks x 256 threads x R <= 65536 -> R <= 64.
  EXPECT_LE(bounded.num_regs, 64);
  EXPECT_GT(free_.num_regs, 64) << "kKeep64 keeps 64 values live: more than 64 registers";
  EXPECT_GE(ch05::probe_blocks_per_sm(ch05::OccupancyProbe::kKeep64Bounded, 256, 0), 4);
  EXPECT_LT(ch05::probe_blocks_per_sm(ch05::OccupancyProbe::kKeep64, 256, 0), 4);
}

TEST(OccupancyApiGpu, SuggestedBlockSizeIsValid) {
  CUDALAB_REQUIRE_GPU();
  for (const auto probe : kProbes) {
    const ch05::SuggestedLaunch s = ch05::probe_suggested_launch(probe, 0);
    EXPECT_GT(s.block_threads, 0) << ch05::to_string(probe);
    EXPECT_LE(s.block_threads, ch05::kOccupancyProbeMaxBlock) << ch05::to_string(probe);
    EXPECT_GT(s.min_grid, 0) << ch05::to_string(probe);
    EXPECT_GE(ch05::probe_blocks_per_sm(probe, s.block_threads, 0), 1) << ch05::to_string(probe);
  }
}

TEST(OccupancyApiGpu, ProbesCompute) {
  CUDALAB_REQUIRE_GPU();
  Rng rng;
  for (const auto probe : kProbes) {
    for (std::size_t n :
         {std::size_t{1}, std::size_t{33}, std::size_t{5000}, std::size_t{300001}}) {
      const int keep = ch05::probe_keep(probe);
      const auto x = rng.uniform<float>(n, -1.0f, 1.0f);
      auto dx = to_device(x);
      cudalab::testing::GuardedOutput<float> y(n);
      ch05::run_occupancy_probe(probe, dx.data(), y.data(), n, 128, 0);
      CUDALAB_CHECK(cudaDeviceSynchronize());
      // Oracle: same float additions in the same order, so exact.
      std::vector<float> want(n);
      const std::size_t chunk = std::size_t{32} * keep;
      for (std::size_t base = 0; base < n; base += chunk)
        for (std::size_t lane = 0; lane < 32; ++lane) {
          float s = 0.0f;
          for (int k = 0; k < keep; ++k) {
            const std::size_t i = base + lane + 32 * static_cast<std::size_t>(k);
            s += i < n ? x[i] : 0.0f;
          }
          for (int k = 0; k < keep; ++k) {
            const std::size_t i = base + lane + 32 * static_cast<std::size_t>(k);
            if (i < n) want[i] = x[i] + s;
          }
        }
      EXPECT_MATCHES(compare(y.result(), want, {},
                             std::string("occupancy probe ") + ch05::to_string(probe) +
                                 " (n = " + std::to_string(n) + ")"));
      EXPECT_TRUE(y.guard_intact());
    }
  }
}
