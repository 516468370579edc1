// Exercise 8.3 — the ring all-reduce on devices: N ranks simulated on one GPU (N buffers, N
// streams, the same kernels and events as N GPUs) for n = 1..8 and sizes not divisible by n, then
// on every GPU present over P2P (skipped with "needs 2 GPUs" on one).
#include <gtest/gtest.h>

#include <stdexcept>
#include <vector>

#include "ch08/ch08.hpp"
#include "cudalab/check.hpp"
#include "cudalab/delay.hpp"
#include "cudalab/memory.hpp"
#include "cudalab/stream.hpp"
#include "multi_gpu_testing.hpp"

using namespace cudalab;
using namespace cudalab::ch08;

namespace {

// Runs the ring with rank r on devices[r] and checks every rank against the CPU sum. The inputs
// are written on the ranks' streams just before the call (no host wait: the ring must order its
// reads of a neighbour after them), and right after it each rank copies its result out and
// overwrites its buffer with NaNs on its own stream (the ring must keep that after the right
// neighbour's last read).
// delayed >= 0: that rank's stream is held back by a 20 ms delay (cudalab/delay.hpp) before its
// inputs are written, so a rank that reads its left neighbour without waiting for it reads a
// buffer that is not there yet, every time, not only when the scheduler happens to lose the race.
void check_ring(const std::vector<int>& devices, std::size_t count, int delayed = -1) {
  const int n = static_cast<int>(devices.size());
  const auto data = tests::rank_data(n, count);
  const std::vector<float> want = allreduce_sum_oracle(data);
  std::vector<DeviceBuffer<float>> bufs, outs;
  std::vector<cudaStream_t> streams(n);
  std::vector<float*> ptrs;
  for (int r = 0; r < n; ++r) {
    CUDALAB_CHECK(cudaSetDevice(devices[r]));
    bufs.emplace_back(count);
    outs.emplace_back(count);
    CUDALAB_CHECK(cudaStreamCreateWithFlags(&streams[r], cudaStreamNonBlocking));
    ptrs.push_back(bufs.back().data());
  }
  for (int r = 0; r < n; ++r) {
    CUDALAB_CHECK(cudaSetDevice(devices[r]));
    if (r == delayed) delay_stream(streams[r], kOrderingDelayUs);
    CUDALAB_CHECK(cudaMemsetAsync(ptrs[r], 0xff, count * sizeof(float), streams[r]));
    CUDALAB_CHECK(cudaMemcpyAsync(ptrs[r], data[r].data(), count * sizeof(float),
                                  cudaMemcpyHostToDevice, streams[r]));
  }
  CUDALAB_CHECK(cudaSetDevice(devices[0]));
  ring_allreduce(ptrs, devices, count, streams);
  int current = -1;
  CUDALAB_CHECK(cudaGetDevice(&current));
  EXPECT_EQ(current, devices[0]) << "ring_allreduce changed the current device";
  for (int r = 0; r < n; ++r) {
    CUDALAB_CHECK(cudaSetDevice(devices[r]));
    CUDALAB_CHECK(cudaMemcpyAsync(outs[r].data(), ptrs[r], count * sizeof(float),
                                  cudaMemcpyDeviceToDevice, streams[r]));
    CUDALAB_CHECK(cudaMemsetAsync(ptrs[r], 0xff, count * sizeof(float), streams[r]));
  }
  for (int r = 0; r < n; ++r) {
    CUDALAB_CHECK(cudaSetDevice(devices[r]));
    CUDALAB_CHECK(cudaStreamSynchronize(streams[r]));
    CUDALAB_CHECK(cudaStreamDestroy(streams[r]));
  }
  CUDALAB_CHECK(cudaSetDevice(devices[0]));
  for (int r = 0; r < n; ++r)
    EXPECT_EQ(outs[r].to_host(), want) << "rank " << r << " of " << n << ", count " << count;
}

}  // namespace

TEST(RingGpu, SimulatedRanksOnOneGpuEqualTheSum) {
  CUDALAB_REQUIRE_GPU();
  for (int n = 1; n <= 8; ++n)
    for (std::size_t count : {std::size_t{1}, static_cast<std::size_t>(n + 1), std::size_t{1000},
                              std::size_t{100'003}, std::size_t{(1u << 20) + 3}}) {
      SCOPED_TRACE(::testing::Message() << n << " ranks on GPU 0, count " << count);
      check_ring(std::vector<int>(n, 0), count);
    }
}

// Ordering: 4 simulated ranks, each one in turn delayed before its inputs are written. Every step
// must wait for its left neighbour's previous step (and the first for its inputs).
TEST(RingOrderingGpu, EachRankDelayedInTurn) {
  CUDALAB_REQUIRE_GPU();
  // A first round without a delay loads the ring's kernels (lazy loading may synchronize the
  // context at a first launch: cudalab/delay.hpp), so that every delayed round below races.
  check_ring(std::vector<int>(4, 0), 100'003);
  for (int delayed = 0; delayed < 4; ++delayed) {
    SCOPED_TRACE(::testing::Message()
                 << "4 ranks on GPU 0, rank " << delayed << " delayed 20 ms before its inputs");
    check_ring(std::vector<int>(4, 0), 100'003, delayed);
  }
}

TEST(RingGpu, ZeroCountAndOneRankAreNoOps) {
  CUDALAB_REQUIRE_GPU();
  check_ring({0}, 1000);
  std::vector<float*> ptrs{nullptr, nullptr};
  std::vector<int> devices{0, 0};
  std::vector<cudaStream_t> streams{nullptr, nullptr};
  EXPECT_NO_THROW(ring_allreduce(ptrs, devices, 0, streams));
}

TEST(RingGpu, RejectsBadArguments) {
  CUDALAB_REQUIRE_GPU();
  DeviceBuffer<float> a(8), b(8);
  std::vector<float*> ptrs{a.data(), b.data()};
  std::vector<int> devices{0, 0};
  std::vector<cudaStream_t> streams{nullptr, nullptr};
  EXPECT_THROW(ring_allreduce({}, {}, 8, {}), std::invalid_argument);
  EXPECT_THROW(ring_allreduce(ptrs, std::vector<int>{0}, 8, streams), std::invalid_argument);
  EXPECT_THROW(ring_allreduce(ptrs, devices, 8, std::vector<cudaStream_t>{nullptr}),
               std::invalid_argument);
  EXPECT_THROW(ring_allreduce(ptrs, std::vector<int>{0, 999}, 8, streams), std::invalid_argument);
  std::vector<float> host(8);
  std::vector<float*> bad{a.data(), host.data()};
  EXPECT_THROW(ring_allreduce(bad, devices, 8, streams), std::invalid_argument);
}

TEST(RingMultiGpu, EveryGpuOverP2PEqualsTheSum) {
  CH08_REQUIRE_GPUS(2);
  const int g = device_count();
  std::vector<int> all(g);
  for (int d = 0; d < g; ++d) all[d] = d;
  enable_peer_access(all);
  for (int n = 2; n <= g; ++n)
    for (std::size_t count : {std::size_t{1}, std::size_t{1000}, std::size_t{(1u << 22) + 7}}) {
      SCOPED_TRACE(::testing::Message() << n << " GPUs, count " << count);
      check_ring(std::vector<int>(all.begin(), all.begin() + n), count);
    }
}

TEST(RingMultiGpu, TwoRanksPerGpu) {
  CH08_REQUIRE_GPUS(2);
  const std::vector<int> devices{0, 1, 0, 1};
  enable_peer_access(std::vector<int>{0, 1});
  check_ring(devices, 100'003);
}
