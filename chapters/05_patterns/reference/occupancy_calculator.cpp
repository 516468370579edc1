// Exercise 5.8 — the occupancy calculator: resident blocks and warps per SM, and what limits them.
//
// An SM holds a block only when all of its resources fit at once; the number of resident blocks
// is the minimum over four limits:
//   warps:      max_warps_per_sm / warps_per_block        (warps_per_block = ceil(threads / 32))
//   blocks:     max_blocks_per_sm
//   registers:  registers are handed to warps in units of 256 (8 per thread), and each warp's
//               registers live in one of the SM's 4 sub-partitions (65536 / 4 = 16384 each):
//                 regs_per_warp   = round_up(regs_per_thread * 32, 256)
//                 warps_per_quad  = floor(16384 / regs_per_warp)
//                 blocks_by_regs  = floor(4 * warps_per_quad / warps_per_block)
//               (so 40 registers x 96 threads gives 16 blocks, not 65536 / 3840 = 17). A block
//               whose regs_per_warp x round_up(warps_per_block, 4) exceeds 65536 cannot launch.
//   shared:     smem_alloc = round_up(smem_per_block + reserved_per_block, allocation unit)
//               blocks_by_smem = floor(smem_per_sm / smem_alloc)
//               (a block above the per-block limit cannot launch).
// Occupancy = resident warps / max warps. It is a means, not a goal: enough warps to hide latency
// is enough (the BM_occupancy rows show where more stops helping).
#include <algorithm>
#include <limits>

#include "ch05/occupancy.hpp"
#include "cudalab/check.hpp"
#include "cudalab/math.hpp"

namespace cudalab::ch05 {

Occupancy occupancy(const ArchLimits& arch, int block_threads, int regs_per_thread,
                    std::size_t smem_per_block) {
  require(arch.max_warps_per_sm > 0 && arch.max_blocks_per_sm > 0 && arch.warp_size > 0 &&
              arch.reg_alloc_unit > 0 && arch.sub_partitions > 0 && arch.smem_alloc_unit > 0,
          "arch", "limits not filled in (use arch_limits(cc))");
  require(block_threads >= 1 && block_threads <= arch.max_threads_per_block, "block_threads",
          "must be in 1..max_threads_per_block");
  require(regs_per_thread >= 0 && regs_per_thread <= arch.max_regs_per_thread, "regs_per_thread",
          "must be in 0..max_regs_per_thread (255)");
  Occupancy o;
  // BEGIN EXERCISE 5.8
  // TODO(5.8): fill `o` for a block of block_threads threads using regs_per_thread registers and
  //   smem_per_block bytes of shared memory, on the SM the ArchLimits describe.
  //   Contract: the four per-limit block counts of Occupancy (its blocks_by_* fields): the four
  //     limits described at the top of this file (std::numeric_limits<int>::max() where a limit
  //     does not apply: 0 registers, or nothing allocated); the resident blocks = their minimum;
  //     the resident warps; the occupancy = resident warps / the SM's maximum; the limiter = the
  //     binding limit (ties: warps, blocks, registers, shared memory, in that order). A block over
  //     a per-block limit (registers or shared memory) gives 0 blocks, 0 warps and limiter
  //     kDoesNotFit. The arguments are checked.
  //   Constraints: integer arithmetic; every hardware number comes from the ArchLimits argument
  //     (no constant for a particular GPU); must agree with the toolkit's cuda_occupancy.h on every
  //     configuration.
  //   Goal: correctness only (CPU exercise; `scripts/lab check 5.8`), then predict the
  //     blocks_per_sm counters of BM_occupancy before reading them.
  // STARTER: (void)smem_per_block; (void)o;
  // STARTER: throw NotImplemented("Exercise 5.8: occupancy (chapters/05_patterns/starter/occupancy_calculator.cpp)");
  constexpr int kUnlimited = std::numeric_limits<int>::max();
  const int warps_per_block = ceil_div(block_threads, arch.warp_size);
  o.blocks_by_warps = arch.max_warps_per_sm / warps_per_block;
  o.blocks_by_blocks = arch.max_blocks_per_sm;

  bool fits = true;
  if (regs_per_thread == 0) {
    o.blocks_by_regs = kUnlimited;
  } else {
    const int regs_per_warp = round_up(regs_per_thread * arch.warp_size, arch.reg_alloc_unit);
    // The hardware checks a block as if its warps were spread over all sub-partitions.
    if (regs_per_warp * round_up(warps_per_block, arch.sub_partitions) > arch.regs_per_block)
      fits = false;
    const int warps_per_quad = (arch.regs_per_sm / arch.sub_partitions) / regs_per_warp;
    o.blocks_by_regs = warps_per_quad * arch.sub_partitions / warps_per_block;
  }

  const std::size_t alloc =
      round_up(smem_per_block + arch.smem_reserved_per_block, arch.smem_alloc_unit);
  if (alloc > arch.smem_per_block + arch.smem_reserved_per_block) fits = false;
  o.blocks_by_smem =
      alloc == 0 ? kUnlimited
                 : static_cast<int>(std::min<std::size_t>(arch.smem_per_sm / alloc, kUnlimited));

  if (!fits) {
    o.blocks_per_sm = 0;
    o.limiter = OccupancyLimiter::kDoesNotFit;
  } else {
    o.blocks_per_sm =
        std::min({o.blocks_by_warps, o.blocks_by_blocks, o.blocks_by_regs, o.blocks_by_smem});
    o.limiter = o.blocks_per_sm == o.blocks_by_warps    ? OccupancyLimiter::kWarps
                : o.blocks_per_sm == o.blocks_by_blocks ? OccupancyLimiter::kBlocks
                : o.blocks_per_sm == o.blocks_by_regs   ? OccupancyLimiter::kRegisters
                                                        : OccupancyLimiter::kSharedMemory;
  }
  o.warps_per_sm = o.blocks_per_sm * warps_per_block;
  o.occupancy = static_cast<double>(o.warps_per_sm) / arch.max_warps_per_sm;
  // END EXERCISE
  return o;
}

}  // namespace cudalab::ch05
