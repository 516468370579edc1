// Exercise 3.2 — vector_add against the CPU oracle, on sizes that catch the classic bugs:
// 1, a warp +/- 1, a block +/- 1, non-multiples of the block, one large size.
#include <gtest/gtest.h>

#include <cstdint>
#include <string>
#include <vector>

#include "ch03/ch03.hpp"
#include "cudalab/device_fill.hpp"
#include "cudalab/random.hpp"
#include "cudalab/testing.hpp"

using namespace cudalab;

namespace {
const std::vector<std::size_t> kSizes{1, 31, 32, 33, 255, 256, 257, 1000, 4097, (1u << 20) + 3};
std::string size_name(const ::testing::TestParamInfo<std::size_t>& p) {
  return "n_" + std::to_string(p.param);
}
}  // namespace

class VectorAddGpu : public ::testing::TestWithParam<std::size_t> {};

TEST_P(VectorAddGpu, MatchesOracle) {
  CUDALAB_REQUIRE_GPU();
  const std::size_t n = GetParam();
  Rng rng;
  const auto a = rng.uniform<float>(n, -10.0f, 10.0f), b = rng.uniform<float>(n, -10.0f, 10.0f);
  auto da = to_device(a), db = to_device(b);
  cudalab::testing::GuardedOutput<float> c(n);
  ch03::vector_add(da.data(), db.data(), c.data(), n);
  CUDALAB_CHECK(cudaDeviceSynchronize());
  // A float add is correctly rounded on both sides: the result must be exact.
  std::vector<float> want(n);
  for (std::size_t i = 0; i < n; ++i) want[i] = a[i] + b[i];
  EXPECT_MATCHES(
      compare(c.result(), want, {}, "vector_add (exercise 3.2, n = " + std::to_string(n) + ")"));
  EXPECT_TRUE(c.guard_intact());
}

INSTANTIATE_TEST_SUITE_P(Sizes, VectorAddGpu, ::testing::ValuesIn(kSizes), size_name);

// The stream contract (cudalab/testing.hpp, replay_from_capture): all the work on the caller's
// stream. A launch without the stream argument runs on the legacy default stream while the call is
// recorded, not in the recorded graph, so the replay leaves c poisoned.
TEST(VectorAddStreamGpu, AllWorkOnTheCallersStream) {
  CUDALAB_REQUIRE_GPU();
  const std::size_t n = 4097;
  Rng rng;
  const auto a = rng.uniform<float>(n, -10.0f, 10.0f), b = rng.uniform<float>(n, -10.0f, 10.0f);
  auto da = to_device(a), db = to_device(b);
  cudalab::testing::GuardedOutput<float> c(n);
  cudalab::testing::replay_from_capture(
      [&](cudaStream_t s) { ch03::vector_add(da.data(), db.data(), c.data(), n, s); },
      [&] { c.repoison(); });
  std::vector<float> want(n);
  for (std::size_t i = 0; i < n; ++i) want[i] = a[i] + b[i];
  EXPECT_MATCHES(compare(c.result(), want, {},
                         "vector_add replayed from a capture of its stream (exercise 3.2)"));
}

// n = 2^31 + 4099 floats (a, b, c: 25.8 GB; skipped with less free memory): a 32-bit int index goes
// negative at 2^31, so the elements past it are never written (they keep the poison). Inputs come
// from the device fill and the check runs on the device (c[i] == a[i] + b[i], 64-bit index): no
// 8 GB copy to the host. Cost on an H200 (~4 TB/s): fill 17 GB + poison 9 GB + add 26 GB + check
// 26 GB = ~78 GB, ~20 ms of GPU time, plus ~0.1-0.3 s of allocation.
TEST(VectorAddLargeGpu, PastTwoToThe31Elements) {
  const std::size_t n = (std::size_t{1} << 31) + 4099;
  CUDALAB_REQUIRE_DEVICE_MEMORY(3 * n * sizeof(float) + (std::size_t{1} << 30));
  const std::uint64_t seed = Rng().seed();
  DeviceBuffer<float> a(n), b(n), c(n);
  fill_uniform_device(a.data(), n, seed, -10.0f, 10.0f);
  fill_uniform_device(b.data(), n, seed + 1, -10.0f, 10.0f);
  poison_device(c.data(), c.bytes());
  ch03::vector_add(a.data(), b.data(), c.data(), n);
  CUDALAB_CHECK(cudaDeviceSynchronize());
  EXPECT_TRUE(
      cudalab::testing::device_matches(cudalab::testing::check_sum(a.data(), b.data(), c.data(), n),
                                       "vector_add (exercise 3.2, n = 2^31 + 4099)"));
}

// n = 2^32 + 4099 floats: an index computed as a 32-bit product (blockIdx.x * blockDim.x, unsigned)
// and widened afterwards is right up to 2^32 and wraps there: the elements past 2^32 are never
// written, and the wrapped threads rewrite the first ones. a and b are one buffer (c = a + a), so
// 2 x 17.2 GB. The oracle runs on the host at the sampled elements only (both sides of 2^31 and
// 2^32, the last, random ones), from the fill's host twin. Cost on an H200: fill 17 GB, poison 17
// GB, add 52 GB: ~25 ms of GPU time plus the allocation.
TEST(VectorAddLargeGpu, PastTwoToThe32Elements) {
  const std::size_t n = (std::size_t{1} << 32) + 4099;
  CUDALAB_REQUIRE_DEVICE_MEMORY(2 * n * sizeof(float) + (std::size_t{1} << 30));
  const std::uint64_t seed = Rng().seed();
  DeviceBuffer<float> a(n), c(n);
  fill_uniform_device(a.data(), n, seed, -10.0f, 10.0f);
  poison_device(c.data(), c.bytes());
  ch03::vector_add(a.data(), a.data(), c.data(), n);
  CUDALAB_CHECK(cudaDeviceSynchronize());
  const auto idx = cudalab::testing::boundary_samples(n, seed);
  std::vector<float> want(idx.size());
  for (std::size_t k = 0; k < idx.size(); ++k) {
    const float x = uniform_at(seed, idx[k], -10.0f, 10.0f);
    want[k] = x + x;
  }
  EXPECT_TRUE(cudalab::testing::samples_match(idx, cudalab::testing::download_at(c.data(), idx),
                                              want, {},
                                              "vector_add (exercise 3.2, n = 2^32 + 4099)"));
}

TEST(VectorAddArgs, NullPointersAreRejectedByName) {
  float* p = nullptr;
  try {
    ch03::vector_add(nullptr, p, p, 10);
    FAIL() << "expected std::invalid_argument";
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find("'a'"), std::string::npos) << e.what();
  }
}

TEST(VectorAddArgs, ZeroElementsIsANoOp) {
  EXPECT_NO_THROW(ch03::vector_add(nullptr, nullptr, nullptr, 0));
}
