// The split planner of decode attention (decode_plan.hpp): how many chunks each sequence's tokens
// are cut into so that the decode step fills the GPU.
#include "ch11/decode_plan.hpp"

#include <algorithm>

#include "cudalab/check.hpp"

namespace cudalab::ch11 {

int plan_decode_splits(int batch, int kv_heads, long long capacity_tokens, int sm_count) {
  require(batch >= 0, "batch", "must be >= 0");
  require(kv_heads >= 1, "kv_heads", "must be >= 1");
  require(capacity_tokens >= 0, "capacity_tokens", "must be >= 0");
  require(sm_count >= 1, "sm_count", "must be >= 1");
  const long long blocks = static_cast<long long>(batch) * kv_heads;
  if (blocks == 0 || capacity_tokens == 0) return 1;
  const long long target = static_cast<long long>(kDecodeBlocksPerSm) * sm_count;
  long long splits = target / blocks;
  splits = std::min(splits, capacity_tokens / kMinSplitTokens);
  splits = std::min<long long>(splits, kMaxDecodeSplits);
  return static_cast<int>(std::max(splits, 1LL));
}

}  // namespace cudalab::ch11
