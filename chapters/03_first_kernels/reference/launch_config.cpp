// Exercise 3.1 — how many blocks cover n elements.
//
// A launch <<<blocks, threads>>> starts blocks * threads threads. To give every element its own
// thread we need blocks * threads >= n, with as few blocks as possible: blocks = ceil(n / threads).
// Integer division rounds down, so n / threads silently drops the last partial block (the classic
// "floor-div grid" bug: the tail of the array is never written). The kernel then needs a bounds
// check, because blocks * threads may exceed n by up to threads - 1.
#include <limits>

#include "ch03/ch03.hpp"
#include "cudalab/check.hpp"
#include "cudalab/math.hpp"

namespace cudalab::ch03 {

unsigned blocks_for(std::size_t n, unsigned threads_per_block) {
  require(threads_per_block > 0 && threads_per_block <= 1024, "threads_per_block",
          "must be in 1..1024 (the most threads a block may have)");
  // BEGIN EXERCISE 3.1
  // TODO(3.1): blocks_for(n, threads_per_block).
  //   Contract: the fewest blocks of threads_per_block threads that give every one of the n
  //     elements a thread of its own; 0 when n = 0. threads_per_block is already checked (1..1024)
  //     above. Throws std::invalid_argument through require(...) when the grid would need more
  //     blocks than a 1D grid may have (std::numeric_limits<int>::max()); the message should point
  //     the caller to a grid-stride loop.
  //   Constraints: integer arithmetic only (a float or double quotient loses exactness long before
  //     2^64), no overflow for any std::size_t n, including the largest.
  //   Goal: correctness only (CPU exercise): `scripts/lab check 3.1`. Stuck?
  //     `scripts/lab hint 3.1`.
  // STARTER: (void)n;
  // STARTER: throw NotImplemented("Exercise 3.1: blocks_for (chapters/03_first_kernels/starter/launch_config.cpp)");
  // BEGIN PITFALL floor_div_grid EXERCISES 3.1
  // The grid is n / threads: integer division rounds DOWN. For n = 1000 and 256 threads this
  // launches 3 blocks (768 threads): elements 768..999 are never written, and for n < 256 no block
  // at all is launched. Nothing fails: the output tail just keeps whatever was in memory.
  // Caught by: LaunchConfig tests (CPU) and every GPU test whose n is not a multiple of 256.
  // The fix: the ceil-div (n + t - 1) / t, i.e. cudalab::ceil_div.
  const std::size_t blocks = ceil_div<std::size_t>(n, threads_per_block);
  // BUG: const std::size_t blocks = n / threads_per_block;
  // END PITFALL
  require(blocks <= static_cast<std::size_t>(std::numeric_limits<int>::max()), "n",
          "needs more than 2^31 - 1 blocks: use a grid-stride loop (exercise 3.4)");
  return static_cast<unsigned>(blocks);
  // END EXERCISE
}

}  // namespace cudalab::ch03
