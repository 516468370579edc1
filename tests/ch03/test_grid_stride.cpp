// Exercise 3.4 — grid-stride vector add, scalar and float4, on aligned and misaligned pointers and
// on sizes that are not multiples of 4 (the vector tail) or of the grid.
#include <gtest/gtest.h>

#include <cstdint>
#include <string>
#include <tuple>
#include <vector>

#include "ch03/ch03.hpp"
#include "cudalab/device_fill.hpp"
#include "cudalab/random.hpp"
#include "cudalab/testing.hpp"

using namespace cudalab;
using ch03::StrideVariant;

namespace {
using Param = std::tuple<StrideVariant, std::size_t, std::size_t>;  // variant, n, offset (floats)
std::string param_name(const ::testing::TestParamInfo<Param>& p) {
  const auto [v, n, off] = p.param;
  return std::string(v == StrideVariant::kScalar ? "scalar" : "float4") + "_n_" +
         std::to_string(n) + "_offset_" + std::to_string(off);
}
}  // namespace

class GridStrideGpu : public ::testing::TestWithParam<Param> {};

TEST_P(GridStrideGpu, MatchesOracle) {
  CUDALAB_REQUIRE_GPU();
  const auto [variant, n, offset] = GetParam();
  Rng rng;
  const auto a = rng.uniform<float>(n + offset, -4.0f, 4.0f),
             b = rng.uniform<float>(n + offset, -4.0f, 4.0f);
  auto da = to_device(a), db = to_device(b);
  cudalab::testing::GuardedOutput<float> c(n + offset);
  // offset = 1 shifts every pointer by 4 bytes: no longer 16-byte aligned.
  ch03::vector_add_grid_stride(da.data() + offset, db.data() + offset, c.data() + offset, n,
                               variant);
  CUDALAB_CHECK(cudaDeviceSynchronize());
  const std::vector<float> all = c.result();
  const std::vector<float> got(all.begin() + static_cast<std::ptrdiff_t>(offset), all.end());
  std::vector<float> want(n);
  for (std::size_t i = 0; i < n; ++i) want[i] = a[i + offset] + b[i + offset];
  EXPECT_MATCHES(compare(
      got, want, {}, "vector_add_grid_stride (exercise 3.4, " + param_name({GetParam(), 0}) + ")"));
  EXPECT_TRUE(c.guard_intact());
  // With offset 1, c[0] sits in front of the output: nothing may write it.
  EXPECT_TRUE(c.untouched(
      0, offset, "vector_add_grid_stride (exercise 3.4, " + param_name({GetParam(), 0}) + ")"));
}

INSTANTIATE_TEST_SUITE_P(
    Variants, GridStrideGpu,
    ::testing::Combine(::testing::Values(StrideVariant::kScalar, StrideVariant::kFloat4),
                       ::testing::Values<std::size_t>(1, 3, 4, 5, 1000, 1001, 1003, 4'000'037),
                       ::testing::Values<std::size_t>(0, 1)),
    param_name);

// The stream contract (cudalab/testing.hpp, replay_from_capture): all the work of both variants on
// the caller's stream. A launch without the stream argument runs while the call is recorded, not
// in the replay, which then leaves c poisoned.
class GridStrideStreamGpu : public ::testing::TestWithParam<StrideVariant> {};

TEST_P(GridStrideStreamGpu, AllWorkOnTheCallersStream) {
  CUDALAB_REQUIRE_GPU();
  const StrideVariant variant = GetParam();
  const std::size_t n = 1003;
  Rng rng;
  const auto a = rng.uniform<float>(n, -4.0f, 4.0f), b = rng.uniform<float>(n, -4.0f, 4.0f);
  auto da = to_device(a), db = to_device(b);
  cudalab::testing::GuardedOutput<float> c(n);
  cudalab::testing::replay_from_capture(
      [&](cudaStream_t s) {
        ch03::vector_add_grid_stride(da.data(), db.data(), c.data(), n, variant, s);
      },
      [&] { c.repoison(); });
  std::vector<float> want(n);
  for (std::size_t i = 0; i < n; ++i) want[i] = a[i] + b[i];
  EXPECT_MATCHES(compare(c.result(), want, {},
                         std::string("vector_add_grid_stride (exercise 3.4, ") +
                             (variant == StrideVariant::kScalar ? "scalar" : "float4") +
                             ") replayed from a capture of its stream"));
}

INSTANTIATE_TEST_SUITE_P(Variants, GridStrideStreamGpu,
                         ::testing::Values(StrideVariant::kScalar, StrideVariant::kFloat4),
                         [](const auto& p) {
                           return std::string(p.param == StrideVariant::kScalar ? "scalar"
                                                                                : "float4");
                         });

// Each pointer on its own alignment: a, b and c each at +0 or +1 float (a +1 view of a larger
// allocation is 4-byte aligned, not 16). The float4 path may be taken only when all three allow
// it; a choice made on the inputs alone stores 16 bytes to a misaligned c (a misaligned-address
// fault), one made on c alone loads from a misaligned input. The scalar variant must not care.
using MixedParam =
    std::tuple<StrideVariant, std::size_t, std::size_t, std::size_t>;  // a, b, c offsets
std::string mixed_name(const ::testing::TestParamInfo<MixedParam>& p) {
  const auto [v, oa, ob, oc] = p.param;
  return std::string(v == StrideVariant::kScalar ? "scalar" : "float4") + "_a" +
         std::to_string(oa) + "_b" + std::to_string(ob) + "_c" + std::to_string(oc);
}
class GridStrideAlignmentGpu : public ::testing::TestWithParam<MixedParam> {};

TEST_P(GridStrideAlignmentGpu, EveryPointerOnItsOwnAlignment) {
  CUDALAB_REQUIRE_GPU();
  const auto [variant, oa, ob, oc] = GetParam();
  const std::size_t n = 4099;
  Rng rng;
  const auto a = rng.uniform<float>(n, -4.0f, 4.0f), b = rng.uniform<float>(n, -4.0f, 4.0f);
  const cudalab::testing::GuardedInput<float> da(a, oa), db(b, ob);
  cudalab::testing::GuardedOutput<float> c(n + oc);
  ch03::vector_add_grid_stride(da.data(), db.data(), c.data() + oc, n, variant);
  CUDALAB_CHECK(cudaDeviceSynchronize());
  const std::vector<float> all = c.result();
  const std::vector<float> got(all.begin() + static_cast<std::ptrdiff_t>(oc), all.end());
  std::vector<float> want(n);
  for (std::size_t i = 0; i < n; ++i) want[i] = a[i] + b[i];
  const std::string what = std::string("vector_add_grid_stride ") +
                           (variant == StrideVariant::kScalar ? "scalar" : "float4") +
                           " (exercise 3.4, n = 4099, offsets a +" + std::to_string(oa) + " b +" +
                           std::to_string(ob) + " c +" + std::to_string(oc) + " floats)";
  EXPECT_MATCHES(compare(got, want, {}, what));
  EXPECT_TRUE(c.guard_intact()) << what;
  EXPECT_TRUE(c.untouched(0, oc, what));
}

INSTANTIATE_TEST_SUITE_P(
    Offsets, GridStrideAlignmentGpu,
    ::testing::Combine(::testing::Values(StrideVariant::kScalar, StrideVariant::kFloat4),
                       ::testing::Values<std::size_t>(0, 1), ::testing::Values<std::size_t>(0, 1),
                       ::testing::Values<std::size_t>(0, 1)),
    mixed_name);

// n = 2^31 + 4099 floats (25.8 GB), both variants: the loop index (and the float4 index times 4)
// must be 64-bit; a loop on an int index stops (or wraps) at 2^31 and leaves the rest poisoned.
// Checked on the device (c[i] == a[i] + b[i]). Cost on an H200: ~2 x (9 + 26 + 26) GB + 17 GB of
// fill = ~140 GB, ~35 ms of GPU time, plus allocation.
TEST(GridStrideLargeGpu, PastTwoToThe31Elements) {
  const std::size_t n = (std::size_t{1} << 31) + 4099;
  CUDALAB_REQUIRE_DEVICE_MEMORY(3 * n * sizeof(float) + (std::size_t{1} << 30));
  const std::uint64_t seed = Rng().seed();
  DeviceBuffer<float> a(n), b(n), c(n);
  fill_uniform_device(a.data(), n, seed, -4.0f, 4.0f);
  fill_uniform_device(b.data(), n, seed + 1, -4.0f, 4.0f);
  for (const StrideVariant v : {StrideVariant::kScalar, StrideVariant::kFloat4}) {
    poison_device(c.data(), c.bytes());
    ch03::vector_add_grid_stride(a.data(), b.data(), c.data(), n, v);
    CUDALAB_CHECK(cudaDeviceSynchronize());
    EXPECT_TRUE(cudalab::testing::device_matches(
        cudalab::testing::check_sum(a.data(), b.data(), c.data(), n),
        std::string("vector_add_grid_stride ") +
            (v == StrideVariant::kScalar ? "scalar" : "float4") +
            " (exercise 3.4, n = 2^31 + 4099)"));
  }
}

TEST(GridStrideArgs, RejectsNullAndUnknownVariant) {
  EXPECT_THROW(ch03::vector_add_grid_stride(nullptr, nullptr, nullptr, 5), std::invalid_argument);
  EXPECT_NO_THROW(ch03::vector_add_grid_stride(nullptr, nullptr, nullptr, 0));
  EXPECT_THROW(
      ch03::vector_add_grid_stride(nullptr, nullptr, nullptr, 0, static_cast<StrideVariant>(9)),
      std::invalid_argument);
}
