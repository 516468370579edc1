// Starter track — write your code at the TODO marks; the tests of each exercise
// fail until you do. (Generated from chapters/03_first_kernels/reference/launch_config.cpp by scripts/variants.py.)
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
  (void)n;
  throw NotImplemented("Exercise 3.1: blocks_for (chapters/03_first_kernels/starter/launch_config.cpp)");
}

}  // namespace cudalab::ch03
