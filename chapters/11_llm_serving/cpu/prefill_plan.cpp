// The row planner of the tensor-core prefill (prefill_plan.hpp): 16 or 32 query rows per warp.
#include "ch11/prefill_plan.hpp"

#include "cudalab/check.hpp"
#include "cudalab/math.hpp"

namespace cudalab::ch11 {

int plan_flash_rows_per_warp(int batch, int q_heads, int head_dim, int len, int sm_count) {
  require(batch >= 0, "batch", "must be >= 0");
  require(q_heads >= 0, "q_heads", "must be >= 0");
  require(head_dim == 64 || head_dim == 128, "head_dim", "must be 64 or 128");
  require(len >= 0, "len", "must be >= 0");
  require(sm_count >= 1, "sm_count", "must be >= 1");
  if (head_dim != 64) return 16;
  constexpr long long kRowsWide = 128;
  const long long blocks =
      static_cast<long long>(batch) * q_heads * ceil_div(static_cast<long long>(len), kRowsWide);
  return blocks >= static_cast<long long>(kFlashWideRowWaves) * kFlashBlocksPerSm * sm_count ? 32
                                                                                             : 16;
}

}  // namespace cudalab::ch11
