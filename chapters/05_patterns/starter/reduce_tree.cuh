// Starter track — write your code at the TODO marks; the tests of each exercise
// fail until you do. (Generated from chapters/05_patterns/reference/reduce_tree.cuh by scripts/variants.py.)
// Reduction ladder, step 2's lesson (exercise 5.1): a block's partials summed by a tree in shared
// memory with sequential addressing (Harris, kernel 3).
//
// Steps 2, 3 and 4 (reduce_2_sequential.cu, reduce_3_first_add.cu, reduce_4_unroll_last_warp.cu)
// reduce their blocks with this one function: step 4 stops early and finishes the last warp's
// partials without block barriers. Compiles on its own (it includes what it uses).
#pragma once

#include <cuda_runtime.h>

#include "ch05/reduce.hpp"

namespace cudalab::ch05::detail {

// Reduces the kReduceBlock partials in sdata until kStop are left (kStop = 0: sdata[0] holds the
// block's sum). Every thread of the block must call it (it synchronizes).
template <unsigned kStop, class T>
__device__ void block_tree_reduce(T* sdata, unsigned tid) {
  static_assert(kStop < kReduceBlock && (kStop & (kStop - 1)) == 0, "kStop: 0 or a power of two");
  // TODO(5.1): block_tree_reduce<kStop>(sdata, tid), step 2 of the ladder.
  //   Contract: called by every thread of a block of kReduceBlock threads; on entry
  //     sdata[0, kReduceBlock) holds the block's partials (identity 0 past n) and every thread has
  //     passed a barrier; on exit the sum of sdata[0, max(kStop, 1)) is the block's sum (kStop = 0:
  //     sdata[0] holds it) and every thread is past a barrier. T is float or int. Steps 2 and 3
  //     call it with kStop = 0, step 4 with kStop = 32 (warp 0 then finishes the last 64 partials).
  //   Constraints: shared memory only (no warp shuffles: that is step 5); at each level the working
  //     threads must be whole warps and a warp's shared-memory reads must be conflict-free (this is
  //     what step 2 changes from step 1, reduce_1_interleaved.cu); no thread may read a partial
  //     that another thread is still writing.
  //   Goal: BM_reduce_sum/sequential >= 0.18x BM_reduce_sum_cub at 2^28 floats; steps 3 and 4 run
  //     your tree too; `scripts/lab check 5.1`.
  (void)sdata; (void)tid;
}

}  // namespace cudalab::ch05::detail
