// Exercise 5.4 — the single-pass decoupled look-back scan: int exact, float as described in
// reduce_scan_testing.hpp; partial last tiles, misaligned pointers (the scalar path), many
// tiles (several waves of blocks, so look-backs meet predecessors in every state), n = 0, and
// the argument checks of the device-wide scan API.
#include <gtest/gtest.h>

#include <string>
#include <tuple>

#include "ch05/scan.hpp"
#include "cudalab/memory.hpp"
#include "cudalab/testing.hpp"
#include "reduce_scan_testing.hpp"

using namespace cudalab;
using ch05::ScanKind;
using ch05::ScanVariant;

namespace {

using Param = std::tuple<ScanKind, std::size_t, std::size_t>;  // kind, n, offset
std::string param_name(const ::testing::TestParamInfo<Param>& p) {
  const auto [k, n, off] = p.param;
  return std::string(k == ScanKind::kInclusive ? "inclusive" : "exclusive") + "_n_" + std::to_string(n) +
         "_offset_" + std::to_string(off);
}

template <class T>
void check_lookback(ScanKind kind, std::size_t n, std::size_t offset, const char* type) {
  DeviceBuffer<unsigned char> ws(ch05::scan_workspace_bytes(n));
  CUDALAB_CHECK(cudaMemset(ws.data(), 0xAB, ws.bytes()));  // the scan must not rely on a clean workspace
  const std::string what = std::string("scan<") + type + "> decoupled_lookback (exercise 5.4)";
  for (int call = 0; call < 2; ++call)  // twice on one workspace: the per-call reset works
    ch05_testing::check_scan<T>(
        [&](const T* in, T* out) {
          ch05::scan(in, out, n, kind, ws.data(), ws.bytes(), ScanVariant::kDecoupledLookback);
        },
        n, kind, n, offset, what + (call == 0 ? "" : ", second call"));
}

}  // namespace

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
                       // a warp +- 1, a tile (4096) +- 1, 2 tiles + 1, ~256 tiles with a partial last one
                       ::testing::Values<std::size_t>(1, 31, 33, 4095, 4096, 4097, 8193, 1'048'583),
                       ::testing::Values<std::size_t>(0)),
    param_name);
// Misaligned by 4 bytes: the kernel falls back to scalar loads and stores.
INSTANTIATE_TEST_SUITE_P(Misaligned, LookbackScanGpu,
                         ::testing::Combine(::testing::Values(ScanKind::kInclusive, ScanKind::kExclusive),
                                            ::testing::Values<std::size_t>(5, 100'003), ::testing::Values<std::size_t>(1)),
                         param_name);

// 2^23 + 3 elements: 2049 tiles, about two waves of resident blocks on an H200: look-backs
// find predecessors that are still X, already A, or already P, and windows that move further back.
TEST(LookbackScanLargeGpu, ManyWavesOfTiles) {
  CUDALAB_REQUIRE_GPU();
  const std::size_t n = (std::size_t{1} << 23) + 3;
  check_lookback<int>(ScanKind::kInclusive, n, 0, "int");
  check_lookback<float>(ScanKind::kExclusive, n, 0, "float");
}

TEST(ScanEmptyGpu, ZeroElementsWriteNothing) {
  CUDALAB_REQUIRE_GPU();
  DeviceBuffer<unsigned char> ws(ch05::scan_workspace_bytes(0));
  for (ScanVariant v : ch05::kAllScanVariants) {
    cudalab::testing::GuardedOutput<int> out(0);
    ch05::scan(static_cast<const int*>(nullptr), out.data(), 0, ScanKind::kInclusive, ws.data(), ws.bytes(), v);
    CUDALAB_CHECK(cudaDeviceSynchronize());
    (void)out.result();
    EXPECT_TRUE(out.guard_intact()) << ch05::to_string(v);
  }
}

TEST(ScanArgs, RejectsBadArguments) {
  const std::size_t ws = ch05::scan_workspace_bytes(100'000);
  EXPECT_GE(ws, ch05::scan_workspace_bytes(1000));
  EXPECT_THROW(ch05::scan(static_cast<const int*>(nullptr), nullptr, 100'000, ScanKind::kInclusive, nullptr, ws - 1),
               std::invalid_argument);
  EXPECT_THROW(ch05::scan(static_cast<const float*>(nullptr), nullptr, 10, static_cast<ScanKind>(5), nullptr, ws),
               std::invalid_argument);
  EXPECT_THROW(ch05::scan(static_cast<const int*>(nullptr), nullptr, 10, ScanKind::kInclusive, nullptr, ws,
                          static_cast<ScanVariant>(9)),
               std::invalid_argument);
  EXPECT_THROW(ch05::scan(static_cast<const int*>(nullptr), nullptr, 10, ScanKind::kInclusive, nullptr, ws),
               std::invalid_argument);
  for (ScanVariant v : ch05::kAllScanVariants) EXPECT_STRNE(ch05::to_string(v), "unknown");
}
