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
  // TODO(3.1): return the number of blocks, ceil(n / threads_per_block), using integer arithmetic
  //            only (no floating point: it loses precision past 2^24). Throw through
  //            require(...) when it exceeds std::numeric_limits<int>::max() (the 1D grid limit).
  (void)n;
  throw NotImplemented("Exercise 3.1: blocks_for (chapters/03_first_kernels/starter/launch_config.cpp)");
}

}  // namespace cudalab::ch03
