// Exercise 5.3 — block-level scans (Kogge-Stone, Brent-Kung) tile by tile, and the multi-block
// scan-then-propagate built on them; int exact, float as described in reduce_scan_testing.hpp.
// Sizes: one element, a warp +- 1, one tile +- 1, many tiles with a partial last one, and enough
// tiles (> kScanTile) that the tile sums themselves need a second level of the recursion.
#include <gtest/gtest.h>

#include <string>
#include <tuple>

#include "ch05/scan.hpp"
#include "cudalab/memory.hpp"
#include "cudalab/testing.hpp"
#include "reduce_scan_testing.hpp"

using namespace cudalab;
using ch05::BlockScanAlgo;
using ch05::ScanKind;
using ch05::ScanVariant;

namespace {

const char* kind_name(ScanKind k) { return k == ScanKind::kInclusive ? "inclusive" : "exclusive"; }
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
void check_device_scan(ScanVariant v, ScanKind kind, std::size_t n, std::size_t offset, const char* type) {
  DeviceBuffer<unsigned char> ws(ch05::scan_workspace_bytes(n));
  const std::string what = std::string("scan<") + type + "> " + ch05::to_string(v) + " (" +
                           (v == ScanVariant::kKoggeStone ? "exercise 5.3" : "worked example") + ")";
  ch05_testing::check_scan<T>([&](const T* in, T* out) { ch05::scan(in, out, n, kind, ws.data(), ws.bytes(), v); },
                              n, kind, n, offset, what);
}

}  // namespace

class TileScanGpu : public ::testing::TestWithParam<TileParam> {};

TEST_P(TileScanGpu, EachTileScannedOnItsOwn) {
  CUDALAB_REQUIRE_GPU();
  const auto [algo, kind, n] = GetParam();
  const std::string what = std::string("tile_scan ") + ch05::to_string(algo) + " (" + exercise_of(algo) +
                           ", tiles of " + std::to_string(ch05::kScanTile) + ")";
  ch05_testing::check_scan<int>([&](const int* in, int* out) { ch05::tile_scan(in, out, n, algo, kind); }, n, kind,
                                ch05::kScanTile, 0, what + " <int>");
  ch05_testing::check_scan<float>([&](const float* in, float* out) { ch05::tile_scan(in, out, n, algo, kind); }, n,
                                  kind, ch05::kScanTile, 0, what + " <float>");
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

TEST(TileScanArgs, RejectsBadArguments) {
  EXPECT_THROW(ch05::tile_scan(static_cast<const int*>(nullptr), nullptr, 10, BlockScanAlgo::kKoggeStone,
                               ScanKind::kInclusive),
               std::invalid_argument);
  EXPECT_NO_THROW(ch05::tile_scan(static_cast<const int*>(nullptr), nullptr, 0, BlockScanAlgo::kBrentKung,
                                  ScanKind::kExclusive));
  EXPECT_THROW(ch05::tile_scan(static_cast<const float*>(nullptr), nullptr, 0, static_cast<BlockScanAlgo>(7),
                               ScanKind::kInclusive),
               std::invalid_argument);
  EXPECT_STREQ(ch05::to_string(BlockScanAlgo::kKoggeStone), "kogge_stone");
}
