// Exercise 7.1 — run_chunked: the chunked pipeline over several streams. Correct on every size and
// chunk count, and structurally asynchronous: it returns while streams[0] is held by a Gate, and
// the chunks of the other streams finish meanwhile (no timing is asserted; bench_ch07 measures
// speed).
#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <string>
#include <tuple>
#include <vector>

#include "ch07/ch07.hpp"
#include "cudalab/delay.hpp"
#include "cudalab/device_fill.hpp"
#include "cudalab/random.hpp"
#include "cudalab/testing.hpp"
#include "streams_testing.hpp"

using namespace cudalab;
using ch07_test::Streams;

namespace {

constexpr int kIters = 7;
constexpr float kPoison = -12345.0f;

// [begin, end) of chunk c under the contract (the first n % chunks chunks are one longer).
std::pair<std::size_t, std::size_t> chunk_range(std::size_t n, int chunks, int c) {
  const std::size_t k = static_cast<std::size_t>(chunks), i = static_cast<std::size_t>(c);
  const std::size_t base = n / k, extra = n % k;
  const std::size_t begin = i * base + (i < extra ? i : extra);
  return {begin, begin + base + (i < extra ? 1 : 0)};
}

void fill_input(ch07::OverlapBuffers& b, Rng& rng) {
  rng.fill_uniform<float>(b.host_in.span(), -4.0f, 4.0f);
  for (float& v : b.host_out.span()) v = kPoison;
}

// Index of the first wrong element in [begin, end), or end.
std::size_t first_wrong(const ch07::OverlapBuffers& b, std::size_t begin, std::size_t end) {
  for (std::size_t i = begin; i < end; ++i)
    if (b.host_out.data()[i] != ch07::process_oracle(b.host_in.data()[i], kIters)) return i;
  return end;
}

using Case = std::tuple<std::size_t, int, int>;  // n, chunks, streams
std::string case_name(const ::testing::TestParamInfo<Case>& p) {
  return "n_" + std::to_string(std::get<0>(p.param)) + "_chunks_" +
         std::to_string(std::get<1>(p.param)) + "_streams_" + std::to_string(std::get<2>(p.param));
}

}  // namespace

class RunChunkedGpu : public ::testing::TestWithParam<Case> {};

TEST_P(RunChunkedGpu, MatchesTheSerialPipeline) {
  CUDALAB_REQUIRE_GPU();
  const auto [n, chunks, nstreams] = GetParam();
  Rng rng;
  ch07::OverlapBuffers b(n);
  fill_input(b, rng);
  Streams streams(nstreams);
  ch07::run_chunked(b, kIters, chunks, streams.raw);
  streams.synchronize();
  const std::size_t bad = first_wrong(b, 0, n);
  EXPECT_EQ(bad, n) << "run_chunked (exercise 7.1, n = " << n << ", chunks = " << chunks
                    << ", streams = " << nstreams << "): element " << bad << " is "
                    << (bad < n ? b.host_out.data()[bad] : 0.0f) << ", expected "
                    << (bad < n ? ch07::process_oracle(b.host_in.data()[bad], kIters) : 0.0f)
                    << (bad < n && b.host_out.data()[bad] == kPoison
                            ? " (never written: a chunk or the tail is missing)"
                            : "");
}

INSTANTIATE_TEST_SUITE_P(Sizes, RunChunkedGpu,
                         ::testing::Values(Case{1, 1, 1}, Case{1, 4, 2}, Case{5, 8, 3},
                                           Case{1000, 1, 1}, Case{1000, 3, 2}, Case{4097, 8, 4},
                                           Case{4097, 7, 3}, Case{(1u << 20) + 3, 16, 4},
                                           Case{(1u << 20) + 3, 5, 1}, Case{300000, 64, 8}),
                         case_name);

class OverlapBuffersGpu : public ::testing::Test {};

TEST_F(OverlapBuffersGpu, HostBuffersArePageLocked) {
  CUDALAB_REQUIRE_GPU();
  ch07::OverlapBuffers b(1000);
  for (const float* p : {b.host_in.data(), b.host_out.data()}) {
    cudaPointerAttributes attr{};
    ASSERT_EQ(cudaPointerGetAttributes(&attr, p), cudaSuccess);
    EXPECT_EQ(attr.type, cudaMemoryTypeHost)
        << "OverlapBuffers' host arrays must be pinned (cudaMallocHost): with pageable memory "
           "every "
           "cudaMemcpyAsync waits on the host and the chunks cannot overlap";
  }
}

class RunChunkedStructureGpu : public ::testing::Test {};

TEST_F(RunChunkedStructureGpu, ReturnsAndOtherStreamsFinishWhileTheFirstIsHeld) {
  CUDALAB_REQUIRE_GPU();
  CH07_SKIP_IN_SYNC_BUILD();
  constexpr int kStreams = 3, kChunks = 7;
  const std::size_t n = 70001;
  Rng rng;
  ch07::OverlapBuffers b(n);
  fill_input(b, rng);
  Streams streams(kStreams);
  {
    // Every stream runs its chunk once while nothing is held (ch07_test::warm_up says why).
    ch07::OverlapBuffers warm(kChunks);
    fill_input(warm, rng);
    ch07_test::warm_up([&] { ch07::run_chunked(warm, kIters, kChunks, streams.raw); });
  }
  ch07::Gate gate;
  gate.hold(streams.raw[0], 8.0);

  ch07::run_chunked(b, kIters, kChunks, streams.raw);
  const bool returned_while_held = !gate.released();
  for (int s = 1; s < kStreams; ++s) streams.owned[s].synchronize();
  const bool others_done_while_held = !gate.released();
  // What the other streams finished while streams[0] was held.
  std::vector<std::string> problems;
  for (int c = 0; c < kChunks; ++c) {
    const auto [begin, end] = chunk_range(n, kChunks, c);
    if (c % kStreams != 0) {
      const std::size_t bad = first_wrong(b, begin, end);
      if (bad != end)
        problems.push_back(
            "chunk " + std::to_string(c) + " (streams[" + std::to_string(c % kStreams) +
            "]) was not finished when its stream was: element " + std::to_string(bad));
    } else if (others_done_while_held) {
      for (std::size_t i = begin; i < end; ++i)
        if (b.host_out.data()[i] != kPoison) {
          problems.push_back("chunk " + std::to_string(c) +
                             " was written while streams[0], its stream, was held: "
                             "chunk c must run on streams[c % streams.size()]");
          break;
        }
    }
  }
  gate.open();
  streams.synchronize();
  EXPECT_TRUE(returned_while_held)
      << "run_chunked did not return while streams[0] was held: it waited on the host (a "
         "synchronize, a "
         "blocking cudaMemcpy, or pageable host memory, which makes cudaMemcpyAsync wait)";
  EXPECT_TRUE(others_done_while_held)
      << "streams[1..] could not finish while streams[0] was held: the chunks depend on each other "
         "(one stream for all, or a wait on streams[0])";
  for (const auto& p : problems) ADD_FAILURE() << p;
  EXPECT_FALSE(gate.timed_out());
  const std::size_t bad = first_wrong(b, 0, n);
  EXPECT_EQ(bad, n) << "after the gate opened, element " << bad << " is wrong";
}

// Arguments: refused before any CUDA call (n = 0 buffers allocate nothing), on CPU machines too.
// Ordering: each chunk's copy in, kernel and copy out must follow one another on the chunk's
// stream. One stream at a time is held back by a 20 ms delay before the call (cudalab/delay.hpp):
// a kernel or a copy out enqueued on any other stream than its chunk's copy in runs before its
// input is there (the device buffers are poisoned first), every time, instead of only when the
// scheduler happens to lose the race.
TEST(RunChunkedOrderingGpu, EveryStageWaitsForTheOneBeforeOnItsStream) {
  CUDALAB_REQUIRE_GPU();
  const std::size_t n = (1u << 16) + 5;
  const int chunks = 6, nstreams = 3;
  Rng rng;
  ch07::OverlapBuffers b(n);
  Streams streams(nstreams);
  for (int held = 0; held < nstreams; ++held) {
    fill_input(b, rng);
    poison_device(b.dev_in.data(), b.dev_in.bytes());
    poison_device(b.dev_out.data(), b.dev_out.bytes());
    CUDALAB_CHECK(cudaDeviceSynchronize());
    delay_stream(streams.raw[static_cast<std::size_t>(held)], kOrderingDelayUs);
    ch07::run_chunked(b, kIters, chunks, streams.raw);
    CUDALAB_CHECK(cudaDeviceSynchronize());
    const std::size_t bad = first_wrong(b, 0, n);
    EXPECT_EQ(bad, n) << "run_chunked (exercise 7.1, n = " << n
                      << ", 6 chunks on 3 streams, stream " << held
                      << " delayed 20 ms before the call): element " << bad << " is "
                      << (bad < n ? b.host_out.data()[bad] : 0.0f) << ", expected "
                      << (bad < n ? ch07::process_oracle(b.host_in.data()[bad], kIters) : 0.0f)
                      << ": a stage on another stream than its chunk's copy in did not wait for it";
  }
}

TEST(RunChunkedArgs, RejectsBadArgumentsByName) {
  ch07::OverlapBuffers b(0);
  cudaStream_t fake = reinterpret_cast<cudaStream_t>(0x1);
  std::vector<cudaStream_t> one{fake}, with_null{fake, nullptr}, none;
  cudalab::testing::expect_throws_naming([&] { ch07::run_chunked(b, 1, 0, one); }, "chunks");
  cudalab::testing::expect_throws_naming([&] { ch07::run_chunked(b, 1, 2, none); }, "streams");
  cudalab::testing::expect_throws_naming([&] { ch07::run_chunked(b, 1, 2, with_null); }, "streams");
  cudalab::testing::expect_throws_naming([&] { ch07::run_chunked(b, -1, 2, one); }, "iters");
}

TEST(RunChunkedArgs, EmptyBatchIsANoOp) {
  ch07::OverlapBuffers b(0);
  std::vector<cudaStream_t> one{reinterpret_cast<cudaStream_t>(0x1)};
  EXPECT_NO_THROW(ch07::run_chunked(b, 3, 4, one));
}
