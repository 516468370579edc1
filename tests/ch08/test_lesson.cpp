// Chapter 8's lesson, reference track only (no exercise): the bandwidth definitions and the cost
// model on the CPU; the topology tools and the NCCL wrapper on a one-GPU communicator.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdlib>
#include <stdexcept>
#include <vector>

#include "ch08/ch08.hpp"
#include "cudalab/check.hpp"
#include "cudalab/memory.hpp"
#include "multi_gpu_testing.hpp"
#if CUDALAB_HAVE_NCCL
#include "ch08/nccl.hpp"
#endif

using namespace cudalab;
using namespace cudalab::ch08;

namespace {
constexpr double kMiB = 1024.0 * 1024.0;
}

TEST(Bandwidth, AlgbwAndBusbwAsNcclTests) {
  EXPECT_DOUBLE_EQ(algbw_gbs(1e9, 1.0), 1.0);
  EXPECT_DOUBLE_EQ(algbw_gbs(256 * kMiB, 1e-3), 256 * kMiB / 1e6);
  EXPECT_DOUBLE_EQ(allreduce_bus_factor(1), 0.0);
  EXPECT_DOUBLE_EQ(allreduce_bus_factor(2), 1.0);
  EXPECT_DOUBLE_EQ(allreduce_bus_factor(4), 1.5);
  EXPECT_DOUBLE_EQ(allreduce_bus_factor(8), 1.75);
  EXPECT_DOUBLE_EQ(allreduce_busbw_gbs(100.0, 8), 175.0);
  EXPECT_THROW(algbw_gbs(1.0, 0.0), std::invalid_argument);
  EXPECT_THROW(algbw_gbs(-1.0, 1.0), std::invalid_argument);
  EXPECT_THROW(allreduce_bus_factor(0), std::invalid_argument);
  EXPECT_THROW(allreduce_busbw_gbs(NAN, 2), std::invalid_argument);
}

TEST(CostModel, RingAllReduceAlphaBeta) {
  const Link link{"test", 1e-6, 100.0};
  EXPECT_DOUBLE_EQ(ring_allreduce_seconds(1e9, 1, link), 0.0);
  EXPECT_DOUBLE_EQ(ring_allreduce_seconds(1e9, 2, link), 2e-6 + 1e9 / 100e9);
  EXPECT_DOUBLE_EQ(ring_allreduce_seconds(1e9, 8, link), 14e-6 + 1.75 * 1e9 / 100e9);
  EXPECT_DOUBLE_EQ(ring_allreduce_seconds(0, 4, link), 6e-6);  // latency only
  EXPECT_THROW(ring_allreduce_seconds(1, 0, link), std::invalid_argument);
  EXPECT_THROW(ring_allreduce_seconds(1, 2, Link{"bad", 0, 0}), std::invalid_argument);
  EXPECT_THROW(ring_allreduce_seconds(1, 2, Link{"bad", -1, 1}), std::invalid_argument);
}

TEST(CostModel, NvlinkAssumptionsReproduceTheAnchors) {
  // busbw = algbw on two ranks: the fitted link gives back the measured 31 GB/s at 1 MiB, and
  // tends to 325 GB/s for large buffers.
  const Link nv = nvlink_h200();
  EXPECT_NEAR(kMiB / ring_allreduce_seconds(kMiB, 2, nv) / 1e9, 31.0, 1e-9);
  EXPECT_NEAR(1024 * kMiB / ring_allreduce_seconds(1024 * kMiB, 2, nv) / 1e9, 325.0, 325.0 * 0.02);
  EXPECT_GT(nv.alpha_s, 1e-6);
  EXPECT_LT(nv.alpha_s, 1e-4);
  EXPECT_DOUBLE_EQ(infiniband_ndr().busbw_gbs, 50.0);
}

TEST(CostModel, OneAllReduceAtTheEnd) {
  const Link link{"test", 0.0, 1.0};  // 1 GB/s, no latency: T_ar(2e9 bytes, 2 ranks) = 2 s
  TrainingStep s{3.0, 2e9, 2.0 / 3.0, 0, false};
  EXPECT_DOUBLE_EQ(step_seconds(s, 1, link), 3.0);
  EXPECT_DOUBLE_EQ(step_seconds(s, 2, link), 5.0);
  EXPECT_DOUBLE_EQ(speedup(s, 2, link), 2 * 3.0 / 5.0);
  s.strong_scaling = true;
  EXPECT_DOUBLE_EQ(step_seconds(s, 2, link), 1.5 + 2.0);
  EXPECT_DOUBLE_EQ(speedup(s, 2, link), 3.0 / 3.5);
}

TEST(CostModel, BucketsOverlapTheBackwardPass) {
  // Forward 1 s, backward 2 s, two buckets of 1 s of all-reduce each: bucket 0 is ready at 2 s and
  // ends at 3 s, bucket 1 is ready at 3 s and ends at 4 s: one second of communication is hidden.
  const Link link{"test", 0.0, 1.0};
  const TrainingStep s{3.0, 2e9, 2.0 / 3.0, 2, false};
  EXPECT_DOUBLE_EQ(step_seconds(s, 2, link), 4.0);
  // Communication far below compute: the step is the compute, the speedup is n.
  const TrainingStep cheap{3.0, 1e3, 2.0 / 3.0, 4, false};
  EXPECT_NEAR(speedup(cheap, 8, link), 8.0, 1e-4);
  // More buckets never hurt without latency, and never beat max(compute, forward + all-reduce).
  for (int k = 1; k <= 16; ++k) {
    TrainingStep b{3.0, 2e9, 2.0 / 3.0, k, false};
    EXPECT_LE(step_seconds(b, 2, link), 5.0 + 1e-12);
    EXPECT_GE(step_seconds(b, 2, link), 3.0 - 1e-12);
  }
  // With latency, too many buckets cost more than they hide.
  const Link slow{"lat", 0.05, 1.0};
  TrainingStep few{3.0, 2e9, 2.0 / 3.0, 4, false}, many{3.0, 2e9, 2.0 / 3.0, 4096, false};
  EXPECT_LT(step_seconds(few, 2, slow), step_seconds(many, 2, slow));
  EXPECT_THROW(step_seconds(TrainingStep{0.0, 1, 0.5, 0, false}, 2, link), std::invalid_argument);
  EXPECT_THROW(step_seconds(TrainingStep{1.0, 1, 1.5, 0, false}, 2, link), std::invalid_argument);
  EXPECT_THROW(step_seconds(TrainingStep{1.0, 1, 0.5, -1, false}, 2, link), std::invalid_argument);
}

TEST(CostModel, HierarchicalAllReduce) {
  const Link intra{"nv", 2e-6, 300.0}, inter{"ib", 5e-6, 50.0};
  // One node: reduce-scatter + all-gather inside it is exactly the ring all-reduce.
  EXPECT_NEAR(hierarchical_allreduce_seconds(1e9, 1, 8, intra, inter),
              ring_allreduce_seconds(1e9, 8, intra), 1e-15);
  // One GPU per node: the ring across nodes alone.
  EXPECT_DOUBLE_EQ(hierarchical_allreduce_seconds(1e9, 2, 1, intra, inter),
                   ring_allreduce_seconds(1e9, 2, inter));
  // 2 x 8: slower than 8 GPUs in one node, faster than a flat ring of 16 over the slow link.
  const double two_nodes = hierarchical_allreduce_seconds(1e9, 2, 8, intra, inter);
  EXPECT_GT(two_nodes, ring_allreduce_seconds(1e9, 8, intra));
  EXPECT_LT(two_nodes, ring_allreduce_seconds(1e9, 16, inter));
  const TrainingStep s{1.0, 1e9, 2.0 / 3.0, 8, false};
  EXPECT_NEAR(hierarchical_step_seconds(s, 1, 8, intra, inter), step_seconds(s, 8, intra), 1e-12);
  EXPECT_THROW(hierarchical_allreduce_seconds(1, 0, 8, intra, inter), std::invalid_argument);
  EXPECT_THROW(hierarchical_allreduce_seconds(1, 2, 0, intra, inter), std::invalid_argument);
}

TEST(TopologyGpu, PeerMatrixIsSquareWithSelfAccess) {
  CUDALAB_REQUIRE_GPU();
  const auto m = peer_matrix();
  ASSERT_EQ(static_cast<int>(m.size()), device_count());
  for (std::size_t i = 0; i < m.size(); ++i) {
    ASSERT_EQ(m[i].size(), m.size());
    EXPECT_TRUE(m[i][i].access);
  }
  EXPECT_GT(p2p_bandwidth_gbs(0, 0, 1 << 20, 2, false), 0.0);  // a device-to-device copy on one GPU
  EXPECT_THROW(p2p_bandwidth_gbs(0, device_count(), 1 << 20, 2, false), std::invalid_argument);
  EXPECT_THROW(p2p_bandwidth_gbs(0, 0, 0, 2, false), std::invalid_argument);
  const double us = p2p_latency_us(0, 0, 100);  // a 4-byte copy: microseconds, not milliseconds
  EXPECT_GT(us, 0.0);
  EXPECT_LT(us, 1000.0);
  EXPECT_THROW(p2p_latency_us(0, device_count(), 100), std::invalid_argument);
  EXPECT_THROW(p2p_latency_us(0, 0, 0), std::invalid_argument);
}

TEST(TopologyGpu, NvlinkMatrixCountsEveryActiveLinkOnce) {
  CUDALAB_REQUIRE_GPU();
  const NvlinkMatrix m = nvlink_matrix();
  if (!m.available) GTEST_SKIP() << "needs NVML: " << m.why;
  const int n = device_count();
  ASSERT_EQ(static_cast<int>(m.links.size()), n);
  ASSERT_EQ(static_cast<int>(m.other.size()), n);
  ASSERT_EQ(static_cast<int>(m.active.size()), n);
  for (int i = 0; i < n; ++i) {
    ASSERT_EQ(static_cast<int>(m.links[i].size()), n);
    EXPECT_EQ(m.links[i][i], 0) << "a link from device " << i << " to itself";
    int sum = m.other[i];
    for (int j = 0; j < n; ++j) {
      EXPECT_EQ(m.links[i][j], m.links[j][i])
          << "a link is seen from both ends: " << i << ", " << j;
      sum += m.links[i][j];
    }
    EXPECT_EQ(sum, m.active[i]) << "device " << i;
    EXPECT_LE(m.active[i], 36) << "NVML_NVLINK_MAX_LINKS";
  }
}

TEST(TopologyMultiGpu, P2PBandwidthBothWays) {
  CH08_REQUIRE_GPUS(2);
  const double one = p2p_bandwidth_gbs(0, 1, 64 << 20, 3, false);
  const double both = p2p_bandwidth_gbs(0, 1, 64 << 20, 3, true);
  EXPECT_GT(one, 0.0);
  EXPECT_GT(both, 0.0);
}

#if CUDALAB_HAVE_NCCL
TEST(NcclGpu, OneGpuCommunicatorRunsTheFourCollectives) {
  CUDALAB_REQUIRE_GPU();
  const std::vector<int> devices{0};
  const NcclComms comms(devices);
  ASSERT_EQ(comms.size(), 1);
  ASSERT_NE(std::getenv("NCCL_NVLS_ENABLE"), nullptr)
      << "NcclComms sets NCCL_NVLS_ENABLE (to 0 unless set)";
  const std::size_t count = 100'003;
  const auto data = tests::rank_data(1, count)[0];
  const DeviceBuffer<float> in{std::span<const float>(data)};
  DeviceBuffer<float> out(count);
  const std::vector<const float*> send{in.data()};
  const std::vector<float*> recv{out.data()};
  const std::vector<cudaStream_t> streams{nullptr};
  all_reduce_sum(comms, send, recv, count, streams);
  CUDALAB_CHECK(cudaDeviceSynchronize());
  EXPECT_EQ(out.to_host(), data) << "all-reduce";
  CUDALAB_CHECK(cudaMemset(out.data(), 0, out.bytes()));
  all_gather(comms, send, recv, count, streams);
  CUDALAB_CHECK(cudaDeviceSynchronize());
  EXPECT_EQ(out.to_host(), data) << "all-gather";
  CUDALAB_CHECK(cudaMemset(out.data(), 0, out.bytes()));
  reduce_scatter_sum(comms, send, recv, count, streams);
  CUDALAB_CHECK(cudaDeviceSynchronize());
  EXPECT_EQ(out.to_host(), data) << "reduce-scatter";
  CUDALAB_CHECK(cudaMemset(out.data(), 0, out.bytes()));
  broadcast(comms, send, recv, count, 0, streams);
  CUDALAB_CHECK(cudaDeviceSynchronize());
  EXPECT_EQ(out.to_host(), data) << "broadcast";
  EXPECT_THROW(broadcast(comms, send, recv, count, 1, streams), std::invalid_argument);
  EXPECT_THROW(all_reduce_sum(comms, send, recv, count, {}), std::invalid_argument);
  EXPECT_THROW(NcclComms(std::vector<int>{0, 0}), std::invalid_argument);
  EXPECT_THROW(NcclComms(std::vector<int>{}), std::invalid_argument);
  int current = -1;
  CUDALAB_CHECK(cudaGetDevice(&current));
  EXPECT_EQ(current, 0) << "the collectives restore the current device";
}

TEST(NcclMultiGpu, AllReduceOnEveryGpuEqualsTheSum) {
  CH08_REQUIRE_GPUS(2);
  const int g = device_count();
  std::vector<int> devices(g);
  for (int d = 0; d < g; ++d) devices[d] = d;
  const NcclComms comms(devices);
  const std::size_t count = (1u << 20) + 3;
  const auto data = tests::rank_data(g, count);
  std::vector<DeviceBuffer<float>> bufs;
  std::vector<const float*> send;
  std::vector<float*> recv;
  std::vector<cudaStream_t> streams(g, nullptr);
  for (int r = 0; r < g; ++r) {
    CUDALAB_CHECK(cudaSetDevice(r));
    bufs.emplace_back(std::span<const float>(data[r]));
    send.push_back(bufs.back().data());
    recv.push_back(bufs.back().data());
  }
  all_reduce_sum(comms, send, recv, count, streams);
  const auto want = allreduce_sum_oracle(data);
  for (int r = 0; r < g; ++r) {
    CUDALAB_CHECK(cudaSetDevice(r));
    CUDALAB_CHECK(cudaDeviceSynchronize());
    EXPECT_EQ(bufs[r].to_host(), want) << "rank " << r;
  }
  CUDALAB_CHECK(cudaSetDevice(0));
}
#endif
