// Chapter 8 — multi-GPU: the ring all-reduce by hand (schedule, CPU simulation, N ranks on one GPU
// or on N GPUs over P2P), NCCL, and the cost model that says when more GPUs pay.
//
// Every function validates its arguments (std::invalid_argument naming the argument); every CUDA
// and NCCL call is checked (cudalab::CudaError, cudalab::LibraryError).
#pragma once

#include <cuda_runtime_api.h>

#include <cstddef>
#include <span>
#include <string>
#include <vector>

namespace cudalab::ch08 {

// ---------------------------------------------------------------------------------------------
// Bandwidth as nccl-tests reports it, for an all-reduce of `bytes` per rank over `ranks` ranks
// that took `seconds`: algbw = bytes / seconds (what the caller sees), busbw = algbw * 2(n-1)/n
// (what each link carries: the ring moves 2(n-1)/n of the buffer through every rank, so busbw is
// comparable across n and with the link's peak). In GB/s (1e9 bytes). n = 1: busbw = 0.
double algbw_gbs(double bytes, double seconds);
double allreduce_busbw_gbs(double algbw_gbs, int ranks);
// The factor 2(n-1)/n itself (0 for n = 1).
double allreduce_bus_factor(int ranks);

// ---------------------------------------------------------------------------------------------
// The cost model (cpu/cost_model.cpp). A link is alpha (latency per message step, seconds) and
// busbw (GB/s, the bus bandwidth an all-reduce of large buffers reaches on it). A ring all-reduce
// of `bytes` over n ranks has 2(n-1) steps of bytes/n each:
//   T_ar(bytes, n) = 2(n-1) * alpha + 2(n-1)/n * bytes / busbw          (0 for n = 1)
struct Link {
  std::string name;
  double alpha_s = 0;    // per step
  double busbw_gbs = 0;  // large-message bus bandwidth
};
double ring_allreduce_seconds(double bytes, int ranks, const Link& link);

// A data-parallel training step: `compute_s` of forward + backward on one GPU for the global
// batch (weak scaling keeps the per-GPU batch: compute_s per GPU whatever n; strong scaling splits
// the batch: compute_s / n), `grad_bytes` of gradients, all-reduced in `buckets` equal buckets.
// The backward pass takes `backward_fraction` of the compute; bucket k is ready after
// (k+1)/buckets of the backward pass and its all-reduce starts then (or when the previous bucket's
// all-reduce ends, one at a time on the communication stream). buckets = 0: one all-reduce after
// the backward pass, no overlap.
struct TrainingStep {
  double compute_s = 0;
  double grad_bytes = 0;
  double backward_fraction = 2.0 / 3.0;
  int buckets = 0;
  bool strong_scaling = false;
};
// The step time on n GPUs (n = 1: compute only, no communication).
double step_seconds(const TrainingStep& step, int ranks, const Link& link);
// Throughput speedup of n GPUs over one: samples per second ratio (weak scaling: n * T1 / Tn;
// strong scaling: T1 / Tn).
double speedup(const TrainingStep& step, int ranks, const Link& link);

// The links the chapter's predictions use, from its stated assumptions (README, "When more GPUs
// pay"): NVLink between H200s (busbw 325 GB/s at 1 GiB, measured once on two H200s with NCCL;
// alpha fitted so that 1 MiB gives ~31 GB/s busbw) and InfiniBand NDR (400 Gb/s = 50 GB/s per GPU,
// an assumption, not a measurement; alpha 5 us per step).
Link nvlink_h200();
Link infiniband_ndr();
// Two-level all-reduce across nodes (the hierarchical schedule NCCL approximates): reduce-scatter
// inside the node, all-reduce across nodes of 1/g of the buffer, all-gather inside the node.
double hierarchical_allreduce_seconds(double bytes, int nodes, int gpus_per_node, const Link& intra,
                                      const Link& inter);
// The training step on nodes x gpus_per_node GPUs with the two-level all-reduce.
double hierarchical_step_seconds(const TrainingStep& step, int nodes, int gpus_per_node,
                                 const Link& intra, const Link& inter);

// ---------------------------------------------------------------------------------------------
// The ring all-reduce's schedule (reference/ring.cpp; pure functions, no GPU).
// The buffer of `count` elements is cut into `ranks` contiguous chunks that differ in size by at
// most one element, the first count % ranks chunks one longer.
struct Chunk {
  std::size_t offset = 0;
  std::size_t count = 0;
  friend bool operator==(const Chunk&, const Chunk&) = default;
};
Chunk ring_chunk(std::size_t count, int ranks, int chunk);

// One step of rank `rank`: which chunk it sends to rank + 1, which it receives from rank - 1, and
// whether it adds the received chunk into its own (reduce-scatter, steps 0 .. n-2) or overwrites
// its own with it (all-gather, steps n-1 .. 2n-3). After the reduce-scatter, rank r holds the full
// sum of chunk (r + 1) mod n.
struct RingStep {
  int send_chunk = 0;
  int recv_chunk = 0;
  bool reduce = false;
  friend bool operator==(const RingStep&, const RingStep&) = default;
};
int ring_steps(int ranks);  // 2(n - 1)
RingStep ring_step(int ranks, int rank, int step);

// The ring simulated on the CPU: every rank's buffer (same size) replaced by the element-wise sum
// of all of them, following ring_step and ring_chunk, all ranks' sends of a step happening at once.
void ring_allreduce_cpu(std::vector<std::vector<float>>& buffers);
// The oracle: the plain element-wise sum, in double (cpu/).
std::vector<float> allreduce_sum_oracle(const std::vector<std::vector<float>>& buffers);

// ---------------------------------------------------------------------------------------------
// The ring on devices (reference/ring.cu). Rank r's buffer `buffers[r]` (count floats) lives on
// device `devices[r]` and its work runs on `streams[r]` (a stream of that device). Ranks may share
// a device: N ranks simulated on one GPU run the same schedule, the same kernels and the same
// cross-stream events as N GPUs. A step is one kernel per rank that reads the left neighbour's
// chunk (peer memory when the devices differ: call enable_peer_access first) and adds it into, or
// copies it over, its own. Asynchronous: returns once every step is enqueued; the caller
// synchronizes the streams. Rank r's input is what streams[r] produced before the call (the
// neighbours' streams wait for it), and later work on streams[r] may overwrite buffers[r] (it waits
// until the right neighbour has read it). On return the current device is what it was on entry.
void ring_allreduce(std::span<float* const> buffers, std::span<const int> devices,
                    std::size_t count, std::span<const cudaStream_t> streams);
// Enables peer access between every pair of distinct devices in `devices` (both ways); throws
// std::runtime_error naming the pair when a pair cannot reach each other.
void enable_peer_access(std::span<const int> devices);
// The number of CUDA devices (0 without a driver or a device).
int device_count();

// ---------------------------------------------------------------------------------------------
// Topology (reference/topology.cu): can device i read device j's memory (cudaDeviceCanAccessPeer),
// and the performance rank the driver reports (cudaDevP2PAttrPerformanceRank).
struct PeerInfo {
  bool access = false;
  int performance_rank = 0;
};
std::vector<std::vector<PeerInfo>> peer_matrix();
// One copy of `bytes` from device src to device dst (cudaMemcpyPeerAsync, peer access enabled
// when possible), timed with events over `reps` repetitions after one warm-up: GB/s. When
// `both_ways`, dst -> src runs at the same time on a second stream and the sum is returned.
double p2p_bandwidth_gbs(int src, int dst, std::size_t bytes, int reps, bool both_ways);
// The latency of one 4-byte copy from device src to device dst, in µs: p2p_bandwidth_gbs's loop of
// `reps` copies back to back on one stream, time / reps (as CUDA's p2pBandwidthLatencyTest). What
// a small message pays: the copy engine's start-up and the link's round trip, no bandwidth.
double p2p_latency_us(int src, int dst, int reps);

// The NVLink links between the GPUs, from NVML where the build found it (CUDALAB_HAVE_NVML):
// links[i][j] = active NVLink links of device i whose far end is device j (CUDA device order,
// matched by PCI domain:bus:device), other[i] = active links of i whose far end is no device of
// this process (an NVSwitch, or a GPU hidden by CUDA_VISIBLE_DEVICES), active[i] = all of i's
// active links. Without NVML, or when NVML cannot answer, available is false and why says so
// (the peer matrix above still holds: P2P may go over PCIe).
struct NvlinkMatrix {
  bool available = false;
  std::string why;
  std::vector<std::vector<int>> links;
  std::vector<int> other, active;
};
NvlinkMatrix nvlink_matrix();

// NCCL: include "ch08/nccl.hpp" (only where NCCL was found at configure time: CUDALAB_HAVE_NCCL).

}  // namespace cudalab::ch08
