// Exercises 8.1 and 8.2 — the ring all-reduce's schedule, as pure functions, and the ring simulated
// with N ranks on the CPU (the tests run it against a plain sum for every n and size).
//
// The ring: every rank sends to its right neighbour and receives from its left one, the last rank's
// right neighbour being the first. The buffer is cut into n chunks. Reduce-scatter (n - 1 steps):
// at each step every rank passes one partial sum to its right neighbour, which adds its own
// contribution; after n - 1 steps each rank holds one chunk summed over all ranks. All-gather (n -
// 1 steps): the summed chunks travel once more around the ring, overwriting. Each rank sends and
// receives 2(n - 1)/n of the buffer in all — the factor of busbw — whatever n: a ring's bandwidth
// cost does not grow with the number of ranks.
#include <algorithm>
#include <stdexcept>
#include <string>

#include "ch08/ch08.hpp"
#include "cudalab/check.hpp"

namespace cudalab::ch08 {

Chunk ring_chunk(std::size_t count, int ranks, int chunk) {
  require(ranks >= 1, "ranks", "must be at least 1");
  require(chunk >= 0 && chunk < ranks, "chunk", "must be in [0, ranks)");
  // BEGIN EXERCISE 8.1
  // TODO(8.1): contract — the chunk `chunk` of a buffer of `count` elements cut into `ranks`
  // TODO(8.1): contiguous chunks: they tile [0, count) in order, without gap or overlap, their
  // TODO(8.1): sizes differ by at most one, and the longer ones come first. Any count (0 included,
  // TODO(8.1): fewer elements than ranks included: then some chunks are empty).
  // TODO(8.1): constraints — O(1), no loop, no floating point; 64-bit sizes.
  // TODO(8.1): goal — the CPU tests of Ring* pass for every n in 1..9 and every count in 0..100.
  // STARTER: (void)count;
  // STARTER: throw NotImplemented("Exercise 8.1: ring_chunk (chapters/08_multi_gpu/starter/ring.cpp)");
  const auto n = static_cast<std::size_t>(ranks);
  const auto c = static_cast<std::size_t>(chunk);
  const std::size_t base = count / n, extra = count % n;
  // BEGIN PITFALL chunk_offset EXERCISES 8.1 8.3
  // The first `extra` chunks hold one element more, so chunk c starts after c chunks of `base`
  // elements AND after min(c, extra) extra elements. Forgetting the second term passes every test
  // whose count is a multiple of n (the usual 2^k sizes on 2, 4 or 8 GPUs) and breaks all others:
  // chunks overlap and the last count % n elements are never reduced (the tests' odd sizes and
  // n = 3, 5, 7 catch it: the tail keeps the rank's own value instead of the sum).
  const std::size_t offset = c * base + std::min(c, extra);
  // BUG: const std::size_t offset = c * base;
  // END PITFALL
  return {offset, base + (c < extra ? 1 : 0)};
  // END EXERCISE
}

int ring_steps(int ranks) {
  require(ranks >= 1, "ranks", "must be at least 1");
  return 2 * (ranks - 1);
}

RingStep ring_step(int ranks, int rank, int step) {
  require(ranks >= 1, "ranks", "must be at least 1");
  require(rank >= 0 && rank < ranks, "rank", "must be in [0, ranks)");
  require(step >= 0 && step < ring_steps(ranks), "step", "must be in [0, 2(ranks - 1))");
  // BEGIN EXERCISE 8.2
  // TODO(8.2): contract — rank `rank`'s step `step` of the ring all-reduce over `ranks` ranks
  // TODO(8.2): (ch08.hpp, RingStep): steps 0 .. n-2 reduce-scatter (reduce = true), steps
  // TODO(8.2): n-1 .. 2n-3 all-gather (reduce = false). What rank r receives at a step is what rank
  // TODO(8.2): r - 1 sends at that step; no chunk is received twice in a phase; after the
  // TODO(8.2): reduce-scatter rank r holds the full sum of chunk r + 1 (0 for the last rank); after the
  // TODO(8.2): all-gather every rank holds every sum.
  // TODO(8.2): constraints — O(1), no table; in C++ the remainder of a negative int is negative.
  // TODO(8.2): goal — ring_allreduce_cpu (below) equals the plain sum for n in 1..9.
  // STARTER: (void)rank;
  // STARTER: throw NotImplemented("Exercise 8.2: ring_step (chapters/08_multi_gpu/starter/ring.cpp)");
  const auto mod = [ranks](int x) { return ((x % ranks) + ranks) % ranks; };
  if (step < ranks - 1) return {mod(rank - step), mod(rank - step - 1), true};
  const int t = step - (ranks - 1);
  return {mod(rank + 1 - t), mod(rank - t), false};
  // END EXERCISE
}

void ring_allreduce_cpu(std::vector<std::vector<float>>& buffers) {
  require(!buffers.empty(), "buffers", "needs at least one rank");
  const int n = static_cast<int>(buffers.size());
  const std::size_t count = buffers[0].size();
  for (const auto& b : buffers)
    require(b.size() == count, "buffers", "every rank needs the same size");
  std::vector<std::vector<float>> inbox(n);
  std::vector<int> sent(n);
  for (int s = 0; s < ring_steps(n); ++s) {
    // Every rank sends at once: copy the messages out first, then deliver them.
    for (int r = 0; r < n; ++r) {
      const int to = (r + 1) % n;
      sent[to] = ring_step(n, r, s).send_chunk;
      const Chunk c = ring_chunk(count, n, sent[to]);
      if (c.offset + c.count > count)
        throw std::logic_error("ring_chunk: chunk past the end of the buffer");
      inbox[to].assign(buffers[r].begin() + c.offset, buffers[r].begin() + c.offset + c.count);
    }
    for (int r = 0; r < n; ++r) {
      const RingStep st = ring_step(n, r, s);
      if (st.recv_chunk != sent[r])
        throw std::logic_error("ring_step: rank " + std::to_string(r) + " expects chunk " +
                               std::to_string(st.recv_chunk) + " at step " + std::to_string(s) +
                               " but its left neighbour sends chunk " + std::to_string(sent[r]));
      const Chunk c = ring_chunk(count, n, st.recv_chunk);
      for (std::size_t i = 0; i < c.count; ++i) {
        float& dst = buffers[r][c.offset + i];
        dst = st.reduce ? dst + inbox[r][i] : inbox[r][i];
      }
    }
  }
}

}  // namespace cudalab::ch08
