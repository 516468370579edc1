// PITFALL (exercise 3.1): the grid is n / threads — integer division rounds DOWN.
//
// For n = 1000 and 256 threads this launches 3 blocks (768 threads): elements 768..999 are never
// written, and for n < 256 no block at all is launched. Nothing fails: the output tail just keeps
// whatever was in memory. The fix is the ceil-div (n + t - 1) / t, i.e. cudalab::ceil_div.
// Caught by: LaunchConfig tests (CPU) and every GPU test whose n is not a multiple of 256.
#include "ch03/ch03.hpp"
#include "cudalab/check.hpp"

namespace cudalab::ch03 {

unsigned blocks_for(std::size_t n, unsigned threads_per_block) {
  require(threads_per_block > 0 && threads_per_block <= 1024, "threads_per_block",
          "must be in 1..1024 (the most threads a block may have)");
  const std::size_t blocks = n / threads_per_block;  // BUG: floor, drops the partial block
  require(blocks <= 0x7FFFFFFFu, "n", "needs more than 2^31 - 1 blocks");
  return static_cast<unsigned>(blocks);
}

}  // namespace cudalab::ch03
