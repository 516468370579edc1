// Exercise 5.4 — the single-pass decoupled look-back scan: int exact, float as described in
// reduce_scan_testing.hpp; partial last tiles, misaligned pointers (the scalar path), many
// tiles (several waves of blocks, so look-backs meet predecessors in every state), n = 0, and
// the argument checks of the device-wide scan API.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <string>
#include <tuple>
#include <vector>

#include "ch05/scan.hpp"
#include "cudalab/delay.hpp"
#include "cudalab/device_fill.hpp"
#include "cudalab/memory.hpp"
#include "cudalab/stream.hpp"
#include "cudalab/testing.hpp"
#include "reduce_scan_testing.hpp"

using namespace cudalab;
using ch05::ScanKind;
using ch05::ScanVariant;

namespace {

using Param = std::tuple<ScanKind, std::size_t, std::size_t>;  // kind, n, offset
std::string param_name(const ::testing::TestParamInfo<Param>& p) {
  const auto [k, n, off] = p.param;
  return std::string(k == ScanKind::kInclusive ? "inclusive" : "exclusive") + "_n_" +
         std::to_string(n) + "_offset_" + std::to_string(off);
}

const char* exercise_of(ScanVariant v) {
  switch (v) {
    case ScanVariant::kKoggeStone:
      return "exercise 5.3";
    case ScanVariant::kBrentKung:
      return "worked example";
    case ScanVariant::kDecoupledLookback:
      return "exercise 5.4";
  }
  return "?";
}

template <class T>
void check_lookback(ScanKind kind, std::size_t n, std::size_t offset, const char* type) {
  DeviceBuffer<unsigned char> ws(ch05::scan_workspace_bytes(n));
  CUDALAB_CHECK(
      cudaMemset(ws.data(), 0xAB, ws.bytes()));  // the scan must not rely on a clean workspace
  const std::string what = std::string("scan<") + type + "> decoupled_lookback (exercise 5.4)";
  for (int call = 0; call < 2; ++call)  // twice on one workspace: the per-call reset works
    ch05_testing::check_scan<T>(
        [&](const T* in, T* out) {
          ch05::scan(in, out, n, kind, ws.data(), ws.bytes(), ScanVariant::kDecoupledLookback);
        },
        n, kind, n, offset, what + (call == 0 ? "" : ", second call"));
}

}  // namespace

// The stream contract (cudalab/testing.hpp, replay_from_capture): every kernel and the tile-state
// reset of every variant on the caller's stream. Work launched on the legacy default stream runs
// while the call is recorded, not in the recorded graph, so the replay leaves out poisoned (or
// builds on tile sums the graph never wrote).
class ScanStreamGpu : public ::testing::TestWithParam<ScanVariant> {};

TEST_P(ScanStreamGpu, AllWorkOnTheCallersStream) {
  CUDALAB_REQUIRE_GPU();
  const ScanVariant v = GetParam();
  const std::size_t n = 100'003;
  Rng rng;
  const auto x = rng.uniform<int>(n, -1000, 1000);
  auto in = to_device(x);
  DeviceBuffer<unsigned char> ws(ch05::scan_workspace_bytes(n));
  CUDALAB_CHECK(cudaMemset(ws.data(), 0xAB, ws.bytes()));
  cudalab::testing::GuardedOutput<int> out(n);
  cudalab::testing::replay_from_capture(
      [&](cudaStream_t s) {
        ch05::scan(in.data(), out.data(), n, ScanKind::kInclusive, ws.data(), ws.bytes(), v, s);
      },
      [&] {
        out.repoison();
        CUDALAB_CHECK(cudaMemset(ws.data(), 0xAB, ws.bytes()));
      });
  EXPECT_MATCHES(compare(out.result(), ch05_testing::scan_oracle(x, ScanKind::kInclusive, n), {},
                         std::string("scan<int> ") + ch05::to_string(v) + " (" + exercise_of(v) +
                             ") replayed from a capture of its stream"));
}

INSTANTIATE_TEST_SUITE_P(Variants, ScanStreamGpu, ::testing::ValuesIn(ch05::kAllScanVariants),
                         [](const auto& p) { return std::string(ch05::to_string(p.param)); });

class LookbackScanGpu : public ::testing::TestWithParam<Param> {};

TEST_P(LookbackScanGpu, Int) {
  CUDALAB_REQUIRE_GPU();
  const auto [kind, n, offset] = GetParam();
  check_lookback<int>(kind, n, offset, "int");
}
TEST_P(LookbackScanGpu, Float) {
  CUDALAB_REQUIRE_GPU();
  const auto [kind, n, offset] = GetParam();
  check_lookback<float>(kind, n, offset, "float");
}

INSTANTIATE_TEST_SUITE_P(
    Sizes, LookbackScanGpu,
    ::testing::Combine(::testing::Values(ScanKind::kInclusive, ScanKind::kExclusive),
                       // a warp +- 1, half a tile +- 1, a tile (kLookbackTile = 8192) +- 1, 2 tiles
                       // + 1 (the smallest n with a third tile: its look-back reads tile 1's A or
                       // P), 129 tiles with a partial last one
                       ::testing::Values<std::size_t>(1, 31, 33, 4095, 4096, 4097, 8191, 8192, 8193,
                                                      16'385, 1'048'583),
                       ::testing::Values<std::size_t>(0)),
    param_name);
// Misaligned by 4 bytes: the kernel falls back to scalar loads and stores.
INSTANTIATE_TEST_SUITE_P(Misaligned, LookbackScanGpu,
                         ::testing::Combine(::testing::Values(ScanKind::kInclusive,
                                                              ScanKind::kExclusive),
                                            ::testing::Values<std::size_t>(5, 100'003),
                                            ::testing::Values<std::size_t>(1)),
                         param_name);

// 2^23 + 3 elements: 1025 tiles, about two waves of resident blocks on an H200: look-backs
// find predecessors that are still X, already A, or already P, and windows that move further back.
TEST(LookbackScanLargeGpu, ManyWavesOfTiles) {
  CUDALAB_REQUIRE_GPU();
  const std::size_t n = (std::size_t{1} << 23) + 3;
  check_lookback<int>(ScanKind::kInclusive, n, 0, "int");
  check_lookback<float>(ScanKind::kExclusive, n, 0, "float");
}

// n = 2^31 + 5 ints (in + out: 17.2 GB), inclusive and exclusive, checked exactly on the device
// (out[i] - out[i - 1] == in[i], or in[i - 1], with 32-bit wrap-around: that pins every element).
// A 32-bit index breaks past 2^31 (262145 tiles, the last one holding 5 elements). (5.3's
// scan-then-propagate has the same test in test_scan_block.cpp.) Cost on an H200: fill 8.6 GB, then
// 2 scans x ~17 GB and 2 checks x ~26 GB: ~95 GB, ~30 ms of GPU time, plus allocation.
TEST(LookbackScanLargeGpu, PastTwoToThe31) {
  const std::size_t n = (std::size_t{1} << 31) + 5;
  const std::size_t ws_bytes = ch05::scan_workspace_bytes(n);
  CUDALAB_REQUIRE_DEVICE_MEMORY(2 * n * sizeof(int) + ws_bytes + (std::size_t{1} << 30));
  DeviceBuffer<int> in(n), out(n);
  DeviceBuffer<unsigned char> ws(ws_bytes);
  fill_uniform_device(in.data(), n, Rng().seed(), -1000, 1000);
  for (ScanKind kind : {ScanKind::kInclusive, ScanKind::kExclusive}) {
    poison_device(out.data(), out.bytes());
    ch05::scan(in.data(), out.data(), n, kind, ws.data(), ws.bytes(),
               ScanVariant::kDecoupledLookback);
    CUDALAB_CHECK(cudaDeviceSynchronize());
    EXPECT_TRUE(cudalab::testing::device_matches(
        cudalab::testing::check_int_scan(in.data(), out.data(), n, kind == ScanKind::kInclusive),
        std::string("scan<int> decoupled_lookback (exercise 5.4, ") +
            (kind == ScanKind::kInclusive ? "inclusive" : "exclusive") + ", n = 2^31 + 5)"));
  }
}

// n = 2^32 + 5 ints: a tile's first element computed as a 32-bit product (tile * 8192) wraps.
TEST(LookbackScanLargeGpu, PastTwoToThe32) {
  ch05_testing::expect_int_scan_past_2_to_32(ScanVariant::kDecoupledLookback,
                                             "decoupled_lookback (exercise 5.4)");
}

// Input and output on their own alignment (+0 or +1 element views): the vector path may be taken
// only when both allow it. In-aligned / out-misaligned stores 16 bytes to a misaligned address.
using AlignParam = std::tuple<std::size_t, std::size_t>;  // input offset, output offset
class LookbackScanAlignmentGpu : public ::testing::TestWithParam<AlignParam> {};

TEST_P(LookbackScanAlignmentGpu, InputAndOutputOnTheirOwnAlignment) {
  CUDALAB_REQUIRE_GPU();
  const auto [in_off, out_off] = GetParam();
  const std::size_t n = 3 * ch05::kLookbackTile + 5;
  DeviceBuffer<unsigned char> ws(ch05::scan_workspace_bytes(n));
  for (ScanKind kind : {ScanKind::kInclusive, ScanKind::kExclusive})
    ch05_testing::check_scan<int>(
        [&](const int* in, int* out) {
          ch05::scan(in, out, n, kind, ws.data(), ws.bytes(), ScanVariant::kDecoupledLookback);
        },
        n, kind, n, in_off, "scan<int> decoupled_lookback (exercise 5.4)", out_off);
}

INSTANTIATE_TEST_SUITE_P(Offsets, LookbackScanAlignmentGpu,
                         ::testing::Values(AlignParam{0, 1}, AlignParam{1, 0}, AlignParam{1, 1},
                                           AlignParam{0, 0}),
                         [](const ::testing::TestParamInfo<AlignParam>& p) {
                           return "in_" + std::to_string(std::get<0>(p.param)) + "_out_" +
                                  std::to_string(std::get<1>(p.param));
                         });

// The decoupled look-back's hand-off between tiles (a flag and a value published together, read
// by the tiles behind) under memory contention from another stream: 20 scans, every one exact.
TEST(LookbackScanContentionGpu, ExactUnderMemoryContention) {
  CUDALAB_REQUIRE_GPU();
  const std::size_t n = (std::size_t{1} << 22) + 3;
  DeviceBuffer<unsigned char> ws(ch05::scan_workspace_bytes(n));
  Stream side, main;
  Contention contention;
  contention.run(side, 30'000, 16);
  ch05_testing::check_scan<int>(
      [&](const int* in, int* out) {
        for (int call = 0; call < 20; ++call)
          ch05::scan(in, out, n, ScanKind::kInclusive, ws.data(), ws.bytes(),
                     ScanVariant::kDecoupledLookback, main);
      },
      n, ScanKind::kInclusive, n, 0, "scan<int> decoupled_lookback (exercise 5.4, contention)");
}

// Technique (exercise 5.4): the look-back scan is ONE pass over the data: captured into a CUDA
// graph, a call must hold exactly one kernel node (plus at most one memset node, the reset of the
// tile states) and no copy. A scan-then-propagate in disguise (tile scans, then a scan of the tile
// sums, then a fix-up pass) has three or more kernels and moves ~4n elements instead of ~2n.
// Graph capture records the launches without running them: no profiler, cheap, deterministic.
TEST(ScanTechniqueGpu, LookbackIsOneKernel) {
  CUDALAB_REQUIRE_GPU();
  const std::size_t n = (std::size_t{1} << 20) + 3;
  DeviceBuffer<int> in(n), out(n);
  DeviceBuffer<unsigned char> ws(ch05::scan_workspace_bytes(n));
  const auto c = cudalab::testing::capture_launches([&](cudaStream_t stream) {
    ch05::scan(in.data(), out.data(), n, ScanKind::kInclusive, ws.data(), ws.bytes(),
               ScanVariant::kDecoupledLookback, stream);
  });
  EXPECT_EQ(c.kernels.size(), 1u) << "scan decoupled_lookback (exercise 5.4, n = " << n
                                  << ") launched " << c.kernels.size()
                                  << " kernels: a single-pass scan is one kernel (the "
                                     "look-back replaces the passes over the tile sums)";
  EXPECT_LE(c.memsets, 1) << "scan decoupled_lookback: " << c.memsets
                          << " memsets (want at most one: the tile states)";
  EXPECT_EQ(c.copies + c.other, 0) << "scan decoupled_lookback: " << c.copies + c.other
                                   << " copies or other graph nodes (want none)";
}

// Technique (exercise 5.4): the look-back is DECOUPLED: a tile does not wait for its predecessor's
// inclusive prefix, it sums published aggregates. A chained scan (each tile spins until tile - 1
// has its prefix) is correct and one pass, but serial: 2^15 tiles x ~0.5-1 us of latency each
// = 16-33 ms at n = 2^28, against ~0.6 ms for a copy of the same bytes (2 GiB at ~3.5 TB/s); the
// reference look-back takes ~1.1x the copy. The bound below, 8x the copy (each the best of 10,
// interleaved, so clocks and other processes sharing the GPU hit both alike), sits far from both:
// a factor 7 of margin for contention above the reference, 3 or more below a chain. A timing test,
// so it lives in a *LargeGpu suite (never under compute-sanitizer). Cost: ~20 scans and copies of
// 2 GiB, ~15 ms of GPU time (a chain: ~0.3 s).
TEST(ScanTechniqueLargeGpu, LookbackIsNotAChain) {
  const std::size_t n = std::size_t{1} << 28;
  const std::size_t ws_bytes = ch05::scan_workspace_bytes(n);
  CUDALAB_REQUIRE_DEVICE_MEMORY(3 * n * sizeof(int) + ws_bytes + (std::size_t{1} << 30));
  DeviceBuffer<int> in(n), out(n), copy(n);
  DeviceBuffer<unsigned char> ws(ws_bytes);
  fill_uniform_device(in.data(), n, Rng().seed(), -1000, 1000);
  cudaEvent_t t0 = nullptr, t1 = nullptr;
  CUDALAB_CHECK(cudaEventCreate(&t0));
  CUDALAB_CHECK(cudaEventCreate(&t1));
  auto time_ms = [&](auto&& op) {
    CUDALAB_CHECK(cudaEventRecord(t0));
    op();
    CUDALAB_CHECK(cudaEventRecord(t1));
    CUDALAB_CHECK(cudaEventSynchronize(t1));
    float ms = 0;
    CUDALAB_CHECK(cudaEventElapsedTime(&ms, t0, t1));
    return static_cast<double>(ms);
  };
  auto scan = [&] {
    ch05::scan(in.data(), out.data(), n, ScanKind::kInclusive, ws.data(), ws.bytes(),
               ScanVariant::kDecoupledLookback);
  };
  auto memcpy_ = [&] {
    CUDALAB_CHECK(
        cudaMemcpyAsync(copy.data(), in.data(), n * sizeof(int), cudaMemcpyDeviceToDevice));
  };
  scan();  // warm-up (first launch, module load)
  memcpy_();
  double best_scan = 1e30, best_copy = 1e30;
  for (int rep = 0; rep < 10; ++rep) {
    best_scan = std::min(best_scan, time_ms(scan));
    best_copy = std::min(best_copy, time_ms(memcpy_));
  }
  CUDALAB_CHECK(cudaEventDestroy(t0));
  CUDALAB_CHECK(cudaEventDestroy(t1));
  EXPECT_LE(best_scan, 8.0 * best_copy)
      << "scan decoupled_lookback (exercise 5.4, n = 2^28 ints) took " << best_scan
      << " ms, a device copy of the "
      << "same bytes " << best_copy << " ms (ratio " << best_scan / best_copy
      << ", allowed 8): is the look-back "
      << "a chain (each tile waiting for its predecessor's inclusive prefix)? Use the aggregates "
         "(flag A) of the "
      << "window and stop at the nearest P.";
}

// The float checks themselves (CPU): the inputs of rule (1) keep every partial sum exact, and the
// two wrong answers that the old global tolerance let through fail: an all-zero output, and a
// look-back whose running prefix was an int (each tile's prefix truncated toward zero).
TEST(ScanChecks, FloatChecksCatchZeroAndTruncatedPrefixes) {
  for (const std::size_t n :
       {std::size_t{1}, std::size_t{4097}, std::size_t{1'048'583}, (std::size_t{1} << 23) + 3}) {
    Rng rng;
    const std::vector<float> x = ch05_testing::exact_float_inputs(rng, n);
    double sum_abs = 0;
    for (float e : x) {
      ASSERT_EQ(e * 16.0f, std::trunc(e * 16.0f)) << "not a multiple of 1/16: " << e;
      sum_abs += std::fabs(e);
    }
    EXPECT_LT(sum_abs, 1048576.0) << "n = " << n << ": sum|x| must stay below 2^20";
  }
  Rng rng;
  const std::size_t n = 5 * ch05::kLookbackTile + 7;
  const std::vector<float> x = ch05_testing::exact_float_inputs(rng, n);
  const std::vector<float> want = ch05_testing::scan_oracle(x, ScanKind::kInclusive, n);
  // Truncated: every tile adds trunc(prefix of the tiles before it) instead of the prefix.
  std::vector<float> truncated(n);
  double prefix = 0, local = 0;
  for (std::size_t i = 0; i < n; ++i) {
    if (i % ch05::kLookbackTile == 0)
      prefix = (i == 0 ? 0.0 : static_cast<double>(want[i - 1])), local = 0;
    local += x[i];
    truncated[i] = static_cast<float>(std::trunc(prefix) + local);
  }
  EXPECT_FALSE(compare(truncated, want).ok()) << "a truncated prefix must fail the exact check";
  EXPECT_FALSE(compare(std::vector<float>(n, 0.0f), want).ok())
      << "an all-zero output must fail the exact check";
  // Rule (2), the per-element bound, on an input it is used for (reals with a positive mean).
  const std::vector<float> r = rng.uniform<float>(100'000, -0.5f, 1.0f);
  EXPECT_FALSE(ch05_testing::scan_within_bound(std::vector<float>(r.size(), 0.0f), r,
                                               ScanKind::kInclusive, r.size(), "all zero"));
  const std::vector<float> exact = ch05_testing::scan_oracle(r, ScanKind::kInclusive, r.size());
  EXPECT_TRUE(ch05_testing::scan_within_bound(exact, r, ScanKind::kInclusive, r.size(),
                                              "the oracle itself"));
  std::vector<float> fraction_dropped(exact);
  for (std::size_t i = ch05::kLookbackTile; i < fraction_dropped.size(); ++i)
    fraction_dropped[i] = static_cast<float>(std::trunc(exact[i]));  // the fraction dropped
  EXPECT_FALSE(ch05_testing::scan_within_bound(fraction_dropped, r, ScanKind::kInclusive, r.size(),
                                               "truncated"));
}

TEST(ScanEmptyGpu, ZeroElementsWriteNothing) {
  CUDALAB_REQUIRE_GPU();
  DeviceBuffer<unsigned char> ws(ch05::scan_workspace_bytes(0));
  for (ScanVariant v : ch05::kAllScanVariants) {
    cudalab::testing::GuardedOutput<int> out(0);
    ch05::scan(static_cast<const int*>(nullptr), out.data(), 0, ScanKind::kInclusive, ws.data(),
               ws.bytes(), v);
    CUDALAB_CHECK(cudaDeviceSynchronize());
    (void)out.result();
    EXPECT_TRUE(out.guard_intact()) << ch05::to_string(v);
  }
}

TEST(ScanArgs, RejectsBadArguments) {
  const std::size_t ws = ch05::scan_workspace_bytes(100'000);
  EXPECT_GE(ws, ch05::scan_workspace_bytes(1000));
  EXPECT_THROW(ch05::scan(static_cast<const int*>(nullptr), nullptr, 100'000, ScanKind::kInclusive,
                          nullptr, ws - 1),
               std::invalid_argument);
  EXPECT_THROW(ch05::scan(static_cast<const float*>(nullptr), nullptr, 10, static_cast<ScanKind>(5),
                          nullptr, ws),
               std::invalid_argument);
  EXPECT_THROW(ch05::scan(static_cast<const int*>(nullptr), nullptr, 10, ScanKind::kInclusive,
                          nullptr, ws, static_cast<ScanVariant>(9)),
               std::invalid_argument);
  EXPECT_THROW(
      ch05::scan(static_cast<const int*>(nullptr), nullptr, 10, ScanKind::kInclusive, nullptr, ws),
      std::invalid_argument);
  for (ScanVariant v : ch05::kAllScanVariants) EXPECT_STRNE(ch05::to_string(v), "unknown");
}
