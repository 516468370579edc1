// Bug hunt 10 — graph replay: y = a x + b over several inputs, launched as a CUDA graph captured
// once and replayed per input (chapter 7: a graph removes the per-launch CPU cost).
//
// Launch shape: a graph of one kernel (1D blocks of kBlock threads), replayed after each input is
// copied into its staging buffer. A graph stores its kernels' arguments *by value* when it is
// captured: every pointer a node uses must hold its final value at capture time.
#include <vector>

#include "ch09/hunt.hpp"
#include "cudalab/check.hpp"
#include "cudalab/math.hpp"
#include "cudalab/memory.hpp"
#include "cudalab/stream.hpp"

namespace cudalab::ch09 {
namespace {

constexpr unsigned kBlock = 256;

__global__ void __launch_bounds__(kBlock)
    affine_kernel(const float* x, float* y, std::size_t n, float a, float b) {
  const std::size_t i = std::size_t{blockIdx.x} * kBlock + threadIdx.x;
  if (i < n) y[i] = a * x[i] + b;
}

}  // namespace

HuntResult hunt_graph_replay() {
  constexpr std::size_t n = 5000, inputs = 3;
  constexpr float a = 3.0f, b = -1.0f;
  std::vector<float> x(n * inputs), want(n * inputs);
  for (std::size_t i = 0; i < x.size(); ++i) x[i] = static_cast<float>(i % 37);
  for (std::size_t i = 0; i < x.size(); ++i) want[i] = a * x[i] + b;
  const DeviceBuffer<float> all_in = to_device(x);
  DeviceBuffer<float> all_out(n * inputs), staging_in(n);
  float* staging_out = nullptr;  // the kernel's output, allocated by this function
  Stream stream;
  const unsigned blocks = static_cast<unsigned>(ceil_div<std::size_t>(n, kBlock));

  auto capture = [&] {
    cudaGraph_t graph = nullptr;
    CUDALAB_CHECK(cudaStreamBeginCapture(stream.get(), cudaStreamCaptureModeThreadLocal));
    affine_kernel<<<blocks, kBlock, 0, stream.get()>>>(staging_in.data(), staging_out, n, a, b);
    CUDALAB_CHECK_LAUNCH_ASYNC();  // inside a capture: nothing runs yet, nothing to wait for
    CUDALAB_CHECK(cudaStreamEndCapture(stream.get(), &graph));
    cudaGraphExec_t exec = nullptr;
    const cudaError_t rc = cudaGraphInstantiate(&exec, graph, 0);
    CUDALAB_CHECK(cudaGraphDestroy(graph));
    CUDALAB_CHECK(rc);
    return exec;
  };

  // BEGIN EXERCISE 9.11
  // TODO(9.11): this case has one bug. Run it under the sanitizers (README, "The bug hunt"), find
  // what they report, fix it; the ctest tests of 9.11 pass when every tool is clean.
  // STARTER: cudaGraphExec_t exec = capture();
  // STARTER: CUDALAB_CHECK(cudaMalloc(&staging_out, n * sizeof(float)));
  CUDALAB_CHECK(cudaMalloc(&staging_out, n * sizeof(float)));
  cudaGraphExec_t exec = capture();  // after the allocation: the node holds staging_out's value
  // END EXERCISE
  for (std::size_t k = 0; k < inputs; ++k) {
    CUDALAB_CHECK(cudaMemcpyAsync(staging_in.data(), all_in.data() + k * n, n * sizeof(float),
                                  cudaMemcpyDeviceToDevice, stream.get()));
    CUDALAB_CHECK(cudaGraphLaunch(exec, stream.get()));
    CUDALAB_CHECK(cudaMemcpyAsync(all_out.data() + k * n, staging_out, n * sizeof(float),
                                  cudaMemcpyDeviceToDevice, stream.get()));
  }
  const cudaError_t done = cudaStreamSynchronize(stream.get());
  CUDALAB_CHECK(cudaGraphExecDestroy(exec));
  CUDALAB_CHECK(cudaFree(staging_out));
  CUDALAB_CHECK(done);
  const std::string bad = first_mismatch(all_out.to_host(), want);
  return {bad.empty(), bad.empty() ? "3 replays of n = 5000 matched" : bad};
}

}  // namespace cudalab::ch09
