// Starter track — write your code at the TODO marks; the tests of each exercise
// fail until you do. (Generated from chapters/01_serving_latency/reference/graph_cache.cu by scripts/variants.py.)
// Exercise 1.2 — the fused forward as a CUDA graph, one per shape.
//
// A graph freezes its kernels' arguments: the batch size (the grid), and the x and y pointers.
// A server with dynamic batch sizes therefore keeps a cache of graphs keyed by shape (and here by
// the buffers too), captures on a miss and replays on a hit: what torch.cuda.graphs and TensorRT's
// optimization profiles do with "buckets" of batch sizes.
#include "ch01/ch01.hpp"
#include "cudalab/check.hpp"

namespace cudalab::ch01 {

void Block::forward_graph(const float* x, float* y, int batch, cudaStream_t stream) {
  // TODO(1.2): contract — the result of forward(kFused, x, y, batch, stream), submitted as one
  //            cudaGraphLaunch on `stream`. The first call for a given (batch, x, y) builds that
  //            graph (stream capture of the kFused steps, via run_step) and instantiates once;
  //            later calls for the same (batch, x, y) replay the stored one. The cache graphs_
  //            maps each (batch, x, y) seen to its executable graph; instantiations_ counts
  //            instantiations. If a step throws during the capture, end the capture first.
  //            Constraints: no capture or instantiation on a hit (the tests count them); no host
  //            wait. Goal (bench/ch01/ch01.toml): BM_block/graph/batch:1 >= 4.0x faster
  //            than BM_block/eager/batch:1 (scripts/lab check 1.2); aim: below the fused
  //            forward's latency. Hints: scripts/lab hint 1.2
  (void)x; (void)y; (void)batch; (void)stream;
  throw NotImplemented("Exercise 1.2: Block::forward_graph (chapters/01_serving_latency/starter/graph_cache.cu)");
}

}  // namespace cudalab::ch01
