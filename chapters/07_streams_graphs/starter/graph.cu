// Starter track — write your code at the TODO marks; the tests of each exercise
// fail until you do. (Generated from chapters/07_streams_graphs/reference/graph.cu by scripts/variants.py.)
// Exercises 7.3 and 7.4 — CUDA graphs: capture a chain of tiny kernels once, replay it with one
// call, and change its parameters without building it again.
//
// A plain launch costs the host a few microseconds (argument packing, driver checks, a doorbell),
// and the GPU waits for it when the kernels are shorter than that: a chain of 1000 tiny kernels is
// host-bound. A graph is the chain recorded as a DAG, validated once at instantiation; a replay is
// one submission, and the GPU runs node after node with no host in between.
#include <vector>

#include "ch07/ch07.hpp"
#include "cudalab/check.hpp"

namespace cudalab::ch07 {
namespace {

// One link of the chain. Launched plainly, it starts after its predecessor has finished, like any
// kernel, and the two grid-dependency calls below do nothing. They matter when the launch that
// runs it has a programmatic dependency on the previous link (compute capability 9.0 and later):
// then it may start before that link has finished; the trigger lets the next link start early in
// turn, and no thread reads x before the wait returns, that is, before the previous link's grid
// has completed and its writes to x are visible.
__global__ void __launch_bounds__(kBlock)
    chain_kernel(float* __restrict__ x, std::size_t n, float scale, float shift) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  cudaTriggerProgrammaticLaunchCompletion();
  cudaGridDependencySynchronize();
#endif
  const std::size_t i = std::size_t{blockIdx.x} * blockDim.x + threadIdx.x;
  if (i < n) x[i] = fmaf(x[i], scale, shift);
}

// The kernel nodes of a graph (cudaGraphGetNodes twice: count, then fill).
std::vector<cudaGraphNode_t> kernel_nodes(cudaGraph_t graph) {
  std::size_t count = 0;
  CUDALAB_CHECK(cudaGraphGetNodes(graph, nullptr, &count));
  std::vector<cudaGraphNode_t> nodes(count), kernels;
  if (count > 0) CUDALAB_CHECK(cudaGraphGetNodes(graph, nodes.data(), &count));
  for (cudaGraphNode_t node : nodes) {
    cudaGraphNodeType type{};
    CUDALAB_CHECK(cudaGraphNodeGetType(node, &type));
    if (type == cudaGraphNodeTypeKernel) kernels.push_back(node);
  }
  return kernels;
}

}  // namespace

KernelChain::KernelChain(float* x, std::size_t n, int length) : x_(x), n_(n), length_(length) {
  require(length >= 1, "length", "a chain has at least one kernel");
  require(n == 0 || x != nullptr, "x", "null pointer with elements to process");
  require((n + kBlock - 1) / kBlock <= 0x7FFFFFFFu, "n", "needs more than 2^31 - 1 blocks");
}

KernelChain::~KernelChain() {
  if (exec_) cudaGraphExecDestroy(exec_);
  if (graph_) cudaGraphDestroy(graph_);
}

void KernelChain::launch_plain(cudaStream_t stream) {
  if (n_ == 0) return;
  const auto blocks = static_cast<unsigned>((n_ + kBlock - 1) / kBlock);
  for (int k = 0; k < length_; ++k) {
    chain_kernel<<<blocks, kBlock, 0, stream>>>(x_, n_, chain_scale(k), chain_shift(k));
    CUDALAB_CHECK_LAUNCH_ASYNC();  // the stream may be capturing: no synchronize
  }
}

std::size_t KernelChain::graph_kernel_nodes() const {
  return graph_ ? kernel_nodes(graph_).size() : 0;
}

void KernelChain::capture(cudaStream_t stream) {
  // TODO(7.3): contract — leave in graph_ the chain that launch_plain(stream) enqueues (length_
  //            kernel nodes, in order), in exec_ its instantiation, and count it in
  //            instantiations_; no kernel of the chain runs during the call. If anything throws
  //            while the stream is being captured, end the capture before rethrowing (a stream
  //            left capturing refuses all later work).
  //            Constraints: the graph comes from launch_plain itself, by stream capture (not node
  //            by node); other threads' CUDA calls must not interfere with the capture.
  //            Goal (bench/ch07/ch07.toml): a chain of 100 tiny kernels >= 3.5x faster as a graph
  //            than as plain launches. Hints: scripts/lab hint 7.3
  (void)stream;
  throw NotImplemented("Exercise 7.3: KernelChain::capture (chapters/07_streams_graphs/starter/graph.cu)");
}

void KernelChain::launch_graph(cudaStream_t stream) {
  require(stream != nullptr, "stream",
          "the legacy default stream cannot be captured: use a created stream");
  if (n_ == 0) return;
  if (!exec_) capture(stream);
  CUDALAB_CHECK(cudaGraphLaunch(exec_, stream));
}

void KernelChain::set_data(float* x) {
  require(n_ == 0 || x != nullptr, "x", "null pointer with elements to process");
  x_ = x;  // later captures and plain launches use it
  if (!exec_) return;
  // TODO(7.4): contract — after this call, launch_graph() runs the same chain on the new x_: every
  //            kernel node of the instantiated graph gets x_ as its first argument, every other
  //            argument (n, scale, shift) unchanged. graph_ describes the same chain as exec_.
  //            Constraints: no new capture and no new instantiation (the tests check that
  //            instantiations() stays 1); no stream.
  //            Goal (bench/ch07/ch07.toml): retargeting a 100-kernel chain >= 1.3x faster than a
  //            new capture and instantiation. Hints: scripts/lab hint 7.4
  throw NotImplemented("Exercise 7.4: KernelChain::set_data (chapters/07_streams_graphs/starter/graph.cu)");
}

}  // namespace cudalab::ch07
