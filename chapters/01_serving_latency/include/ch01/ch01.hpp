// Chapter 1 — where serving latency hides in an eager framework: the same transformer FFN block run
// as a framework dispatches it (one kernel per op, a host round trip per op, an allocation per
// intermediate), with fused kernels, and as a CUDA graph; each forward's time split into kernel
// time and everything else.
//
// Device functions take device pointers, sizes and a stream. Any batch >= 1 works; bad arguments
// throw std::invalid_argument naming the argument; every launch and CUDA call is checked.
#pragma once

#include <cuda_runtime_api.h>

#include <cmath>
#include <cstddef>
#include <cstdint>
#include <map>
#include <span>
#include <string>
#include <tuple>
#include <vector>

#include "cudalab/math.hpp"  // CUDALAB_HD
#include "cudalab/memory.hpp"

namespace cudalab::ch01 {

// The block: y = x + W2 gelu(W1 LN(x) + b1) + b2, x and y [batch][d], W1 [hidden][d], W2
// [d][hidden] (row-major, out x in), LN(x) = (x - mean) / sqrt(var + eps) * gamma + beta per row.
// FP32.
struct BlockShape {
  int d = 512, hidden = 2048;
};
inline constexpr float kLayerNormEps = 1e-5f;

// GELU, tanh approximation (the one GPT-2 and most serving stacks use).
CUDALAB_HD inline float gelu(float v) {
  const float k = 0.7978845608028654f;  // sqrt(2 / pi)
  return 0.5f * v * (1.0f + tanhf(k * (v + 0.044715f * v * v * v)));
}

struct BlockWeights {
  BlockShape shape;
  std::vector<float> gamma, beta, w1, b1, w2, b2;
};
BlockWeights block_weights(BlockShape shape = {}, std::uint64_t seed = 1);  // cpu/, deterministic
std::vector<float> make_input(const BlockShape& shape, int batch, std::uint64_t seed);  // cpu/
std::vector<float> block_forward_cpu(const BlockWeights& w, std::span<const float> x,
                                     int batch);  // cpu/, double

// How the forward is run.
enum class Mode {
  kEagerAlloc,  // 7 kernels (LN, GEMM, bias, GELU, GEMM, bias, residual), a host sync after each,
                // every intermediate cudaMalloc'ed before its op and cudaFree'd after its last use
  kEager,  // the same 7 kernels and 7 host syncs, intermediates preallocated (a caching allocator)
  kFused,  // 3 kernels (LN; GEMM + bias + GELU; GEMM + bias + residual), no host sync
  kGraph,  // kFused captured once per (batch, x, y) and replayed as one CUDA graph
};
const char* mode_name(Mode mode);

class Block {
 public:
  Block(const BlockWeights& w, int max_batch);
  ~Block();
  Block(const Block&) = delete;
  Block& operator=(const Block&) = delete;

  const BlockShape& shape() const noexcept { return shape_; }
  int max_batch() const noexcept { return max_batch_; }

  // y = block(x) for 1 <= batch <= max_batch. x and y must not overlap. Eager modes return after
  // their last host sync; kFused and kGraph return once enqueued. One forward at a time per Block
  // (it owns the intermediates).
  void forward(Mode mode, const float* x, float* y, int batch, cudaStream_t stream);

  // The kernels one forward launches, one by one (kernel time is measured per step, alone).
  int steps(Mode mode) const;  // 7 for the eager modes, 3 for kFused and kGraph
  void run_step(Mode mode, int step, const float* x, float* y, int batch, cudaStream_t stream);
  int host_syncs(Mode mode) const;  // per forward: 7 eager, 0 otherwise

  // Graphs captured so far by kGraph (one per (batch, x, y) seen).
  std::size_t graphs_cached() const noexcept { return graphs_.size(); }
  int instantiations() const noexcept { return instantiations_; }

 private:
  void forward_graph(const float* x, float* y, int batch, cudaStream_t stream);
  BlockShape shape_;
  int max_batch_;
  DeviceBuffer<float> gamma_, beta_, w1_, b1_, w2_, b2_;
  DeviceBuffer<float> ln_, h_, o_;  // intermediates [max_batch][d | hidden | d]
  std::map<std::tuple<int, const float*, float*>, cudaGraphExec_t> graphs_;
  int instantiations_ = 0;
};

// The latency of one forward split into where it goes (reference/timing.cpp):
//   total_us   host wall clock of forward() + a final stream sync (median of reps)
//   kernel_us  kernel_time_us: the GPU time of the mode's kernels without the host's waits
//   other_us   total - kernel: launch gaps, host syncs, allocations, everything but kernels
struct ForwardTiming {
  Mode mode{};
  int batch = 0, kernels = 0, host_syncs = 0;
  double total_us = 0, kernel_us = 0, other_us = 0;
};
ForwardTiming time_forward(Block& block, Mode mode, int batch, int reps, cudaStream_t stream);

// The GPU time (events around the whole forward, median of reps, in µs) of the mode's kernels
// issued as the mode issues them but with no host wait between them: kGraph's graph launch,
// kFused's three launches, the eager modes' seven kernels back to back. Inside the wall clock of
// the same forward by construction, so other_us >= 0 up to noise. (Summing each kernel timed
// alone instead counts every kernel's start-up, which a chain overlaps: on the H200 that sum
// exceeds a graph's whole wall clock at batch 1.)
double kernel_time_us(Block& block, Mode mode, const float* x, float* y, int batch, int reps,
                      cudaStream_t stream);

}  // namespace cudalab::ch01
