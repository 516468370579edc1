// Chapter 8: bandwidth definitions, the alpha-beta cost model of a ring all-reduce and of a
// data-parallel training step, and the CPU oracle of the all-reduce.
#include <algorithm>
#include <cmath>

#include "ch08/ch08.hpp"
#include "cudalab/check.hpp"

namespace cudalab::ch08 {
namespace {

void require_ranks(int ranks) {
  require(ranks >= 1, "ranks", "must be at least 1");
}

void require_link(const Link& link) {
  require(std::isfinite(link.alpha_s) && link.alpha_s >= 0, "link",
          "alpha must be finite and >= 0");
  require(std::isfinite(link.busbw_gbs) && link.busbw_gbs > 0, "link",
          "busbw must be finite and > 0");
}

void require_bytes(double bytes) {
  require(std::isfinite(bytes) && bytes >= 0, "bytes", "must be finite and >= 0");
}

}  // namespace

double algbw_gbs(double bytes, double seconds) {
  require_bytes(bytes);
  require(std::isfinite(seconds) && seconds > 0, "seconds", "must be finite and > 0");
  return bytes / seconds / 1e9;
}

double allreduce_bus_factor(int ranks) {
  require_ranks(ranks);
  return 2.0 * (ranks - 1) / ranks;
}

double allreduce_busbw_gbs(double algbw, int ranks) {
  require(std::isfinite(algbw) && algbw >= 0, "algbw_gbs", "must be finite and >= 0");
  return algbw * allreduce_bus_factor(ranks);
}

double ring_allreduce_seconds(double bytes, int ranks, const Link& link) {
  require_bytes(bytes);
  require_ranks(ranks);
  require_link(link);
  if (ranks == 1) return 0.0;
  return 2.0 * (ranks - 1) * link.alpha_s +
         allreduce_bus_factor(ranks) * bytes / (link.busbw_gbs * 1e9);
}

double hierarchical_allreduce_seconds(double bytes, int nodes, int gpus_per_node, const Link& intra,
                                      const Link& inter) {
  require_bytes(bytes);
  require(nodes >= 1, "nodes", "must be at least 1");
  require(gpus_per_node >= 1, "gpus_per_node", "must be at least 1");
  require_link(intra);
  require_link(inter);
  const int g = gpus_per_node;
  // Reduce-scatter (and all-gather) inside the node: half of an all-reduce each.
  const double half_intra =
      g == 1 ? 0.0 : (g - 1) * intra.alpha_s + (g - 1.0) / g * bytes / (intra.busbw_gbs * 1e9);
  // Across nodes: g rings in parallel (one NIC per GPU), each all-reducing 1/g of the buffer.
  return 2.0 * half_intra + ring_allreduce_seconds(bytes / g, nodes, inter);
}

namespace {

void require_step(const TrainingStep& s) {
  require(std::isfinite(s.compute_s) && s.compute_s > 0, "step",
          "compute_s must be finite and > 0");
  require(std::isfinite(s.grad_bytes) && s.grad_bytes >= 0, "step",
          "grad_bytes must be finite and >= 0");
  require(s.backward_fraction >= 0 && s.backward_fraction <= 1, "step",
          "backward_fraction must be in [0, 1]");
  require(s.buckets >= 0, "step", "buckets must be >= 0");
}

template <class AllReduce>
double step_time(const TrainingStep& s, int ranks, AllReduce&& allreduce) {
  const double compute = s.strong_scaling ? s.compute_s / ranks : s.compute_s;
  if (ranks == 1) return compute;
  if (s.buckets == 0) return compute + allreduce(s.grad_bytes);
  const double backward = compute * s.backward_fraction;
  const double forward = compute - backward;
  const double per_bucket = allreduce(s.grad_bytes / s.buckets);
  double comm_end = 0;
  for (int k = 0; k < s.buckets; ++k) {
    const double ready = forward + backward * (k + 1) / s.buckets;
    comm_end = std::max(ready, comm_end) + per_bucket;
  }
  return std::max(compute, comm_end);
}

}  // namespace

double step_seconds(const TrainingStep& step, int ranks, const Link& link) {
  require_step(step);
  require_ranks(ranks);
  require_link(link);
  return step_time(step, ranks, [&](double b) { return ring_allreduce_seconds(b, ranks, link); });
}

double speedup(const TrainingStep& step, int ranks, const Link& link) {
  const double t1 = step_seconds(step, 1, link);
  const double tn = step_seconds(step, ranks, link);
  return step.strong_scaling ? t1 / tn : ranks * t1 / tn;
}

double hierarchical_step_seconds(const TrainingStep& step, int nodes, int gpus_per_node,
                                 const Link& intra, const Link& inter) {
  require_step(step);
  require(nodes >= 1, "nodes", "must be at least 1");
  require(gpus_per_node >= 1, "gpus_per_node", "must be at least 1");
  return step_time(step, nodes * gpus_per_node, [&](double b) {
    return hierarchical_allreduce_seconds(b, nodes, gpus_per_node, intra, inter);
  });
}

Link nvlink_h200() {
  // Stated assumptions (README): NCCL all-reduce busbw on two H200s, measured once: 31 GB/s at
  // 1 MiB and 325 GB/s at 1 GiB. busbw at 1 GiB is the bandwidth term; alpha is what makes 1 MiB
  // reach 31 GB/s: with n = 2, T = 2 alpha + bytes / busbw and busbw(1 MiB) = bytes / T.
  constexpr double kMiB = 1024.0 * 1024.0;
  constexpr double kBusbw = 325e9, kBusbw1MiB = 31e9;
  const double alpha = (kMiB / kBusbw1MiB - kMiB / kBusbw) / 2.0;
  return {"NVLink (H200, NCCL busbw 325 GB/s)", alpha, kBusbw / 1e9};
}

Link infiniband_ndr() {
  // Assumption, not a measurement: InfiniBand NDR, 400 Gb/s = 50 GB/s per GPU (one NIC each),
  // 5 us per step.
  return {"InfiniBand NDR (50 GB/s per GPU, assumed)", 5e-6, 50.0};
}

std::vector<float> allreduce_sum_oracle(const std::vector<std::vector<float>>& buffers) {
  require(!buffers.empty(), "buffers", "needs at least one rank");
  const std::size_t n = buffers[0].size();
  for (const auto& b : buffers) require(b.size() == n, "buffers", "every rank needs the same size");
  std::vector<double> acc(n, 0.0);
  for (const auto& b : buffers)
    for (std::size_t i = 0; i < n; ++i) acc[i] += b[i];
  return {acc.begin(), acc.end()};
}

}  // namespace cudalab::ch08
