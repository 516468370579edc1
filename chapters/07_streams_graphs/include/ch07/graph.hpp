// Chapter 7: a chain of tiny kernels launched one by one or as one CUDA graph (exercises 7.3, 7.4).
// (ch07.hpp includes every topic of the chapter; its header says the conventions.)
#pragma once

#include <cuda_runtime_api.h>

#include <cstddef>

namespace cudalab::ch07 {

// ---------------------------------------------------------------------------------------------
// A chain of `length` tiny kernels on x[0, n): kernel k computes x = fmaf(x, scale[k], shift[k])
// with scale[k] = 1 + (k % 7 - 3) / 1024, shift[k] = (k % 5 - 2) / 256 (chain_oracle, cpu/).
// Plain launches cost the host ~3 µs each; a CUDA graph submits the whole chain in one call.
float chain_scale(int k);
float chain_shift(int k);
float chain_oracle(float x, int length, int replays = 1);

class KernelChain {
 public:
  // Does not launch anything; the graph is captured on first use. Throws std::invalid_argument for
  // length < 1 or a null x with n > 0.
  KernelChain(float* x, std::size_t n, int length);
  ~KernelChain();
  KernelChain(const KernelChain&) = delete;
  KernelChain& operator=(const KernelChain&) = delete;

  // `length` plain launches on `stream`.
  void launch_plain(cudaStream_t stream);
  // Exercise 7.3 — the same chain as one CUDA graph: captured from the plain launches on first use
  // (stream capture), instantiated once, then replayed by one cudaGraphLaunch per call.
  void launch_graph(cudaStream_t stream);
  // Exercise 7.4 — point the chain at another array of the same size without capturing or
  // instantiating again: update the instantiated graph's kernel parameters in place. Throws
  // std::invalid_argument for a null x with n > 0. (Before the graph exists it only sets x.)
  void set_data(float* x);

  std::size_t graph_kernel_nodes() const;  // kernel nodes of the captured graph (0 before)
  int instantiations() const noexcept { return instantiations_; }

 private:
  void capture(cudaStream_t stream);  // stream capture of launch_plain + instantiate
  float* x_;
  std::size_t n_;
  int length_;
  cudaGraph_t graph_ = nullptr;
  cudaGraphExec_t exec_ = nullptr;
  int instantiations_ = 0;
};

}  // namespace cudalab::ch07
