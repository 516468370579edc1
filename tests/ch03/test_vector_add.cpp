// Exercise 3.2 — vector_add against the CPU oracle, on sizes that catch the classic bugs:
// 1, a warp +/- 1, a block +/- 1, non-multiples of the block, one large size.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "ch03/ch03.hpp"
#include "cudalab/random.hpp"
#include "cudalab/testing.hpp"

using namespace cudalab;

namespace {
const std::vector<std::size_t> kSizes{1, 31, 32, 33, 255, 256, 257, 1000, 4097, (1u << 20) + 3};
std::string size_name(const ::testing::TestParamInfo<std::size_t>& p) { return "n_" + std::to_string(p.param); }
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
  EXPECT_MATCHES(compare(c.result(), want, {}, "vector_add (exercise 3.2, n = " + std::to_string(n) + ")"));
  EXPECT_TRUE(c.guard_intact());
}

INSTANTIATE_TEST_SUITE_P(Sizes, VectorAddGpu, ::testing::ValuesIn(kSizes), size_name);

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
