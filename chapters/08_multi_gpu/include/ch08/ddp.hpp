// Chapter 8 — a DDP-like training step (reference/ddp.cu): a small MLP (in -> hidden, ReLU ->
// 1 output, squared error) on synthetic data, trained with plain SGD on N ranks that each hold a
// replica of the parameters and a slice of every global batch; the gradients are summed over ranks
// with the hand ring all-reduce (8.3), then every replica takes the same step.
#pragma once

#include <cuda_runtime_api.h>

#include <span>
#include <vector>

namespace cudalab::ch08 {

enum class GradSync {
  kAtEnd,     // one all-reduce of all gradients after the backward pass, on the compute stream
  kBucketed,  // two buckets (layer 2, then layer 1) all-reduced on a second stream per rank while
              // the backward pass of layer 1 continues
};

struct DdpConfig {
  int inputs = 32, hidden = 64;
  int batch = 256;  // global batch; rank r trains on rows ring_chunk(batch, ranks, r) of it
  int steps = 20;
  float lr = 0.05f;
  unsigned seed = 1;
};

// Trains from the same initial parameters and data on ranks devices[0..n) (ranks may share a
// device) and returns the global loss (mean over the global batch of (y - t)^2 / 2) before each
// step, as computed by the ranks. One rank is the single-GPU run; n ranks follow it up to the
// order of floating-point additions. Throws std::invalid_argument for bad sizes or devices.
// With step_seconds, it also returns the host wall time of one training step: the steps after the
// first (which warms up cuBLAS) from all ranks synchronized to all ranks synchronized, over their
// count; the set-up (data, buffers, streams, handles) is outside it. 0 when steps < 2.
std::vector<float> ddp_train(const DdpConfig& config, std::span<const int> devices, GradSync sync,
                             double* step_seconds = nullptr);

// CPU side (cpu/ddp_oracle.cpp). Throws std::invalid_argument naming 'config' for bad sizes.
void check_ddp_config(const DdpConfig& config);
// The data set and the initial parameters of a config, the same on every run: x [batch][inputs],
// targets t [batch], parameters p laid out as [W1 (inputs x hidden) | b1 | W2 (hidden) | b2].
struct DdpData {
  std::vector<float> x, t, p;
};
DdpData ddp_data(const DdpConfig& config);
// The oracle: the same training in double on the whole batch, one sample at a time; the loss
// before each step. ddp_train on one rank follows it up to float rounding.
std::vector<double> ddp_train_cpu(const DdpConfig& config);

}  // namespace cudalab::ch08
