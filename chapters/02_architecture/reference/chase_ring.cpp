// Exercise 2.2 — the chase ring of the latency benchmark (host code: runs on CI too).
//
// A latency measurement is a chain of loads where each address comes from the previous load:
// nothing can overlap, so time / loads is the latency of the level the ring lives in. Three
// things break it, and the ring has to defeat each:
//  * the compiler: the chain is data-dependent and its end is written out (pointer_chase.cu);
//  * the caches' line size: two hops in one line cost one miss and one hit, so one word per line,
//    at least a line apart;
//  * the prefetcher: a sequential or constant-stride walk is predicted and fetched ahead, so the
//    order is random (one random cycle through every line) and no hop goes to a neighbouring line.
// One single cycle matters: a permutation with several cycles keeps the chase inside the one that
// holds word 0, so a "64 MB" ring may really be a 3 MB one, and the plateau lands at the wrong
// size.
#include <cstdint>
#include <cstdlib>
#include <utility>
#include <vector>

#include "ch02/ch02.hpp"
#include "cudalab/check.hpp"

namespace cudalab::ch02 {
namespace {

// splitmix64: a small seeded generator whose sequence is the same on every compiler (std::
// distributions are not), so a ring printed in a failure message can be rebuilt anywhere.
[[maybe_unused]] std::uint64_t next(std::uint64_t& s) {
  std::uint64_t z = (s += 0x9E3779B97F4A7C15ull);
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  return z ^ (z >> 31);
}

}  // namespace

std::vector<std::uint32_t> make_chase_ring(std::size_t bytes, std::size_t stride_bytes,
                                           std::uint64_t seed) {
  require(stride_bytes >= 4 && (stride_bytes & (stride_bytes - 1)) == 0, "stride_bytes",
          "must be a power of two >= 4 (one 4-byte word per line)");
  require(bytes >= 2 * stride_bytes && bytes % stride_bytes == 0, "bytes",
          "must be a multiple of stride_bytes and hold at least two lines");
  require(bytes / 4 <= std::size_t{0xFFFFFFFFu}, "bytes", "the ring indexes words in 32 bits");
  // BEGIN EXERCISE 2.2
  // TODO(2.2): make_chase_ring(bytes, stride_bytes, seed).
  //   Contract: return bytes / 4 words, the buffer cut into lines of stride_bytes; the first
  //     word of each line holds the word index of the first word of the line visited next, so
  //     that starting at word 0 and following ring[] visits every line exactly once
  //     before it returns to word 0 (ONE cycle, not several), in a random order fixed by `seed`
  //     (same seed, same ring), and for L >= 5 no hop goes to an adjacent line (line +- 1: what a
  //     next-line prefetcher fetches for free; with 4 lines or fewer it cannot be avoided).
  //     Every other word is 0.
  //   Constraints: host code, standard library only; O(L) expected time (rings of 2^24 lines).
  //   Goal: correctness (CPU exercise: `scripts/lab check 2.2`). The sequential ring (each line
  //     pointing at the next one) is one cycle too, and what the prefetcher loves: the DRAM row
  //     of the latency benchmark then reads ~L2 latency.
  // STARTER: (void)seed;
  // STARTER: throw NotImplemented("Exercise 2.2: make_chase_ring (chapters/02_architecture/starter/chase_ring.cpp)");
  // BEGIN PITFALL chase_stride_below_line EXERCISES 2.2
  // The lesson: the hop must be a whole line. With w = stride / 8 words, hops land in the middle
  // of lines and two ring entries share a line: the second is an L1 hit, and the "DRAM" plateau
  // reads halfway to L1 latency. Caught by ChaseRing.OneCycleThroughEveryLine ("hop lands inside a
  // line"). Fix: w = stride_bytes / 4.
  const std::size_t w = stride_bytes / 4;  // words per line
  // BUG: const std::size_t w = stride_bytes / 8;
  // END PITFALL
  const std::size_t lines = bytes / stride_bytes;
  std::uint64_t s = seed;
  // A random order of the lines starting at line 0 (Fisher-Yates on lines 1..L-1): visiting them
  // in that order and closing the loop is one cycle by construction.
  std::vector<std::size_t> tour(lines);
  for (std::size_t i = 0; i < lines; ++i) tour[i] = i;
  for (std::size_t i = lines - 1; i > 1; --i) std::swap(tour[i], tour[1 + next(s) % i]);
  // Repair hops to a neighbouring line by swapping the hop's target with a random other position
  // (never position 0: the ring starts at word 0). Each swap fixes one hop and breaks another
  // with probability ~4 / L, so a few passes suffice (small rings take more).
  auto adjacent = [&](std::size_t k) {
    const std::size_t a = tour[k], b = tour[(k + 1) % lines];
    return a + 1 == b || b + 1 == a;
  };
  for (int pass = 0; lines >= 5 && pass < 1000; ++pass) {
    bool clean = true;
    for (std::size_t k = 0; k < lines; ++k) {
      if (!adjacent(k)) continue;
      clean = false;
      const std::size_t t = (k + 1) % lines == 0 ? k : (k + 1) % lines;  // never move tour[0]
      std::swap(tour[t], tour[1 + next(s) % (lines - 1)]);
    }
    if (clean) break;
  }
  std::vector<std::uint32_t> ring(bytes / 4, 0);
  for (std::size_t k = 0; k < lines; ++k)
    ring[tour[k] * w] = static_cast<std::uint32_t>(tour[(k + 1) % lines] * w);
  return ring;
  // END EXERCISE
}

std::uint32_t chase_end(const std::vector<std::uint32_t>& ring, long long warm, long long steps) {
  require(warm >= 0 && steps >= 0, "steps", "must be >= 0");
  std::uint32_t j = 0;
  for (long long i = 0; i < warm + steps; ++i) {
    require(j < ring.size(), "ring", "an index points past the ring");
    j = ring[j];
  }
  return j;
}

}  // namespace cudalab::ch02
