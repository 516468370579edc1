// Exercise 6.4 — the implicit-GEMM convolution against a double CPU oracle; cuDNN's forward
// convolution and its algorithm enumeration (skipped with the reason when built without cuDNN).
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <string>
#include <tuple>
#include <vector>

#include "ch06/ch06.hpp"
#include "cudalab/random.hpp"
#include "cudalab/testing.hpp"

using namespace cudalab;
using ch06::ConvShape;

namespace {

std::string name_of(const ConvShape& s) {
  return "n" + std::to_string(s.n) + "_c" + std::to_string(s.c) + "_" + std::to_string(s.h) + "x" +
         std::to_string(s.w) + "_k" + std::to_string(s.k) + "_" + std::to_string(s.r) + "x" +
         std::to_string(s.s) + "_st" + std::to_string(s.stride) + "_pad" + std::to_string(s.pad);
}

// Each output is a dot product of C R S terms |x w| <= 1 (inputs in [-1, 1]): fp32 accumulation
// in any order errs by at most gamma_{CRS} * CRS (Higham 3.1 with sum |x w| <= CRS). Dropping or
// repeating one 16-step tile errs by ~ sqrt(16) / 3, orders of magnitude above for these sizes.
Tolerance conv_tolerance(const ConvShape& s) {
  const double n = 1.0 * s.c * s.r * s.s, u = 0x1p-24;
  return {.abs = n * u / (1 - n * u) * n, .rel = 0};
}

struct ConvCase {
  std::vector<float> x, w;
  std::vector<float> want;
};
ConvCase make_case(const ConvShape& s, Rng& rng) {
  ConvCase c;
  c.x = rng.uniform<float>(std::size_t(s.n) * s.c * s.h * s.w, -1.0f, 1.0f);
  c.w = rng.uniform<float>(std::size_t(s.k) * s.c * s.r * s.s, -1.0f, 1.0f);
  const auto y = ch06::conv2d_oracle(s, c.x, c.w);
  c.want.assign(y.begin(), y.end());
  return c;
}

// Odd sizes everywhere: 1x1x1, channels not multiples of the 64-channel tile, C R S not a
// multiple of 16, stride 2 with padding, rectangular filters and images, a conv1-like layer.
// n1_c256_7x7 and n3_c40_9x10 are deep layers with few pixels: the launcher splits their reduction
// (split-K, several slices added by a second pass) and, past 64 channels, takes the 128-channel
// tile.
const std::vector<ConvShape> kShapes{
    {1, 1, 1, 1, 1, 1, 1, 1, 0},
    {2, 3, 11, 13, 5, 3, 3, 1, 1},
    {3, 7, 17, 19, 67, 5, 3, 2, 2},
    {2, 16, 9, 9, 70, 1, 1, 1, 0},
    {1, 3, 32, 32, 64, 7, 7, 2, 3},
    {2, 64, 14, 14, 65, 3, 3, 1, 1},
    {1, 5, 8, 6, 3, 3, 3, 3, 0},
    {1, 256, 7, 7, 130, 3, 3, 1, 1},
    {3, 40, 9, 10, 129, 3, 3, 1, 1},
    // The tap-major kernel (taken when 3 Cp <= 4 C, Cp = C rounded up to 16): its channel tail
    // (C % 16 != 0) with stride 2 and a K tail; a 1x1 stride-2 layer with a tail; the tail with
    // split-K (few pixels, C R S = 1800) past 64 channels; C = 36 is the boundary (3 Cp = 4 C);
    // C = 48, a multiple of 16 but not of the 64-channel tile.
    {2, 50, 11, 9, 67, 3, 3, 2, 1},
    {1, 36, 15, 15, 33, 1, 1, 2, 0},
    {1, 200, 7, 7, 70, 3, 3, 1, 1},
    {2, 48, 10, 10, 20, 3, 3, 1, 1}};

// conv2d_implicit_gemm with the workspace its launcher asks for (split-K slices).
void run_conv(const ConvShape& s, const DeviceBuffer<float>& x, const DeviceBuffer<float>& w,
              float* y) {
  const std::size_t bytes = ch06::conv2d_implicit_gemm_workspace_bytes(s);
  DeviceBuffer<float> workspace((bytes + sizeof(float) - 1) / sizeof(float));
  ch06::conv2d_implicit_gemm(s, x.data(), w.data(), y, workspace.data(), bytes);
  CUDALAB_CHECK(cudaDeviceSynchronize());
}

}  // namespace

class ConvGpu : public ::testing::TestWithParam<ConvShape> {};

TEST_P(ConvGpu, ImplicitGemmMatchesOracle) {
  CUDALAB_REQUIRE_GPU();
  const ConvShape s = GetParam();
  Rng rng;
  const auto c = make_case(s, rng);
  auto dx = to_device(c.x), dw = to_device(c.w);
  cudalab::testing::GuardedOutput<float> y(c.want.size());
  run_conv(s, dx, dw, y.data());
  EXPECT_MATCHES(compare(y.result(), c.want, conv_tolerance(s),
                         "conv2d_implicit_gemm (exercise 6.4, " + name_of(s) + ")"));
  EXPECT_TRUE(y.guard_intact());
}

// The contract allows no atomics: two runs give the same bits (split-K slices are added in order).
TEST_P(ConvGpu, SameBitsEveryRun) {
  CUDALAB_REQUIRE_GPU();
  const ConvShape s = GetParam();
  Rng rng;
  const auto c = make_case(s, rng);
  auto dx = to_device(c.x), dw = to_device(c.w);
  DeviceBuffer<float> y1(c.want.size()), y2(c.want.size());
  run_conv(s, dx, dw, y1.data());
  run_conv(s, dx, dw, y2.data());
  const std::vector<float> h1 = y1.to_host(), h2 = y2.to_host();
  std::size_t first = h1.size();
  for (std::size_t e = 0; e < h1.size() && first == h1.size(); ++e)
    if (std::memcmp(&h1[e], &h2[e], sizeof(float)) != 0) first = e;
  EXPECT_EQ(first, h1.size()) << "conv2d_implicit_gemm (exercise 6.4, " << name_of(s)
                              << "): two runs differ at element " << first;
}

INSTANTIATE_TEST_SUITE_P(Shapes, ConvGpu, ::testing::ValuesIn(kShapes),
                         [](const auto& p) { return name_of(p.param); });

// Alignment: x, w, y and the workspace each in turn at +1 float of its allocation (then all four),
// on a shape whose filter rows (C R S % 4 == 0) and output planes (P Q % 4 == 0) allow 16-byte
// loads and stores, with and without split-K. The first two split (few pixels, a long reduction):
// their main kernel stores into the workspace's slabs and the slab sum writes y. The third never
// does (C R S = 432: 27 tiles of 16, fewer than two slices of 16 tiles, on any GPU), so the main
// kernel stores into y itself. A 16-byte path chosen on the shape alone stores or loads at a
// misaligned address. x and w sit in front of NaN guard zones, y is poisoned and guarded, the
// workspace is poisoned (NaN) before the call.
const ConvShape kAlignShapes[] = {{1, 256, 8, 8, 130, 3, 3, 1, 1},
                                  {2, 64, 14, 14, 68, 3, 3, 1, 1},
                                  {2, 48, 10, 10, 36, 3, 3, 1, 1}};
using ConvAlignParam = std::tuple<int, int>;  // shape, offsets (bit 0: x, 1: w, 2: y, 3: workspace)

void run_guarded_conv(const ConvShape& s, const ConvCase& c, std::size_t ox, std::size_t ow,
                      std::size_t oy, std::size_t ows, const std::string& what) {
  const cudalab::testing::GuardedInput<float> dx(c.x, ox), dw(c.w, ow);
  cudalab::testing::GuardedOutput<float> y(oy + c.want.size());
  const std::size_t bytes = ch06::conv2d_implicit_gemm_workspace_bytes(s);
  DeviceBuffer<float> ws(ows + (bytes + sizeof(float) - 1) / sizeof(float));
  poison_device(ws.data(), ws.bytes());
  CUDALAB_CHECK(cudaDeviceSynchronize());
  ch06::conv2d_implicit_gemm(s, dx.data(), dw.data(), y.data() + oy, ws.data() + ows, bytes);
  CUDALAB_CHECK(cudaDeviceSynchronize());
  const auto all = y.result();
  EXPECT_MATCHES(
      compare(std::vector<float>(all.begin() + static_cast<std::ptrdiff_t>(oy), all.end()), c.want,
              conv_tolerance(s), what));
  EXPECT_TRUE(y.guard_intact()) << what;
  EXPECT_TRUE(y.untouched(0, oy, what));
}

class ConvAlignmentGpu : public ::testing::TestWithParam<ConvAlignParam> {};

TEST_P(ConvAlignmentGpu, EveryPointerOnItsOwnAlignment) {
  CUDALAB_REQUIRE_GPU();
  const auto [si, bits] = GetParam();
  const ConvShape s = kAlignShapes[si];
  Rng rng;
  const auto c = make_case(s, rng);
  const std::size_t ox = bits & 1, ow = (bits >> 1) & 1, oy = (bits >> 2) & 1,
                    ows = (bits >> 3) & 1;
  run_guarded_conv(s, c, ox, ow, oy, ows,
                   "conv2d_implicit_gemm (exercise 6.4, " + name_of(s) + ", x +" +
                       std::to_string(ox) + " w +" + std::to_string(ow) + " y +" +
                       std::to_string(oy) + " workspace +" + std::to_string(ows) + " floats)");
}

INSTANTIATE_TEST_SUITE_P(Offsets, ConvAlignmentGpu,
                         ::testing::Combine(::testing::Values(0, 1, 2),
                                            ::testing::Values(0, 1, 2, 4, 8, 15)),
                         [](const ::testing::TestParamInfo<ConvAlignParam>& p) {
                           const int b = std::get<1>(p.param);
                           return name_of(kAlignShapes[std::get<0>(p.param)]) + "_x" +
                                  std::to_string(b & 1) + "_w" + std::to_string((b >> 1) & 1) +
                                  "_y" + std::to_string((b >> 2) & 1) + "_ws" +
                                  std::to_string((b >> 3) & 1);
                         });

// A workspace smaller than asked (the contract: slower, still correct): none, too small for the
// transposed filters (the (c, r, s) kernel), the filters and fewer split-K slabs, and all of it;
// the workspace is poisoned (NaN) first, so a part the call relies on but did not write shows.
TEST(ConvWorkspaceGpu, LessThanAskedIsStillCorrect) {
  CUDALAB_REQUIRE_GPU();
  const ConvShape s = kAlignShapes[0];
  Rng rng;
  const auto c = make_case(s, rng);
  auto dx = to_device(c.x), dw = to_device(c.w);
  const std::size_t bytes = ch06::conv2d_implicit_gemm_workspace_bytes(s);
  ASSERT_GT(bytes, 0u) << name_of(s) << ": the launcher asks for no workspace";
  DeviceBuffer<float> ws((bytes + sizeof(float) - 1) / sizeof(float));
  for (const std::size_t give : {std::size_t{0}, bytes / 2, bytes - 16, bytes}) {
    poison_device(ws.data(), ws.bytes());
    cudalab::testing::GuardedOutput<float> y(c.want.size());
    CUDALAB_CHECK(cudaDeviceSynchronize());
    ch06::conv2d_implicit_gemm(s, dx.data(), dw.data(), y.data(), give == 0 ? nullptr : ws.data(),
                               give);
    CUDALAB_CHECK(cudaDeviceSynchronize());
    EXPECT_MATCHES(compare(y.result(), c.want, conv_tolerance(s),
                           "conv2d_implicit_gemm (exercise 6.4, " + name_of(s) + ", workspace " +
                               std::to_string(give) + " of " + std::to_string(bytes) + " bytes)"));
    EXPECT_TRUE(y.guard_intact());
  }
}

// Identity: one workspace (poisoned before each call) and one output for two problems of the same
// shape with other inputs, then the first again: split-K partials of a previous call, or a plan
// keyed on the shape, must not leak into the next.
TEST(ConvIdentityGpu, OneWorkspaceTwoProblemsOfTheSameShape) {
  CUDALAB_REQUIRE_GPU();
  const ConvShape s = kAlignShapes[0];
  Rng rng;
  const auto c1 = make_case(s, rng), c2 = make_case(s, rng);
  const cudalab::testing::GuardedInput<float> x1(c1.x), w1(c1.w), x2(c2.x), w2(c2.w);
  const std::size_t bytes = ch06::conv2d_implicit_gemm_workspace_bytes(s);
  ASSERT_GT(bytes, 0u) << name_of(s)
                       << " was chosen to take the split-K path (few output pixels, "
                          "a long reduction): the launcher asks for no workspace";
  DeviceBuffer<float> ws((bytes + sizeof(float) - 1) / sizeof(float));
  cudalab::testing::GuardedOutput<float> y(c1.want.size());
  const struct {
    const float *x, *w;
    const ConvCase* c;
    const char* name;
  } calls[] = {{x1.data(), w1.data(), &c1, "problem 1"},
               {x2.data(), w2.data(), &c2, "problem 2 after problem 1"},
               {x1.data(), w1.data(), &c1, "problem 1 again"}};
  for (const auto& k : calls) {
    poison_device(ws.data(), ws.bytes());
    CUDALAB_CHECK(cudaDeviceSynchronize());
    ch06::conv2d_implicit_gemm(s, k.x, k.w, y.data(), ws.data(), bytes);
    CUDALAB_CHECK(cudaDeviceSynchronize());
    EXPECT_MATCHES(compare(y.result(), k.c->want, conv_tolerance(s),
                           std::string("conv2d_implicit_gemm (exercise 6.4, ") + name_of(s) +
                               ", one workspace: " + k.name + ")"));
  }
}

// The stream contract (cudalab/testing.hpp, replay_from_capture): the convolution and its split-K
// reduction on the caller's stream (a shape that takes the split-K path, with its workspace); the
// replay of a capture must give a plain call's bits.
TEST(ConvStreamGpu, AllWorkOnTheCallersStream) {
  CUDALAB_REQUIRE_GPU();
  const ConvShape s = kAlignShapes[0];
  Rng rng;
  const auto c = make_case(s, rng);
  auto dx = to_device(c.x), dw = to_device(c.w);
  const std::size_t bytes = ch06::conv2d_implicit_gemm_workspace_bytes(s);
  DeviceBuffer<float> ws((bytes + sizeof(float) - 1) / sizeof(float));
  cudalab::testing::GuardedOutput<float> y(c.want.size());
  EXPECT_TRUE(cudalab::testing::replay_matches_plain_call(
      [&](cudaStream_t stream) {
        ch06::conv2d_implicit_gemm(s, dx.data(), dw.data(), y.data(), ws.data(), bytes, stream);
      },
      y, std::string("conv2d_implicit_gemm (exercise 6.4, ") + name_of(s) + ")"));
}

#define CH06_REQUIRE_CUDNN()                                                   \
  do {                                                                         \
    if (!ch06::have_cudnn())                                                   \
      GTEST_SKIP() << "skipped: built without cuDNN (CUDALAB_HAVE_CUDNN=OFF)"; \
  } while (0)

// cuDNN computes the same convolution, whichever way its algorithm is chosen (FMA math: fp32 on
// the CUDA cores). A GEMM-family algorithm sums the same products: the same error bound as the
// hand-written kernel. FFT and Winograd transform the operands first and their rounding grows with
// the transform: the benchmark's wider bound (5e-5 per term + 1e-3, rel 1e-4) for them.
TEST(CudnnConvGpu, ForwardMatchesOracle) {
  CUDALAB_REQUIRE_GPU();
  CH06_REQUIRE_CUDNN();
  for (const ConvShape& s :
       {ConvShape{2, 3, 11, 13, 5, 3, 3, 1, 1}, ConvShape{2, 64, 14, 14, 65, 3, 3, 1, 1}}) {
    Rng rng;
    const auto c = make_case(s, rng);
    auto dx = to_device(c.x), dw = to_device(c.w);
    for (const auto choice : {ch06::CudnnConvChoice::kFastest, ch06::CudnnConvChoice::kFastestGemm,
                              ch06::CudnnConvChoice::kHeuristic}) {
      cudalab::testing::GuardedOutput<float> y(c.want.size());
      ch06::CudnnConvForward conv(s, std::size_t{1} << 30, choice);
      const std::string algo = conv.algo_name();
      const bool gemm =
          algo == "IMPLICIT_GEMM" || algo == "IMPLICIT_PRECOMP_GEMM" || algo == "GEMM";
      if (choice == ch06::CudnnConvChoice::kFastestGemm) {
        EXPECT_TRUE(gemm) << "kFastestGemm picked " << algo;
      }
      conv.run(dx.data(), dw.data(), y.data());
      CUDALAB_CHECK(cudaDeviceSynchronize());
      const double n = 1.0 * s.c * s.r * s.s;
      const Tolerance tol =
          gemm ? conv_tolerance(s) : Tolerance{.abs = 5e-5 * n + 1e-3, .rel = 1e-4};
      EXPECT_MATCHES(compare(y.result(), c.want, tol,
                             "cuDNN forward, algo " + algo + " (" + name_of(s) + ")"));
      EXPECT_TRUE(y.guard_intact());
    }
  }
}

// The enumeration reports what it promises: a measured success, and a zero-workspace pick that
// really needs no workspace.
TEST(CudnnConvGpu, EnumeratesAlgorithms) {
  CUDALAB_REQUIRE_GPU();
  CH06_REQUIRE_CUDNN();
  const ConvShape s{8, 64, 14, 14, 64, 3, 3, 1, 1};
  for (const auto layout : {ch06::ConvLayout::kNCHW, ch06::ConvLayout::kNHWC}) {
    for (const auto type : {ch06::ConvType::kF32, ch06::ConvType::kF16}) {
      const auto rep = ch06::enumerate_conv_algos(s, layout, type, std::size_t{1} << 30);
      EXPECT_FALSE(rep.heuristics.empty());
      ASSERT_FALSE(rep.measured.empty());
      EXPECT_FALSE(rep.pick_unlimited.empty());
      EXPECT_GT(rep.time_unlimited_ms, 0.0f);
      if (!rep.pick_no_workspace.empty()) {
        EXPECT_GE(rep.time_no_workspace_ms, rep.time_unlimited_ms);  // Find sorts by time
        bool found = false;
        for (const auto& r : rep.measured)
          if (r.algo == rep.pick_no_workspace && r.workspace == 0 && r.status == "SUCCESS")
            found = true;
        EXPECT_TRUE(found) << rep.pick_no_workspace;
      }
    }
  }
}

TEST(ConvArgs, BadShapesAreRejectedByName) {
  auto message_of = [](const ConvShape& s) {
    return cudalab::testing::invalid_argument_message([&] { ch06::check_conv_shape(s); });
  };
  EXPECT_NE(message_of({0, 3, 8, 8, 4, 3, 3, 1, 1}).find("shape.n"), std::string::npos);
  EXPECT_NE(message_of({1, 3, 8, 8, 4, 3, 3, 0, 1}).find("shape.stride"), std::string::npos);
  EXPECT_NE(message_of({1, 3, 8, 8, 4, 3, 3, 1, 3}).find("shape.pad"), std::string::npos);
  EXPECT_NE(message_of({1, 3, 2, 8, 4, 5, 3, 1, 1}).find("shape.r"), std::string::npos);
  EXPECT_NE(message_of({70000, 64, 224, 224, 64, 3, 3, 1, 1}).find("2^31"), std::string::npos);
  EXPECT_EQ(ConvShape({32, 3, 224, 224, 64, 7, 7, 2, 3}).p(), 112);  // ResNet-50 conv1: 224 -> 112
  EXPECT_NO_THROW(ch06::check_conv_shape({32, 3, 224, 224, 64, 7, 7, 2, 3}));
}
