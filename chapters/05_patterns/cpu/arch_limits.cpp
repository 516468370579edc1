// Published per-SM limits of six GPU generations, for the occupancy calculator (exercise 5.8).
//
// Sources: CUDA C++ Programming Guide, "Technical Specifications per Compute Capability" (threads,
// warps, blocks, registers, shared memory per SM and per block); the toolkit's cuda_occupancy.h
// (register allocation unit 256 per warp, shared allocation unit 256 B before sm_80 and 128 B
// from sm_80, 4 sub-partitions per SM, the 1 KiB the driver reserves per block from sm_80).
#include <fmt/format.h>

#include <limits>

#include "ch05/occupancy.hpp"
#include "cudalab/check.hpp"

namespace cudalab::ch05 {

ArchLimits arch_limits(int cc) {
  ArchLimits a;
  a.cc = cc;
  switch (cc) {
    case 70:  // Volta (V100): 96 KiB shared memory per SM and per block (opt-in above 48 KiB)
      a.max_threads_per_sm = 2048, a.max_blocks_per_sm = 32;
      a.smem_per_sm = 96 * 1024, a.smem_per_block = 96 * 1024, a.smem_alloc_unit = 256;
      a.smem_reserved_per_block = 0;
      break;
    case 75:  // Turing: 1024 threads and 16 blocks per SM, 64 KiB shared memory
      a.max_threads_per_sm = 1024, a.max_blocks_per_sm = 16;
      a.smem_per_sm = 64 * 1024, a.smem_per_block = 64 * 1024, a.smem_alloc_unit = 256;
      a.smem_reserved_per_block = 0;
      break;
    case 80:  // Ampere A100: 164 KiB per SM, 163 KiB per block
      a.max_threads_per_sm = 2048, a.max_blocks_per_sm = 32;
      a.smem_per_sm = 164 * 1024, a.smem_per_block = 163 * 1024, a.smem_alloc_unit = 128;
      a.smem_reserved_per_block = 1024;
      break;
    case 86:  // Ampere GA10x: 1536 threads and 16 blocks per SM, 100 KiB per SM, 99 KiB per block
      a.max_threads_per_sm = 1536, a.max_blocks_per_sm = 16;
      a.smem_per_sm = 100 * 1024, a.smem_per_block = 99 * 1024, a.smem_alloc_unit = 128;
      a.smem_reserved_per_block = 1024;
      break;
    case 89:  // Ada: as sm_86 but 24 blocks per SM
      a.max_threads_per_sm = 1536, a.max_blocks_per_sm = 24;
      a.smem_per_sm = 100 * 1024, a.smem_per_block = 99 * 1024, a.smem_alloc_unit = 128;
      a.smem_reserved_per_block = 1024;
      break;
    case 90:  // Hopper (H100, H200): 228 KiB per SM, 227 KiB per block
      a.max_threads_per_sm = 2048, a.max_blocks_per_sm = 32;
      a.smem_per_sm = 228 * 1024, a.smem_per_block = 227 * 1024, a.smem_alloc_unit = 128;
      a.smem_reserved_per_block = 1024;
      break;
    default:
      throw_invalid_argument("cc",
                             "no published limits here for this compute capability "
                             "(known: 70, 75, 80, 86, 89, 90)");
  }
  a.max_warps_per_sm = a.max_threads_per_sm / a.warp_size;
  return a;
}

const char* to_string(OccupancyLimiter l) {
  switch (l) {
    case OccupancyLimiter::kNone:
      return "none";
    case OccupancyLimiter::kWarps:
      return "warps";
    case OccupancyLimiter::kBlocks:
      return "blocks";
    case OccupancyLimiter::kRegisters:
      return "registers";
    case OccupancyLimiter::kSharedMemory:
      return "shared memory";
    case OccupancyLimiter::kDoesNotFit:
      return "does not fit";
  }
  return "?";
}

std::string describe(const Occupancy& o) {
  const auto lim = [](int b) {
    return b == std::numeric_limits<int>::max() ? std::string("-") : std::to_string(b);
  };
  return fmt::format(
      "{} blocks/SM, {} warps/SM, occupancy {:.1f}%, limited by {} (blocks by warps {}, by the "
      "block limit {}, by registers {}, by shared memory {})",
      o.blocks_per_sm, o.warps_per_sm, 100.0 * o.occupancy, to_string(o.limiter),
      lim(o.blocks_by_warps), lim(o.blocks_by_blocks), lim(o.blocks_by_regs),
      lim(o.blocks_by_smem));
}

}  // namespace cudalab::ch05
