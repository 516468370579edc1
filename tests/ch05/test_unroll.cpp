// Exercise 5.6 — the SAXPY unrolling ladder: every variant computes the same y, and ptxas's
// register/local-memory report (cudaFuncGetAttributes) shows what unrolling costs.
#include <gtest/gtest.h>

#include <cmath>
#include <span>
#include <string>
#include <tuple>
#include <vector>

#include "ch05/unroll.hpp"
#include "cudalab/random.hpp"
#include "cudalab/testing.hpp"

using namespace cudalab;

namespace {

const std::vector<std::size_t> kSizes{
    1, 3, 4, 5, 31, 32, 33, 255, 2047, 2048, 2049, 4099, (1u << 20) + 7};
const std::vector<ch05::UnrollVariant> kVariants{
    ch05::UnrollVariant::kRolled, ch05::UnrollVariant::kUnrolled,
    ch05::UnrollVariant::kUnrolledRestrict, ch05::UnrollVariant::kVectorized};

std::string param_name(
    const ::testing::TestParamInfo<std::tuple<ch05::UnrollVariant, std::size_t>>& p) {
  return std::string(ch05::to_string(std::get<0>(p.param))) + "_n_" +
         std::to_string(std::get<1>(p.param));
}

// y = a x + y, one float rounding per element (FMA) or two (mul then add): |error| <=
// 2 x 2^-24 x (|a x| + |y|) <= 2^-23 x 3 for |a| <= 2, |x|, |y| <= 1. Tolerance 4e-7 absolute.
constexpr double kTol = 4e-7;

// x at +x_offset and y at +offset elements of their allocations (x_offset = offset unless given).
void check_saxpy(ch05::UnrollVariant v, std::size_t n, std::size_t offset,
                 std::size_t x_offset = static_cast<std::size_t>(-1)) {
  if (x_offset == static_cast<std::size_t>(-1)) x_offset = offset;
  Rng rng;
  const float a = rng.scalar(-2.0f, 2.0f);
  const auto x = rng.uniform<float>(n + x_offset, -1.0f, 1.0f);
  const auto y0 = rng.uniform<float>(n + offset, -1.0f, 1.0f);
  auto dx = to_device(x);
  // y behind `offset` poisoned elements (a write before y[0] shows) and before a poisoned guard
  // zone (a write past y[n - 1] shows: a vector tail that runs over).
  std::vector<float> init(y0);
  cudalab::poison(std::span<float>(init.data(), offset));
  cudalab::testing::GuardedOutput<float> dy(n + offset, std::span<const float>(init));
  ch05::saxpy_unrolled(a, dx.data() + x_offset, dy.data() + offset, n, v);
  CUDALAB_CHECK(cudaDeviceSynchronize());
  const auto all = dy.result();
  const std::vector<float> got(all.begin() + static_cast<std::ptrdiff_t>(offset), all.end());
  std::vector<float> want(n);
  for (std::size_t i = 0; i < n; ++i)
    want[i] = static_cast<float>(double{a} * x[i + x_offset] + y0[i + offset]);
  const std::string what = std::string("saxpy_unrolled ") + ch05::to_string(v) +
                           " (exercise 5.6, n = " + std::to_string(n) + ", x offset " +
                           std::to_string(x_offset) + ", y offset " + std::to_string(offset) + ")";
  EXPECT_MATCHES(compare(got, want, {kTol, 0}, what));
  EXPECT_TRUE(dy.guard_intact()) << what;
  EXPECT_TRUE(dy.untouched(0, offset, what));
}

}  // namespace

// The stream contract (cudalab/testing.hpp, replay_from_capture): every variant's kernels on the
// caller's stream; y is restored before each call; the replay of a capture must give a plain call's
// bits.
TEST(SaxpyUnrolledStreamGpu, AllWorkOnTheCallersStream) {
  CUDALAB_REQUIRE_GPU();
  const std::size_t n = 4099;
  Rng rng;
  const auto y0 = rng.uniform<float>(n, -1.0f, 1.0f);
  auto dx = to_device(rng.uniform<float>(n, -1.0f, 1.0f));
  cudalab::testing::GuardedOutput<float> dy(n);
  for (const auto v : {ch05::UnrollVariant::kRolled, ch05::UnrollVariant::kUnrolled,
                       ch05::UnrollVariant::kUnrolledRestrict, ch05::UnrollVariant::kVectorized})
    EXPECT_TRUE(cudalab::testing::replay_matches_plain_call(
        [&](cudaStream_t s) { ch05::saxpy_unrolled(1.5f, dx.data(), dy.data(), n, v, s); }, dy,
        std::string("saxpy_unrolled ") + ch05::to_string(v) + " (exercise 5.6)",
        [&] {
          CUDALAB_CHECK(
              cudaMemcpy(dy.data(), y0.data(), n * sizeof(float), cudaMemcpyHostToDevice));
        }));
}

class SaxpyUnrolledGpu
    : public ::testing::TestWithParam<std::tuple<ch05::UnrollVariant, std::size_t>> {};

TEST_P(SaxpyUnrolledGpu, MatchesOracle) {
  CUDALAB_REQUIRE_GPU();
  const auto [v, n] = GetParam();
  check_saxpy(v, n, 0);
}

// A pointer one float past a cudaMalloc base is not 16-byte aligned: kVectorized must fall back.
TEST_P(SaxpyUnrolledGpu, MisalignedPointersStillWork) {
  CUDALAB_REQUIRE_GPU();
  const auto [v, n] = GetParam();
  check_saxpy(v, n, 1);
}

// x and y on different alignments (one aligned, the other a +1 view): the float4 path needs both.
TEST_P(SaxpyUnrolledGpu, MixedAlignmentStillWorks) {
  CUDALAB_REQUIRE_GPU();
  const auto [v, n] = GetParam();
  check_saxpy(v, n, /*y offset*/ 1, /*x offset*/ 0);
  check_saxpy(v, n, /*y offset*/ 0, /*x offset*/ 1);
}

INSTANTIATE_TEST_SUITE_P(Variants, SaxpyUnrolledGpu,
                         ::testing::Combine(::testing::ValuesIn(kVariants),
                                            ::testing::ValuesIn(kSizes)),
                         param_name);

TEST(SaxpyUnrolledResourcesGpu, UnrollingTradesRegistersForLoadsInFlight) {
  CUDALAB_REQUIRE_GPU();
  const auto rolled = ch05::saxpy_unrolled_resources(ch05::UnrollVariant::kRolled);
  const auto restrict_ = ch05::saxpy_unrolled_resources(ch05::UnrollVariant::kUnrolledRestrict);
  // With __restrict__ the 2 x kUnrollItems loaded values are live at once (ptxas on sm_90: 28
  // registers against 14 for the rolled loop); without spilling.
  EXPECT_GT(restrict_.num_regs, rolled.num_regs)
      << "rolled " << rolled.num_regs << " registers, unrolled+restrict " << restrict_.num_regs;
  for (const auto v : kVariants) {
    const auto r = ch05::saxpy_unrolled_resources(v);
    EXPECT_EQ(r.local_bytes, 0u) << ch05::to_string(v) << " spills to local memory";
    EXPECT_GE(r.max_threads_per_block, ch05::kUnrollBlock) << ch05::to_string(v);
    EXPECT_GT(r.num_regs, 0);
  }
}

TEST(SaxpyUnrolledArgs, RejectsBadArguments) {
  EXPECT_THROW(ch05::saxpy_unrolled(1.0f, nullptr, nullptr, 10, ch05::UnrollVariant::kRolled),
               std::invalid_argument);
  EXPECT_THROW(ch05::saxpy_unrolled(1.0f, nullptr, nullptr, 0, static_cast<ch05::UnrollVariant>(7)),
               std::invalid_argument);
  EXPECT_NO_THROW(
      ch05::saxpy_unrolled(1.0f, nullptr, nullptr, 0, ch05::UnrollVariant::kVectorized));
  EXPECT_STREQ(ch05::to_string(ch05::UnrollVariant::kVectorized), "vectorized_float4");
}
