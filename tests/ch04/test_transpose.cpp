// Exercise 4.2 — every transpose variant (and the 2D copy it is measured against) on shapes that
// catch the classic bugs: 1 x 1, a single row or column, odd sizes below, at and above the
// tile, non-square shapes (swapped bounds), many tiles (a missing __syncthreads), and more
// rows than a 2D grid could cover in y (65535 x 32). Transposing only moves data: exact oracle.
#include <gtest/gtest.h>

#include <cstdint>
#include <string>
#include <tuple>
#include <vector>

#include "ch04/ch04.hpp"
#include "cudalab/random.hpp"
#include "cudalab/testing.hpp"

using namespace cudalab;

namespace {
using Shape = std::pair<int, int>;  // rows, cols
const std::vector<Shape> kShapes{{1, 1},       {1, 1000},    {1000, 1},    {31, 33},
                                 {33, 17},     {32, 32},     {64, 64},     {65, 63},
                                 {1000, 1000}, {2049, 3001}, {2100001, 1}, {1, 2100001}};
std::string shape_str(const Shape& s) {
  return std::to_string(s.first) + "x" + std::to_string(s.second);
}

// Fills a rows x cols device matrix from the counter-based hash; in(r, c) = uniform_at(seed, r cols
// + c).
DeviceBuffer<float> random_matrix(const Shape& s, std::uint64_t seed) {
  const std::size_t n = static_cast<std::size_t>(s.first) * s.second;
  DeviceBuffer<float> m(n);
  fill_uniform_device(m.data(), n, seed, -100.0f, 100.0f);
  return m;
}

// The transpose of random_matrix(s, seed): out is cols x rows, out[c rows + r] = in[r cols + c].
std::vector<float> transpose_oracle(const Shape& s, std::uint64_t seed) {
  const auto [rows, cols] = s;
  std::vector<float> want(static_cast<std::size_t>(rows) * cols);
  for (std::size_t r = 0; r < static_cast<std::size_t>(rows); ++r)
    for (std::size_t c = 0; c < static_cast<std::size_t>(cols); ++c)
      want[c * rows + r] = uniform_at(seed, r * cols + c, -100.0f, 100.0f);
  return want;
}
}  // namespace

using TransposeCase = std::tuple<ch04::TransposeVariant, Shape>;
class TransposeGpu : public ::testing::TestWithParam<TransposeCase> {};

TEST_P(TransposeGpu, MatchesOracle) {
  CUDALAB_REQUIRE_GPU();
  const auto [variant, shape] = GetParam();
  const auto [rows, cols] = shape;
  const std::uint64_t seed = Rng().seed();
  auto in = random_matrix(shape, seed);
  const std::size_t n = in.size();
  cudalab::testing::GuardedOutput<float> out(n);
  ch04::transpose(in.data(), out.data(), rows, cols, variant);
  CUDALAB_CHECK(cudaDeviceSynchronize());
  EXPECT_MATCHES(compare(out.result(), transpose_oracle(shape, seed), {},
                         "transpose " + std::string(ch04::name(variant)) + " (exercise 4.2, " +
                             shape_str(shape) + " -> " + shape_str({cols, rows}) +
                             "; output index = c * rows + r)"));
  EXPECT_TRUE(out.guard_intact());
}

INSTANTIATE_TEST_SUITE_P(Shapes, TransposeGpu,
                         ::testing::Combine(::testing::ValuesIn(ch04::kTransposeVariants),
                                            ::testing::ValuesIn(kShapes)),
                         [](const ::testing::TestParamInfo<TransposeCase>& p) {
                           return std::string(ch04::name(std::get<0>(p.param))) + "_" +
                                  shape_str(std::get<1>(p.param));
                         });

// Shape classes: rows and cols each a multiple of every tile (64), a partial tile that is still a
// multiple of 4 (68) and odd (67); the input sits in front of a NaN guard zone (a load past its
// end shows as NaN in the output), the output is poisoned and guarded. These *ShapesGpu cases
// also run under compute-sanitizer memcheck, where a read past an edge that lands in the guard
// or in padding still shows.
using ShapeCase = std::tuple<ch04::TransposeVariant, int, int>;
class TransposeShapesGpu : public ::testing::TestWithParam<ShapeCase> {};

TEST_P(TransposeShapesGpu, TileMultipleAlignedPartialAndOdd) {
  CUDALAB_REQUIRE_GPU();
  const auto [variant, rows, cols] = GetParam();
  Rng rng;
  const std::size_t n = static_cast<std::size_t>(rows) * cols;
  const auto x = rng.uniform<float>(n, -100.0f, 100.0f);
  const cudalab::testing::GuardedInput<float> in(x, 0);
  cudalab::testing::GuardedOutput<float> out(n);
  ch04::transpose(in.data(), out.data(), rows, cols, variant);
  CUDALAB_CHECK(cudaDeviceSynchronize());
  std::vector<float> want(n);
  for (std::size_t r = 0; r < static_cast<std::size_t>(rows); ++r)
    for (std::size_t c = 0; c < static_cast<std::size_t>(cols); ++c)
      want[c * rows + r] = x[r * cols + c];
  const std::string what = "transpose " + std::string(ch04::name(variant)) + " (exercise 4.2, " +
                           shape_str({rows, cols}) + ", NaN behind the input)";
  EXPECT_MATCHES(compare(out.result(), want, {}, what));
  EXPECT_TRUE(out.guard_intact()) << what;
}

INSTANTIATE_TEST_SUITE_P(Classes, TransposeShapesGpu,
                         ::testing::Combine(::testing::ValuesIn(ch04::kTransposeVariants),
                                            ::testing::Values(64, 68, 67),
                                            ::testing::Values(64, 68, 67)),
                         [](const ::testing::TestParamInfo<ShapeCase>& p) {
                           return std::string(ch04::name(std::get<0>(p.param))) + "_" +
                                  std::to_string(std::get<1>(p.param)) + "x" +
                                  std::to_string(std::get<2>(p.param));
                         });

// 65537 x 65541 = 4,295,360,517 elements: past 2^32, so a 32-bit index (int: past 2^31; unsigned:
// past 2^32) in the load or the store breaks. Every variant, checked on the device (out[c rows +
// r] == in[r cols + c], 64-bit). Memory: 2 x 17.2 GB. Cost on an H200, per variant: fill 17 GB,
// ~34 GB moved by the transpose and ~34 GB by the check (uncoalesced on one side: the naive
// variant and the check run at maybe 1-2 TB/s): ~60 ms, plus ~0.2 s of allocation; 4 variants, ~1
// s.
class TransposeLargeGpu : public ::testing::TestWithParam<ch04::TransposeVariant> {};

TEST_P(TransposeLargeGpu, PastTwoToThe32Elements) {
  const ch04::TransposeVariant v = GetParam();
  const int rows = 65537, cols = 65541;
  const std::size_t n = std::size_t{rows} * cols;
  CUDALAB_REQUIRE_DEVICE_MEMORY(2 * n * sizeof(float) + (std::size_t{1} << 30));
  const std::uint64_t seed = Rng().seed();
  auto in = random_matrix({rows, cols}, seed);
  DeviceBuffer<float> out(n);
  poison_device(out.data(), out.bytes());
  ch04::transpose(in.data(), out.data(), rows, cols, v);
  CUDALAB_CHECK(cudaDeviceSynchronize());
  EXPECT_TRUE(cudalab::testing::device_matches(
      cudalab::testing::check_transpose(in.data(), out.data(), rows, cols),
      "transpose " + std::string(ch04::name(v)) +
          " (exercise 4.2, 65537x65541 = 2^32 + 393221 elements; "
          "output index = c * rows + r)"));
}

INSTANTIATE_TEST_SUITE_P(Variants, TransposeLargeGpu, ::testing::ValuesIn(ch04::kTransposeVariants),
                         [](const ::testing::TestParamInfo<ch04::TransposeVariant>& p) {
                           return std::string(ch04::name(p.param));
                         });

// Technique (exercise 4.2): the tiled variants stage a kTile x (kTile + pad) tile of floats in
// shared memory (read from cudaFuncGetAttributes of the kernel the call launches, recorded by
// stream capture: nothing runs). A naive transpose written into the tiled kernel passes every
// numeric test; it fails here.
TEST(TransposeTechniqueGpu, TiledVariantsStageATileInSharedMemory) {
  CUDALAB_REQUIRE_GPU();
  const int rows = 1024, cols = 1024;
  DeviceBuffer<float> in(std::size_t{rows} * cols), out(std::size_t{rows} * cols);
  const struct {
    ch04::TransposeVariant v;
    std::size_t bytes;
  } want[] = {{ch04::TransposeVariant::kTiled, 32 * 32 * sizeof(float)},
              {ch04::TransposeVariant::kPadded, 32 * 33 * sizeof(float)},
              {ch04::TransposeVariant::kPadded64, 64 * 65 * sizeof(float)}};
  for (const auto& w : want) {
    const auto c = cudalab::testing::capture_launches([&](cudaStream_t stream) {
      ch04::transpose(in.data(), out.data(), rows, cols, w.v, stream);
    });
    ASSERT_EQ(c.kernels.size(), 1u)
        << "transpose " << ch04::name(w.v) << " launched " << c.kernels.size() << " kernels";
    EXPECT_GE(c.kernels[0].shared_bytes(), w.bytes)
        << "transpose " << ch04::name(w.v) << " (exercise 4.2): its kernel uses "
        << c.kernels[0].shared_bytes() << " bytes of shared memory, want at least " << w.bytes
        << " (the tile, padding included)";
  }
}

// The stream contract (cudalab/testing.hpp, replay_from_capture): all the work on the caller's
// stream. A launch without the stream argument runs on the legacy default stream while the call is
// recorded, not in the recorded graph, so the replay leaves the output poisoned.
class TransposeStreamGpu : public ::testing::TestWithParam<ch04::TransposeVariant> {};

TEST_P(TransposeStreamGpu, AllWorkOnTheCallersStream) {
  CUDALAB_REQUIRE_GPU();
  const ch04::TransposeVariant variant = GetParam();
  const Shape shape{67, 45};
  const auto [rows, cols] = shape;
  const std::uint64_t seed = Rng().seed();
  auto in = random_matrix(shape, seed);
  cudalab::testing::GuardedOutput<float> out(in.size());
  cudalab::testing::replay_from_capture(
      [&](cudaStream_t s) { ch04::transpose(in.data(), out.data(), rows, cols, variant, s); },
      [&] { out.repoison(); });
  EXPECT_MATCHES(compare(out.result(), transpose_oracle(shape, seed), {},
                         "transpose " + std::string(ch04::name(variant)) +
                             " replayed from a capture of its stream (exercise 4.2)"));
}

INSTANTIATE_TEST_SUITE_P(Variants, TransposeStreamGpu,
                         ::testing::ValuesIn(ch04::kTransposeVariants),
                         [](const auto& p) { return std::string(ch04::name(p.param)); });

TEST(Copy2dStreamGpu, AllWorkOnTheCallersStream) {
  CUDALAB_REQUIRE_GPU();
  const Shape shape{67, 45};
  const std::uint64_t seed = Rng().seed();
  auto in = random_matrix(shape, seed);
  cudalab::testing::GuardedOutput<float> out(in.size());
  cudalab::testing::replay_from_capture(
      [&](cudaStream_t s) { ch04::copy_2d(in.data(), out.data(), shape.first, shape.second, s); },
      [&] { out.repoison(); });
  std::vector<float> want(in.size());
  for (std::size_t i = 0; i < want.size(); ++i) want[i] = uniform_at(seed, i, -100.0f, 100.0f);
  EXPECT_MATCHES(compare(out.result(), want, {}, "copy_2d replayed from a capture of its stream"));
}

class Copy2dGpu : public ::testing::TestWithParam<Shape> {};

TEST_P(Copy2dGpu, CopiesEveryElement) {
  CUDALAB_REQUIRE_GPU();
  const Shape shape = GetParam();
  const std::uint64_t seed = Rng().seed();
  auto in = random_matrix(shape, seed);
  cudalab::testing::GuardedOutput<float> out(in.size());
  ch04::copy_2d(in.data(), out.data(), shape.first, shape.second);
  CUDALAB_CHECK(cudaDeviceSynchronize());
  std::vector<float> want(in.size());
  for (std::size_t i = 0; i < want.size(); ++i) want[i] = uniform_at(seed, i, -100.0f, 100.0f);
  EXPECT_MATCHES(compare(out.result(), want, {}, "copy_2d (" + shape_str(shape) + ")"));
  EXPECT_TRUE(out.guard_intact());
}

INSTANTIATE_TEST_SUITE_P(Shapes, Copy2dGpu, ::testing::ValuesIn(kShapes),
                         [](const ::testing::TestParamInfo<Shape>& p) {
                           return shape_str(p.param);
                         });

// The 2D copy the transposes are measured against, on the same 65537 x 65541 matrix (past 2^32
// elements): out == in bit for bit, checked on the device (a gather with stride 1).
TEST(Copy2dLargeGpu, PastTwoToThe32Elements) {
  const int rows = 65537, cols = 65541;
  const std::size_t n = std::size_t{rows} * cols;
  CUDALAB_REQUIRE_DEVICE_MEMORY(2 * n * sizeof(float) + (std::size_t{1} << 30));
  auto in = random_matrix({rows, cols}, Rng().seed());
  DeviceBuffer<float> out(n);
  poison_device(out.data(), out.bytes());
  ch04::copy_2d(in.data(), out.data(), rows, cols);
  CUDALAB_CHECK(cudaDeviceSynchronize());
  EXPECT_TRUE(cudalab::testing::device_matches(
      cudalab::testing::check_gather(in.data(), out.data(), n, 1, 0),
      "copy_2d (65537x65541 = 2^32 + 393221 elements)"));
}

TEST(TransposeArgs, RejectsBadShapesPointersAndVariants) {
  EXPECT_THROW(ch04::transpose(nullptr, nullptr, -1, 4), std::invalid_argument);
  EXPECT_THROW(ch04::copy_2d(nullptr, nullptr, 4, -1), std::invalid_argument);
  try {
    ch04::transpose(nullptr, nullptr, 4, 4, ch04::TransposeVariant::kNaive);
    FAIL() << "expected std::invalid_argument";
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find("'in'"), std::string::npos) << e.what();
  }
  EXPECT_THROW(ch04::transpose(nullptr, nullptr, 0, 0, static_cast<ch04::TransposeVariant>(99)),
               std::invalid_argument);
}

TEST(TransposeArgs, EmptyMatricesAreANoOp) {
  for (const auto v : ch04::kTransposeVariants) {
    EXPECT_NO_THROW(ch04::transpose(nullptr, nullptr, 0, 5, v));
    EXPECT_NO_THROW(ch04::transpose(nullptr, nullptr, 5, 0, v));
  }
  EXPECT_NO_THROW(ch04::copy_2d(nullptr, nullptr, 0, 0));
}

TEST(TransposeArgs, VariantNames) {
  EXPECT_EQ(ch04::name(ch04::TransposeVariant::kNaive), "naive");
  EXPECT_EQ(ch04::name(ch04::TransposeVariant::kTiled), "tiled");
  EXPECT_EQ(ch04::name(ch04::TransposeVariant::kPadded), "padded");
  EXPECT_EQ(ch04::name(ch04::TransposeVariant::kPadded64), "padded64");
}
