// Exercise 3.3 — saxpy, including one size past 2^31 elements (the 32-bit index overflow).
#include <gtest/gtest.h>

#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "ch03/ch03.hpp"
#include "cudalab/device_fill.hpp"
#include "cudalab/random.hpp"
#include "cudalab/testing.hpp"

using namespace cudalab;

namespace {
// x, y, alpha all positive: no cancellation, so y = alpha * x + y is within 2 ulp whether the GPU
// fuses it into one FMA (one rounding) or not (two roundings): relative tolerance 2 * 2^-23.
constexpr Tolerance kTol{.abs = 0, .rel = 2.4e-7};
const std::vector<std::size_t> kSizes{1, 31, 33, 257, 1000, 65'537, (1u << 20) + 3};
std::string size_name(const ::testing::TestParamInfo<std::size_t>& p) {
  return "n_" + std::to_string(p.param);
}
}  // namespace

class SaxpyGpu : public ::testing::TestWithParam<std::size_t> {};

TEST_P(SaxpyGpu, MatchesOracle) {
  CUDALAB_REQUIRE_GPU();
  const std::size_t n = GetParam();
  Rng rng;
  const float alpha = rng.scalar(0.5f, 2.0f);
  const auto x = rng.uniform<float>(n, 0.5f, 1.5f), y = rng.uniform<float>(n, 0.5f, 1.5f);
  auto dx = to_device(x);
  cudalab::testing::GuardedOutput<float> dy(
      n, std::span<const float>(y));  // y, then a poisoned guard zone
  ch03::saxpy(alpha, dx.data(), dy.data(), n);
  CUDALAB_CHECK(cudaDeviceSynchronize());
  std::vector<float> want(n);
  for (std::size_t i = 0; i < n; ++i)
    want[i] = static_cast<float>(static_cast<double>(alpha) * x[i] + y[i]);
  EXPECT_MATCHES(
      compare(dy.result(), want, kTol, "saxpy (exercise 3.3, n = " + std::to_string(n) + ")"));
  EXPECT_TRUE(dy.guard_intact()) << "saxpy (exercise 3.3, n = " << n << ")";
}

INSTANTIATE_TEST_SUITE_P(Sizes, SaxpyGpu, ::testing::ValuesIn(kSizes), size_name);

// The stream contract (cudalab/testing.hpp, replay_from_capture): all the work on the caller's
// stream; the replay must compute y from the y restored after the capture.
TEST(SaxpyStreamGpu, AllWorkOnTheCallersStream) {
  CUDALAB_REQUIRE_GPU();
  const std::size_t n = 4097;
  Rng rng;
  const float alpha = rng.scalar(0.5f, 2.0f);
  const auto x = rng.uniform<float>(n, 0.5f, 1.5f), y = rng.uniform<float>(n, 0.5f, 1.5f);
  auto dx = to_device(x);
  cudalab::testing::GuardedOutput<float> dy(n, std::span<const float>(y));
  cudalab::testing::replay_from_capture(
      [&](cudaStream_t s) { ch03::saxpy(alpha, dx.data(), dy.data(), n, s); },
      [&] {
        dy.repoison();
        CUDALAB_CHECK(cudaMemcpy(dy.data(), y.data(), n * sizeof(float), cudaMemcpyHostToDevice));
      });
  std::vector<float> want(n);
  for (std::size_t i = 0; i < n; ++i)
    want[i] = static_cast<float>(static_cast<double>(alpha) * x[i] + y[i]);
  EXPECT_MATCHES(compare(dy.result(), want, kTol,
                         "saxpy replayed from a capture of its stream (exercise 3.3)"));
}

namespace {
// y = 1.25 x + y on n floats filled on the device (x in [0.5, 1.5] from seed, y from seed + 1),
// then check(y, n, seed, alpha) on the host (skipped without the memory).
template <class Check>
void large_saxpy(std::size_t n, Check check) {
  CUDALAB_REQUIRE_DEVICE_MEMORY(2 * n * sizeof(float) + (std::size_t{1} << 30));
  const std::uint64_t seed = Rng().seed();
  const float alpha = 1.25f;
  DeviceBuffer<float> x(n), y(n);
  fill_uniform_device(x.data(), n, seed, 0.5f, 1.5f);
  fill_uniform_device(y.data(), n, seed + 1, 0.5f, 1.5f);
  ch03::saxpy(alpha, x.data(), y.data(), n);
  CUDALAB_CHECK(cudaDeviceSynchronize());
  check(y, n, seed, alpha);
}
}  // namespace

// n = 2^31 + 4099 floats: 17 GB for x and y. Inputs are generated on the device (counter-based
// hash), and the host recomputes them to check the elements where a 32-bit index breaks.
TEST(SaxpyLargeGpu, PastTwoToThe31Elements) {
  large_saxpy((std::size_t{1} << 31) + 4099, [](const DeviceBuffer<float>& y, std::size_t n,
                                                std::uint64_t seed, float alpha) {
    // Windows: the start, both sides of 2^31, the end.
    for (const std::size_t start : {std::size_t{0}, (std::size_t{1} << 31) - 2048, n - 4096}) {
      const std::size_t len = 4096;
      std::vector<float> got(len), want(len);
      CUDALAB_CHECK(
          cudaMemcpy(got.data(), y.data() + start, len * sizeof(float), cudaMemcpyDeviceToHost));
      for (std::size_t k = 0; k < len; ++k) {
        const std::size_t i = start + k;
        want[k] = static_cast<float>(static_cast<double>(alpha) * uniform_at(seed, i, 0.5f, 1.5f) +
                                     uniform_at(seed + 1, i, 0.5f, 1.5f));
      }
      EXPECT_MATCHES(compare(got, want, kTol,
                             "saxpy (exercise 3.3, n = 2^31 + 4099), elements " +
                                 std::to_string(start) + ".." + std::to_string(start + len - 1)));
    }
  });
}

// n = 2^32 + 4099 floats (x, y: 34 GB): the index must be widened before the multiply; a 32-bit
// unsigned product passes every size below 2^32 and wraps past it (the elements from 2^32 on keep
// their input, the first ones are updated twice). Sampled elements against the double oracle.
TEST(SaxpyLargeGpu, PastTwoToThe32Elements) {
  large_saxpy((std::size_t{1} << 32) + 4099, [](const DeviceBuffer<float>& y, std::size_t n,
                                                std::uint64_t seed, float alpha) {
    const auto idx = cudalab::testing::boundary_samples(n, seed);
    std::vector<float> want(idx.size());
    for (std::size_t k = 0; k < idx.size(); ++k)
      want[k] =
          static_cast<float>(static_cast<double>(alpha) * uniform_at(seed, idx[k], 0.5f, 1.5f) +
                             uniform_at(seed + 1, idx[k], 0.5f, 1.5f));
    EXPECT_TRUE(cudalab::testing::samples_match(idx, cudalab::testing::download_at(y.data(), idx),
                                                want, kTol,
                                                "saxpy (exercise 3.3, n = 2^32 + 4099)"));
  });
}

TEST(SaxpyArgs, NullPointersAreRejectedByName) {
  try {
    ch03::saxpy(2.0f, nullptr, nullptr, 3);
    FAIL() << "expected std::invalid_argument";
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find("'x'"), std::string::npos) << e.what();
  }
  EXPECT_NO_THROW(ch03::saxpy(2.0f, nullptr, nullptr, 0));
}
