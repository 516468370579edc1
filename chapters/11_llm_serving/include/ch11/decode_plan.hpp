// Chapter 11, host side: how a decode step is split (decode_attention_paged_auto): the plan from
// the batch, the KV heads, the length and the SM count.
// Runs on the CPU (CI tests it without a GPU); bad arguments throw std::invalid_argument naming
// the argument.
#pragma once

namespace cudalab::ch11 {

// ---------------------------------------------------------------------------------------------
// The split of a decode step (decode_attention_paged_auto, ch11.hpp). The unsplit kernel runs one
// block per (sequence, KV head): batch x kv_heads blocks, each streaming its whole sequence. Too
// few of them leave SMs idle and too few bytes in flight (on the H200, 16 x 8 = 128 blocks for 132
// SMs read 0.39x of a copy's bandwidth; 2 x 8 = 16 blocks 0.05x), so the tokens are cut into
// splits until about kDecodeBlocksPerSm blocks per SM exist: splits = floor(that / blocks) (a
// grid already that full is left whole: 64 x 8 = 512 blocks read 0.97x), every chunk at least
// kMinSplitTokens of the cache's capacity (a chunk's fixed cost, its partial result and the
// combine pass, must stay small beside its bytes), at most kMaxDecodeSplits. On the H200 this gives
// 1, 4 and 33 splits for the three shapes above, the counts its split-K sweep found best (0.97x,
// 0.98x, 0.96x of a copy). Returns at least 1; batch 0 or capacity 0 gives 1.
inline constexpr int kDecodeBlocksPerSm = 4;
inline constexpr int kMinSplitTokens = 256;
inline constexpr int kMaxDecodeSplits = 64;
int plan_decode_splits(int batch, int kv_heads, long long capacity_tokens, int sm_count);

}  // namespace cudalab::ch11
