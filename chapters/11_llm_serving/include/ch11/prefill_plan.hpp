// Chapter 11, host side: how many query rows each warp of the tensor-core prefill owns
// (flash_prefill_attention): the plan from the batch, the query heads, head_dim, the length and
// the SM count.
// Runs on the CPU (CI tests it without a GPU); bad arguments throw std::invalid_argument naming
// the argument.
#pragma once

namespace cudalab::ch11 {

// ---------------------------------------------------------------------------------------------
// Rows per warp of flash_prefill_attention: 16 (blocks of 64 query rows) or 32 (blocks of 128, the
// block FlashAttention-2 uses). With 32 rows a warp reuses each K and V fragment it reads from
// shared memory for two m16 tiles, which halves the shared-memory bytes per MMA, the limit of the
// 16-row design; the price is twice the accumulators and half as many blocks. At head_dim 64 the
// registers allow it (Q stays in registers); measured on an H100 at batch 1, 32 heads, it ran
// faster from 4096 tokens on and slower at 1024, where the 128-row grid (256 blocks) is under one
// wave of 2 blocks per SM and its causal tail leaves SMs idle. So: 32 rows when head_dim is 64 and
// the 128-row grid holds at least kFlashWideRowWaves waves (batch x q_heads x ceil(len / 128)
// blocks against kFlashBlocksPerSm), 16 otherwise. At head_dim 128, 32 rows must re-read Q from
// shared memory to stay under 255 registers, and measured no faster at 4096 tokens: always 16.
// Returns 16 or 32; an empty problem (batch, q_heads or len 0) gives 16.
inline constexpr int kFlashWideRowWaves = 3;
inline constexpr int kFlashBlocksPerSm = 2;  // the kernel's __launch_bounds__ minimum
int plan_flash_rows_per_warp(int batch, int q_heads, int head_dim, int len, int sm_count);

}  // namespace cudalab::ch11
