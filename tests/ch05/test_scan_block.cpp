// Exercise 5.3 — block-level scans (Kogge-Stone, Brent-Kung) tile by tile, and the multi-block
// scan-then-propagate built on them; int exact, float as described in reduce_scan_testing.hpp.
// Sizes: one element, a warp +- 1, one tile +- 1, many tiles with a partial last one, and enough
// tiles (> kScanTile) that the tile sums themselves need a second level of the recursion.
#include <gtest/gtest.h>

#include <string>
#include <tuple>

#include "ch05/scan.hpp"
#include "cudalab/device_fill.hpp"
#include "cudalab/memory.hpp"
#include "cudalab/testing.hpp"
#include "reduce_scan_testing.hpp"

using namespace cudalab;
using ch05::BlockScanAlgo;
using ch05::ScanKind;
using ch05::ScanVariant;

namespace {

const char* kind_name(ScanKind k) {
  return k == ScanKind::kInclusive ? "inclusive" : "exclusive";
}
std::string exercise_of(BlockScanAlgo a) {
  return a == BlockScanAlgo::kKoggeStone ? "exercise 5.3" : "worked example";
}

using TileParam = std::tuple<BlockScanAlgo, ScanKind, std::size_t>;
std::string tile_name(const ::testing::TestParamInfo<TileParam>& p) {
  const auto [a, k, n] = p.param;
  return std::string(ch05::to_string(a)) + "_" + kind_name(k) + "_n_" + std::to_string(n);
}

using DeviceParam = std::tuple<ScanVariant, ScanKind, std::size_t>;
std::string device_name(const ::testing::TestParamInfo<DeviceParam>& p) {
  const auto [v, k, n] = p.param;
  return std::string(ch05::to_string(v)) + "_" + kind_name(k) + "_n_" + std::to_string(n);
}

template <class T>
void check_device_scan(ScanVariant v, ScanKind kind, std::size_t n, std::size_t offset,
                       const char* type) {
  DeviceBuffer<unsigned char> ws(ch05::scan_workspace_bytes(n));
  const std::string what = std::string("scan<") + type + "> " + ch05::to_string(v) + " (" +
                           (v == ScanVariant::kKoggeStone ? "exercise 5.3" : "worked example") +
                           ")";
  ch05_testing::check_scan<T>(
      [&](const T* in, T* out) { ch05::scan(in, out, n, kind, ws.data(), ws.bytes(), v); }, n, kind,
      n, offset, what);
}

}  // namespace

class TileScanGpu : public ::testing::TestWithParam<TileParam> {};

TEST_P(TileScanGpu, EachTileScannedOnItsOwn) {
  CUDALAB_REQUIRE_GPU();
  const auto [algo, kind, n] = GetParam();
  const std::string what = std::string("tile_scan ") + ch05::to_string(algo) + " (" +
                           exercise_of(algo) + ", tiles of " + std::to_string(ch05::kScanTile) +
                           ")";
  ch05_testing::check_scan<int>(
      [&](const int* in, int* out) { ch05::tile_scan(in, out, n, algo, kind); }, n, kind,
      ch05::kScanTile, 0, what + " <int>");
  ch05_testing::check_scan<float>(
      [&](const float* in, float* out) { ch05::tile_scan(in, out, n, algo, kind); }, n, kind,
      ch05::kScanTile, 0, what + " <float>");
}

INSTANTIATE_TEST_SUITE_P(
    Algos, TileScanGpu,
    ::testing::Combine(::testing::Values(BlockScanAlgo::kKoggeStone, BlockScanAlgo::kBrentKung),
                       ::testing::Values(ScanKind::kInclusive, ScanKind::kExclusive),
                       ::testing::Values<std::size_t>(1, 31, 33, 511, 512, 513, 5000)),
    tile_name);

class ScanThenPropagateGpu : public ::testing::TestWithParam<DeviceParam> {};

TEST_P(ScanThenPropagateGpu, Int) {
  CUDALAB_REQUIRE_GPU();
  const auto [v, kind, n] = GetParam();
  check_device_scan<int>(v, kind, n, 0, "int");
}
TEST_P(ScanThenPropagateGpu, Float) {
  CUDALAB_REQUIRE_GPU();
  const auto [v, kind, n] = GetParam();
  check_device_scan<float>(v, kind, n, 0, "float");
}

INSTANTIATE_TEST_SUITE_P(
    Variants, ScanThenPropagateGpu,
    ::testing::Combine(::testing::Values(ScanVariant::kKoggeStone, ScanVariant::kBrentKung),
                       ::testing::Values(ScanKind::kInclusive, ScanKind::kExclusive),
                       // 262'657 = 513 tiles + 1: the tile sums need a second level.
                       ::testing::Values<std::size_t>(1, 33, 513, 1025, 262'657, 3'000'017)),
    device_name);

// n = 2^31 + 5 ints (in + out: 17.2 GB; 4.2 million tiles, so the tile sums recurse twice):
// scan-then-propagate on both tile scans, inclusive and exclusive, checked exactly on the device
// (out[i] - out[i - 1] == in[i], or in[i - 1], 32-bit wrap-around). A 32-bit index breaks past
// 2^31. Cost on an H200: fill 8.6 GB, then 4 scans x ~35 GB and 4 checks x ~26 GB: ~250 GB,
// ~70 ms of GPU time, plus allocation.
TEST(ScanThenPropagateLargeGpu, PastTwoToThe31) {
  const std::size_t n = (std::size_t{1} << 31) + 5;
  const std::size_t ws_bytes = ch05::scan_workspace_bytes(n);
  CUDALAB_REQUIRE_DEVICE_MEMORY(2 * n * sizeof(int) + ws_bytes + (std::size_t{1} << 30));
  DeviceBuffer<int> in(n), out(n);
  DeviceBuffer<unsigned char> ws(ws_bytes);
  fill_uniform_device(in.data(), n, Rng().seed(), -1000, 1000);
  for (ScanVariant v : {ScanVariant::kKoggeStone, ScanVariant::kBrentKung})
    for (ScanKind kind : {ScanKind::kInclusive, ScanKind::kExclusive}) {
      poison_device(out.data(), out.bytes());
      ch05::scan(in.data(), out.data(), n, kind, ws.data(), ws.bytes(), v);
      CUDALAB_CHECK(cudaDeviceSynchronize());
      EXPECT_TRUE(cudalab::testing::device_matches(
          cudalab::testing::check_int_scan(in.data(), out.data(), n, kind == ScanKind::kInclusive),
          std::string("scan<int> ") + ch05::to_string(v) + " (" +
              (v == ScanVariant::kKoggeStone ? "exercise 5.3" : "worked example") + ", " +
              kind_name(kind) + ", n = 2^31 + 5)"));
    }
}

// n = 2^32 + 5 ints, Kogge-Stone: a tile's first element computed as a 32-bit product
// (blockIdx.x * 512) wraps past 2^32, so the last tiles rescan the first ones.
TEST(ScanThenPropagateLargeGpu, PastTwoToThe32) {
  ch05_testing::expect_int_scan_past_2_to_32(ScanVariant::kKoggeStone,
                                             "kogge_stone (exercise 5.3)");
}

TEST(TileScanArgs, RejectsBadArguments) {
  EXPECT_THROW(ch05::tile_scan(static_cast<const int*>(nullptr), nullptr, 10,
                               BlockScanAlgo::kKoggeStone, ScanKind::kInclusive),
               std::invalid_argument);
  EXPECT_NO_THROW(ch05::tile_scan(static_cast<const int*>(nullptr), nullptr, 0,
                                  BlockScanAlgo::kBrentKung, ScanKind::kExclusive));
  EXPECT_THROW(ch05::tile_scan(static_cast<const float*>(nullptr), nullptr, 0,
                               static_cast<BlockScanAlgo>(7), ScanKind::kInclusive),
               std::invalid_argument);
  EXPECT_STREQ(ch05::to_string(BlockScanAlgo::kKoggeStone), "kogge_stone");
}
