// Exercises 5.1 and 5.2 — the reduction ladder: every variant, float and int, on sizes that are
// not multiples of the block (or of the 4-element vector), on misaligned inputs, and n = 0.
//
// Inputs sit between guard zones of NaN / 2^24 (GuardedInput): a kernel that reads past n fails.
// Float is checked twice: (1) exact inputs, multiples of 1/16 with sum|x| < 2^20 (every partial
// sum, in any order, is a multiple of 1/16 below 2^20 and exact in float): the result must be
// exact, so a single dropped or doubled element, or a sum truncated to an integer, shows; (2)
// uniform reals in [-0.5, 1] (a positive mean: the sum ~ n / 4 is far above the bound, so an
// all-zero result fails at every size) against a double oracle, within the bound of
// float_sum_tolerance (reduce_scan_testing.hpp). Int is exact (values small enough that no
// partial sum overflows).
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <string>
#include <tuple>
#include <vector>

#include "ch05/reduce.hpp"
#include "cudalab/delay.hpp"
#include "cudalab/device_fill.hpp"
#include "cudalab/random.hpp"
#include "cudalab/stream.hpp"
#include "cudalab/testing.hpp"
#include "reduce_scan_testing.hpp"

using namespace cudalab;
using ch05::ReduceVariant;
using ch05_testing::GuardedInput;

namespace {

std::string exercise_of(ReduceVariant v) {
  switch (v) {
    case ReduceVariant::kSequential:
      return "exercise 5.1";
    case ReduceVariant::kFirstAddDuringLoad:
    case ReduceVariant::kUnrollLastWarp:
      return "exercise 5.1 (the tree of steps 3-4)";
    case ReduceVariant::kWarpShuffle:
    case ReduceVariant::kVectorized:
    case ReduceVariant::kOnePass:
      return "exercise 5.2 (warp_reduce_sum)";
    default:
      return "worked example";
  }
}

// A workspace sized by the query and zeroed once, as the API asks.
DeviceBuffer<unsigned char> make_workspace(std::size_t n) {
  DeviceBuffer<unsigned char> ws(ch05::reduce_workspace_bytes(n));
  CUDALAB_CHECK(cudaMemset(ws.data(), 0, ws.bytes()));
  return ws;
}

template <class T>
T run_reduce(const T* in, std::size_t n, ReduceVariant v, DeviceBuffer<unsigned char>& ws) {
  cudalab::testing::GuardedOutput<T> out(1);
  ch05::reduce_sum(in, out.data(), n, ws.data(), ws.bytes(), v);
  CUDALAB_CHECK(cudaDeviceSynchronize());
  const std::vector<T> got = out.result();
  EXPECT_TRUE(out.guard_intact());
  return got[0];
}

std::string what(ReduceVariant v, const char* type, std::size_t n, std::size_t offset,
                 const char* input) {
  return "reduce_sum<" + std::string(type) + "> " + ch05::to_string(v) + " (" + exercise_of(v) +
         ", n = " + std::to_string(n) + ", offset = " + std::to_string(offset) + ", " + input + ")";
}

using Param = std::tuple<ReduceVariant, std::size_t, std::size_t>;  // variant, n, offset
std::string param_name(const ::testing::TestParamInfo<Param>& p) {
  const auto [v, n, off] = p.param;
  return std::string(ch05::to_string(v)) + "_n_" + std::to_string(n) + "_offset_" +
         std::to_string(off);
}

}  // namespace

class ReduceGpu : public ::testing::TestWithParam<Param> {};

TEST_P(ReduceGpu, FloatExactOnSixteenths) {
  CUDALAB_REQUIRE_GPU();
  const auto [v, n, offset] = GetParam();
  Rng rng;
  const std::vector<float> x = ch05_testing::exact_float_inputs(rng, n);
  double want = 0;
  for (float e : x) want += e;
  GuardedInput<float> in(x, offset);
  auto ws = make_workspace(n);
  const std::vector<float> got{run_reduce(in.data(), n, v, ws)};
  EXPECT_MATCHES(compare(
      got, std::vector<float>{static_cast<float>(want)}, {},
      what(v, "float", n, offset, "multiples of 1/16, sum|x| < 2^20: every partial sum is exact")));
}

TEST_P(ReduceGpu, FloatWithinErrorBound) {
  CUDALAB_REQUIRE_GPU();
  const auto [v, n, offset] = GetParam();
  Rng rng;
  const std::vector<float> x = rng.uniform<float>(n, -0.5f, 1.0f);
  double want = 0, sum_abs = 0;
  for (float e : x) want += e, sum_abs += std::fabs(e);
  GuardedInput<float> in(x, offset);
  auto ws = make_workspace(n);
  const float first = run_reduce(in.data(), n, v, ws);
  const Tolerance tol{ch05_testing::float_sum_tolerance(n, sum_abs), 0.0};
  EXPECT_MATCHES(
      compare(std::vector<float>{first}, std::vector<float>{static_cast<float>(want)}, tol,
              what(v, "float", n, offset, "uniform [-0.5, 1], |err| <= gamma_D sum|x|")));
  // No atomics on the sum: a second call (same workspace: the one-pass counter was reset) gives
  // the same bits.
  const float second = run_reduce(in.data(), n, v, ws);
  EXPECT_EQ(std::memcmp(&first, &second, sizeof(float)), 0)
      << what(v, "float", n, offset, "second call") << ": " << first << " then " << second
      << " (not deterministic, or the workspace was left dirty by the first call)";
}

TEST_P(ReduceGpu, IntExact) {
  CUDALAB_REQUIRE_GPU();
  const auto [v, n, offset] = GetParam();
  Rng rng;
  const std::vector<int> x = rng.uniform<int>(n, -1000, 1000);
  long long want = 0;
  for (int e : x) want += e;
  GuardedInput<int> in(x, offset);
  auto ws = make_workspace(n);
  for (int call = 0; call < 2; ++call) {  // twice: the one-pass counter must be back at 0
    const std::vector<int> got{run_reduce(in.data(), n, v, ws)};
    EXPECT_MATCHES(compare(got, std::vector<int>{static_cast<int>(want)}, {},
                           what(v, "int", n, offset, call == 0 ? "first call" : "second call")));
  }
}

INSTANTIATE_TEST_SUITE_P(Ladder, ReduceGpu,
                         ::testing::Combine(::testing::ValuesIn(ch05::kAllReduceVariants),
                                            ::testing::Values<std::size_t>(1, 33, 257, 1000, 4099,
                                                                           1'048'583),
                                            ::testing::Values<std::size_t>(0)),
                         param_name);
// Misaligned by 4 or 12 bytes: the vectorized variants must peel the head to a 16-byte boundary.
INSTANTIATE_TEST_SUITE_P(Misaligned, ReduceGpu,
                         ::testing::Combine(::testing::Values(ReduceVariant::kVectorized,
                                                              ReduceVariant::kOnePass),
                                            ::testing::Values<std::size_t>(2, 7, 100'003),
                                            ::testing::Values<std::size_t>(1, 3)),
                         param_name);

// n = 2^31 + 5 ints (8.6 GB; past 2^31 elements and 2^33 bytes): every variant, exact. Inputs in
// [-2, 2] from the device fill (the sum stays far below 2^31: ~sqrt(2 n) ~ 65,000); the oracle is
// a 64-bit sum on the device. A 32-bit element or byte index drops or re-reads elements and fails.
// Cost on an H200 (~4 TB/s), per variant: fill 8.6 GB, oracle 8.6 GB, the reduction 8.6 GB read:
// ~26 GB, ~7 ms of GPU time, plus ~0.1 s of allocation; 8 variants, ~1 s.
namespace {
// n ints in [-2, 2] from the device fill, reduced by variant v, against a 64-bit sum on the
// device (skipped without the memory; the large-test lock is held while it runs).
void check_large_int_sum(ReduceVariant v, std::size_t n, const char* input) {
  CUDALAB_REQUIRE_DEVICE_MEMORY(n * sizeof(int) + ch05::reduce_workspace_bytes(n) +
                                (std::size_t{1} << 30));
  const std::uint64_t seed = Rng().seed();
  DeviceBuffer<int> in(n);
  fill_uniform_device(in.data(), n, seed, -2, 2);
  const long long want = cudalab::testing::sum_int64(in.data(), n);
  auto ws = make_workspace(n);
  const std::vector<int> got{run_reduce(in.data(), n, v, ws)};
  EXPECT_MATCHES(
      compare(got, std::vector<int>{static_cast<int>(want)}, {}, what(v, "int", n, 0, input)));
}
}  // namespace

class ReduceLargeGpu : public ::testing::TestWithParam<ReduceVariant> {};

TEST_P(ReduceLargeGpu, PastTwoToThe31) {
  const ReduceVariant v = GetParam();
  check_large_int_sum(v, (std::size_t{1} << 31) + 5, "2^31 + 5 ints in [-2, 2], exact");
}

// One case per variant, named <variant>_n_2147483653 (so lab_test's CASES give each exercise its
// own).
INSTANTIATE_TEST_SUITE_P(Ladder, ReduceLargeGpu, ::testing::ValuesIn(ch05::kAllReduceVariants),
                         [](const ::testing::TestParamInfo<ReduceVariant>& p) {
                           return std::string(ch05::to_string(p.param)) + "_n_2147483653";
                         });

// n = 2^32 + 2^20 + 5 ints (17.2 GB): a block's first element computed as a 32-bit product
// (blockIdx.x * elements per block, unsigned) is right below 2^32 elements and wraps past it: the
// blocks past 2^32 re-read the first elements instead of the last 2^20 + 5 (so many that the two
// sums cannot agree by chance). Same inputs and oracle as PastTwoToThe31. Cost on an H200, per
// variant: ~52 GB moved, ~15 ms, plus the allocation.
class ReduceWideLargeGpu : public ::testing::TestWithParam<ReduceVariant> {};

TEST_P(ReduceWideLargeGpu, PastTwoToThe32) {
  const ReduceVariant v = GetParam();
  check_large_int_sum(v, (std::size_t{1} << 32) + (std::size_t{1} << 20) + 5,
                      "2^32 + 2^20 + 5 ints in [-2, 2], exact");
}

INSTANTIATE_TEST_SUITE_P(Ladder, ReduceWideLargeGpu, ::testing::ValuesIn(ch05::kAllReduceVariants),
                         [](const ::testing::TestParamInfo<ReduceVariant>& p) {
                           return std::string(ch05::to_string(p.param)) + "_n_4296015877";
                         });

// The stream contract (cudalab/testing.hpp, replay_from_capture): every kernel of every variant on
// the caller's stream. A launch without the stream argument runs on the legacy default stream while
// the call is recorded, not in the recorded graph: the replay leaves out poisoned, or sums partials
// the graph never wrote. One call before the capture: kOnePass checks a new workspace once, which
// synchronizes (not allowed while the stream is captured).
class ReduceStreamGpu : public ::testing::TestWithParam<ReduceVariant> {};

TEST_P(ReduceStreamGpu, AllWorkOnTheCallersStream) {
  CUDALAB_REQUIRE_GPU();
  const ReduceVariant v = GetParam();
  const std::size_t n = 100'003;
  Rng rng;
  const auto x = rng.uniform<int>(n, -1000, 1000);
  auto in = to_device(x);
  auto ws = make_workspace(n);
  (void)run_reduce(in.data(), n, v, ws);
  cudalab::testing::GuardedOutput<int> out(1);
  cudalab::testing::replay_from_capture(
      [&](cudaStream_t s) {
        ch05::reduce_sum(in.data(), out.data(), n, ws.data(), ws.bytes(), v, s);
      },
      [&] { out.repoison(); });
  long long want = 0;
  for (int e : x) want += e;
  EXPECT_EQ(out.result()[0], static_cast<int>(want))
      << "reduce_sum<int> " << ch05::to_string(v) << " (" << exercise_of(v)
      << ") replayed from a capture of its stream";
}

INSTANTIATE_TEST_SUITE_P(Ladder, ReduceStreamGpu, ::testing::ValuesIn(ch05::kAllReduceVariants),
                         [](const auto& p) {
                           return std::string(ch05::to_string(p.param)) + "_int";
                         });

// Identity: one workspace for every call (the one-pass variant keeps an arrival counter and an
// epoch in it between calls), the same size, other inputs and contents, on two streams in turn.
// Each call must sum its own input: nothing may be keyed on the size alone.
TEST(ReduceIdentityGpu, OneWorkspaceOtherInputsAndStreams) {
  CUDALAB_REQUIRE_GPU();
  const std::size_t n = (std::size_t{1} << 20) + 3;
  Rng rng;
  const std::vector<int> x1 = rng.uniform<int>(n, -1000, 1000), x2 = rng.uniform<int>(n, -7, 9);
  long long s1 = 0, s2 = 0;
  for (std::size_t i = 0; i < n; ++i) s1 += x1[i], s2 += x2[i];
  GuardedInput<int> in1(x1, 0), in2(x2, 1);
  Stream a, b;
  for (ReduceVariant v : {ReduceVariant::kVectorized, ReduceVariant::kOnePass}) {
    auto ws = make_workspace(n);
    DeviceBuffer<int> out(4);
    poison_device(out.data(), out.bytes());
    CUDALAB_CHECK(cudaDeviceSynchronize());  // the poison (legacy stream) lands first
    ch05::reduce_sum(in1.data(), out.data() + 0, n, ws.data(), ws.bytes(), v, a);
    CUDALAB_CHECK(cudaStreamSynchronize(a));
    ch05::reduce_sum(in2.data(), out.data() + 1, n, ws.data(), ws.bytes(), v, b);
    CUDALAB_CHECK(cudaStreamSynchronize(b));
    ch05::reduce_sum(in1.data(), out.data() + 2, n, ws.data(), ws.bytes(), v, b);
    CUDALAB_CHECK(cudaStreamSynchronize(b));
    ch05::reduce_sum(in2.data(), out.data() + 3, n, ws.data(), ws.bytes(), v, a);
    CUDALAB_CHECK(cudaDeviceSynchronize());
    const std::vector<int> want{static_cast<int>(s1), static_cast<int>(s2), static_cast<int>(s1),
                                static_cast<int>(s2)};
    EXPECT_MATCHES(compare(out.to_host(), want, {},
                           what(v, "int", n, 0,
                                "x1, x2 (+1 view), x1, x2 on streams a, b, b, a, "
                                "one workspace")));
  }
}

// The one-pass reduction's hand-off between blocks (partials published, an arrival counter, the
// last block reading every partial) under memory contention: a kernel on another stream hammers
// L2 with atomics while 30 reductions run, so stores and loads are delayed and reordered far more
// than on an idle GPU. Every result must be exact (ints) and the workspace clean afterwards.
TEST(ReduceContentionGpu, OnePassUnderMemoryContention) {
  CUDALAB_REQUIRE_GPU();
  const std::size_t n = (std::size_t{1} << 22) + 17;  // hundreds of blocks
  Rng rng;
  const std::vector<int> x = rng.uniform<int>(n, -1000, 1000);
  long long want = 0;
  for (int e : x) want += e;
  GuardedInput<int> in(x, 0);
  auto ws = make_workspace(n);
  Stream side, main;
  Contention contention;
  DeviceBuffer<int> out(30);
  poison_device(out.data(), out.bytes());
  CUDALAB_CHECK(cudaDeviceSynchronize());  // the poison (legacy stream) lands first
  contention.run(side, 20'000, 16);
  for (int call = 0; call < 30; ++call)
    ch05::reduce_sum(in.data(), out.data() + call, n, ws.data(), ws.bytes(),
                     ReduceVariant::kOnePass, main);
  CUDALAB_CHECK(cudaDeviceSynchronize());
  const std::vector<int> got = out.to_host();
  EXPECT_MATCHES(compare(got, std::vector<int>(30, static_cast<int>(want)), {},
                         what(ReduceVariant::kOnePass, "int", n, 0, "30 calls under contention")));
  EXPECT_NO_THROW(ch05::reduce_check_workspace(ws.data(), ws.bytes()));
}

TEST(ReduceEmptyGpu, ZeroElementsGiveZero) {
  CUDALAB_REQUIRE_GPU();
  auto ws = make_workspace(0);
  for (ReduceVariant v : ch05::kAllReduceVariants) {
    EXPECT_EQ(run_reduce<float>(nullptr, 0, v, ws), 0.0f) << what(v, "float", 0, 0, "empty");
    EXPECT_EQ(run_reduce<int>(nullptr, 0, v, ws), 0) << what(v, "int", 0, 0, "empty");
  }
}

TEST(ReduceArgs, RejectsBadArguments) {
  const std::size_t big = ch05::reduce_workspace_bytes(1000);
  EXPECT_GE(big, ch05::reduce_workspace_bytes(10));
  // Workspace too small (checked before any pointer), unknown variant, null pointers.
  EXPECT_THROW(
      ch05::reduce_sum(static_cast<const float*>(nullptr), nullptr, 1000, nullptr, big - 1),
      std::invalid_argument);
  EXPECT_THROW(ch05::reduce_sum(static_cast<const int*>(nullptr), nullptr, 1000, nullptr, big,
                                static_cast<ReduceVariant>(42)),
               std::invalid_argument);
  EXPECT_THROW(ch05::reduce_sum(static_cast<const float*>(nullptr), nullptr, 1000, nullptr, big),
               std::invalid_argument);
  EXPECT_THROW(ch05::reduce_sum(static_cast<const int*>(nullptr), nullptr, 0, nullptr, big),
               std::invalid_argument)
      << "out must be a device pointer even for n = 0";
  for (ReduceVariant v : ch05::kAllReduceVariants) EXPECT_STRNE(ch05::to_string(v), "unknown");
}

// Step 7's arrival counter left dirty (here planted by hand) must never yield a
// wrong sum. A workspace new to this thread is checked before the launch (throws); a workspace
// that goes dirty between calls is caught by the kernel (NaN instead of a sum, the workspace
// flagged), and reduce_check_workspace throws.
TEST(ReduceDirtyCounterGpu, ThrowsInsteadOfAWrongSum) {
  CUDALAB_REQUIRE_GPU();
  const std::size_t n = std::size_t{1} << 22;  // a grid of hundreds of blocks
  const DeviceBuffer<float> in = to_device(std::vector<float>(n, 1.0f));
  auto clean = make_workspace(n), dirty = make_workspace(n);
  const unsigned planted = 3;
  cudalab::testing::GuardedOutput<float> out(1);
  ch05::reduce_sum(in.data(), out.data(), n, clean.data(), clean.bytes(), ReduceVariant::kOnePass);
  CUDALAB_CHECK(cudaMemcpy(dirty.data(), &planted, sizeof planted, cudaMemcpyHostToDevice));
  EXPECT_THROW(ch05::reduce_sum(in.data(), out.data(), n, dirty.data(), dirty.bytes(),
                                ReduceVariant::kOnePass),
               std::runtime_error)
      << "a new workspace whose arrival counter is not 0";

  // `clean` goes dirty after its first (checked) use: the next call must not return a sum it
  // cannot trust.
  ch05::reduce_sum(in.data(), out.data(), n, clean.data(), clean.bytes(), ReduceVariant::kOnePass);
  CUDALAB_CHECK(cudaMemcpy(clean.data(), &planted, sizeof planted, cudaMemcpyHostToDevice));
  ch05::reduce_sum(in.data(), out.data(), n, clean.data(), clean.bytes(), ReduceVariant::kOnePass);
  CUDALAB_CHECK(cudaDeviceSynchronize());
  const float got = out.result()[0];
  EXPECT_TRUE(std::isnan(got) || got == static_cast<float>(n))
      << "a dirty counter gave the sum " << got;
  EXPECT_THROW(ch05::reduce_check_workspace(clean.data(), clean.bytes()), std::runtime_error);
  CUDALAB_CHECK(cudaMemset(clean.data(), 0, clean.bytes()));
  EXPECT_NO_THROW(ch05::reduce_check_workspace(clean.data(), clean.bytes()));
}
