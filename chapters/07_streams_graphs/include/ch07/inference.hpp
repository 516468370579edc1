// Chapter 7: the batch-inference pipeline: a small MLP served batch after batch by a producer
// thread and streams.
// (ch07.hpp includes every topic of the chapter; its header says the conventions.)
#pragma once

#include <cuda_runtime_api.h>

#include <cstdint>
#include <span>
#include <vector>

#include "cudalab/memory.hpp"

namespace cudalab::ch07 {

// ---------------------------------------------------------------------------------------------
// The batch-inference pipeline (reference/inference.cu, worked example).
// A small MLP classifier: in -> hidden (ReLU) -> hidden (ReLU) -> classes, FP32, weights made by
// the code (mlp_weights: deterministic, scaled 1/sqrt(fan_in)).
struct MlpShape {
  int in = 256, hidden = 512, classes = 10;
};
struct MlpWeights {
  MlpShape shape;
  std::vector<float> w1, b1, w2, b2, w3, b3;  // row-major [out][in]
};
MlpWeights mlp_weights(MlpShape shape = {}, std::uint64_t seed = 7);  // cpu/
// Logits [batch][classes] of x [batch][in] (double accumulation).
std::vector<float> mlp_forward_cpu(const MlpWeights& w, std::span<const float> x,
                                   int batch);  // cpu/
// Input of batch `index` (deterministic; what the producer thread makes).
std::vector<float> make_batch(const MlpShape& shape, int batch, std::uint64_t index);  // cpu/

class Mlp {
 public:
  Mlp(const MlpWeights& w, int max_batch);
  const MlpShape& shape() const noexcept { return shape_; }
  int max_batch() const noexcept { return max_batch_; }
  // logits [batch][classes] = forward(x [batch][in]); 1 <= batch <= max_batch. Three fused
  // GEMM + bias (+ ReLU) kernels; scratch activations are owned by this object (one forward at a
  // time per Mlp).
  void forward(const float* x, float* logits, int batch, cudaStream_t stream) const;

 private:
  MlpShape shape_;
  int max_batch_;
  DeviceBuffer<float> w1_, b1_, w2_, b2_, w3_, b3_;
  mutable DeviceBuffer<float> h1_, h2_;
};

struct ServeOptions {
  int batch = 16;     // samples per batch
  int batches = 64;   // batches the producer makes
  int slots = 3;      // pinned staging slots = streams in flight (triple buffering)
  bool graph = true;  // steady state as one CUDA graph per slot (H2D + forward + D2H)
  bool keep_logits = true;
};
struct ServeResult {
  std::vector<double> latency_us;  // per batch: producer hand-off -> results on the host
  double seconds = 0;              // first hand-off -> last result
  std::vector<float> logits;       // batches x batch x classes (when keep_logits)
  int batch = 0;
  int streams_used = 0;
  double samples_per_second() const;
  double percentile_us(double p) const;  // p in [0, 100], nearest rank
};
// Batch i's input is make_batch(shape, batch, i % kDistinctBatches), made once before the clock
// starts (the producer copies it: it measures the pipeline, not the input generator).
inline constexpr int kDistinctBatches = 8;
// A host producer thread fills pinned slots with batch i's input; the caller's thread enqueues each
// ready slot on its stream (H2D, forward, D2H, then cudaLaunchHostFunc to record completion and
// free the slot). NVTX ranges name every step when nvtx3 is available.
ServeResult serve(const MlpWeights& w, const ServeOptions& options);

}  // namespace cudalab::ch07
