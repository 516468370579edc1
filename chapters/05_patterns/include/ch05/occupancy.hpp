// Chapter 5 — occupancy: how many blocks and warps an SM can hold, why, and what it costs.
//
// Two halves:
//  * a CPU occupancy calculator (exercise 5.8): the arithmetic of the CUDA Occupancy Calculator,
//    from block size, registers per thread and shared memory per block to resident blocks and
//    warps per SM, for the published limits of several GPU generations (tested on CI);
//  * the runtime's occupancy API on real kernels: cudaOccupancyMaxActiveBlocksPerMultiprocessor,
//    cudaOccupancyMaxPotentialBlockSize, and probe kernels templated on their register and shared
//    memory use (one bounded by __launch_bounds__) so the benchmark can time each occupancy.
#pragma once

#include <cuda_runtime_api.h>

#include <cstddef>
#include <string>

namespace cudalab::ch05 {

// ---- the CPU calculator --------------------------------------------------------------------

// Per-SM limits of one compute capability (CUDA C++ Programming Guide, "Technical Specifications
// per Compute Capability"; allocation rules as in the toolkit's cuda_occupancy.h).
struct ArchLimits {
  int cc = 0;  // 90 for compute capability 9.0
  int warp_size = 32;
  int max_threads_per_block = 1024;
  int max_threads_per_sm = 0;  // = 32 x max_warps_per_sm
  int max_warps_per_sm = 0;
  int max_blocks_per_sm = 0;
  int regs_per_sm = 65536;     // 32-bit registers in the register file
  int regs_per_block = 65536;  // the most one block may hold
  int max_regs_per_thread = 255;
  int reg_alloc_unit = 256;         // registers are given to a warp in chunks of 256 (8 per thread)
  int sub_partitions = 4;           // an SM is 4 quadrants; each warp's registers live in one
  std::size_t smem_per_sm = 0;      // the largest shared-memory carve-out of the unified L1
  std::size_t smem_per_block = 0;   // the most one block may use (above 48 KiB: opt-in)
  std::size_t smem_alloc_unit = 0;  // shared memory is given to a block in chunks of this size
  std::size_t smem_reserved_per_block = 0;  // taken by the driver for each block (1 KiB on sm_80+)
};

// Published limits for cc = 70, 75, 80, 86, 89, 90; std::invalid_argument for any other.
ArchLimits arch_limits(int cc);

enum class OccupancyLimiter {
  kNone,          // (not computed)
  kWarps,         // max_warps_per_sm / warps per block
  kBlocks,        // max_blocks_per_sm
  kRegisters,     // the register file
  kSharedMemory,  // shared memory per SM
  kDoesNotFit     // one block exceeds a per-block limit: 0 blocks
};

struct Occupancy {
  int blocks_per_sm = 0;   // resident blocks: the minimum of the four limits below
  int warps_per_sm = 0;    // blocks_per_sm x warps per block
  double occupancy = 0.0;  // warps_per_sm / max_warps_per_sm
  OccupancyLimiter limiter = OccupancyLimiter::kNone;  // which limit gave blocks_per_sm
  int blocks_by_warps = 0, blocks_by_blocks = 0, blocks_by_regs = 0, blocks_by_smem = 0;
};

// Exercise 5.8. block_threads in 1..max_threads_per_block, regs_per_thread in
// 0..max_regs_per_thread; smem_per_block is static + dynamic shared memory of one block.
// Throws std::invalid_argument naming the argument. A block that needs more registers or shared
// memory than one block may have gives 0 blocks, limiter kDoesNotFit. A limit that does not apply
// (0 registers; 0 bytes of shared memory
// before sm_80, where no block reserve exists) counts as std::numeric_limits<int>::max() blocks.
// When several limits tie, the limiter is the first of: warps, blocks, registers, shared memory.
Occupancy occupancy(const ArchLimits& arch, int block_threads, int regs_per_thread,
                    std::size_t smem_per_block);

std::string describe(const Occupancy& o);
const char* to_string(OccupancyLimiter limiter);

// ---- the occupancy API on real kernels -----------------------------------------------------

// Probe kernels: y[i] = x[i] + s, s = the sum (in k order, float) of the kKeep values x[base + lane
// + 32 k], k < kKeep, that lane `lane` of a warp loads from its warp's chunk of 32 x kKeep floats
// (chunks base = 32 kKeep w for global warp w = blockIdx.x * warps_per_block + warp, grid-striding
// by all warps; values past n count as 0). Each thread loads its kKeep values before it stores any,
// so kKeep sets the register count (and the loads in flight); kStaticSmem adds a static shared
// array; kBounded adds __launch_bounds__(256, 4), which caps registers at 65536 / (256 x 4) = 64
// per thread so that 4 blocks fit.
enum class OccupancyProbe {
  kKeep4,          // registers per thread on sm_90 (ptxas, CUDA 13): 24
  kKeep32,         // 87
  kKeep64,         // 128
  kKeep128,        // 152: one 256-thread block per SM
  kKeep64Bounded,  // kKeep64 with __launch_bounds__(256, 4): capped at 64 registers, ~100 B spilled
  kKeep4Smem16K,   // kKeep4 + 16 KiB static shared memory per block
  kKeep4Smem40K    // kKeep4 + 40 KiB static shared memory per block
};
inline constexpr int kOccupancyProbeCount = 7;
static_assert(static_cast<int>(OccupancyProbe::kKeep4Smem40K) + 1 == kOccupancyProbeCount);
inline constexpr int kOccupancyProbeMaxBlock = 256;  // the probes' __launch_bounds__

const char* to_string(OccupancyProbe probe);

struct ProbeResources {
  int num_regs = 0;
  std::size_t local_bytes = 0;
  std::size_t static_smem = 0;
  int max_threads_per_block = 0;
};
ProbeResources probe_resources(OccupancyProbe probe);

// cudaOccupancyMaxActiveBlocksPerMultiprocessor for the probe at this block size and dynamic
// shared memory (bytes per block; above 48 KiB the probe is opted in first).
int probe_blocks_per_sm(OccupancyProbe probe, int block_threads, std::size_t dynamic_smem);

// cudaOccupancyMaxPotentialBlockSize: the block size with the highest occupancy, and the smallest
// grid that fills the GPU at that size.
struct SuggestedLaunch {
  int block_threads = 0;
  int min_grid = 0;
};
SuggestedLaunch probe_suggested_launch(OccupancyProbe probe, std::size_t dynamic_smem);

// Runs the probe on n elements (device pointers, any n) with this block size (a multiple of 32 in
// 32..256) and dynamic shared memory per block, on a grid of resident blocks x SMs (one wave).
void run_occupancy_probe(OccupancyProbe probe, const float* x, float* y, std::size_t n,
                         int block_threads, std::size_t dynamic_smem,
                         cudaStream_t stream = nullptr);
// kKeep of a probe (the CPU oracle of run_occupancy_probe needs it).
int probe_keep(OccupancyProbe probe);

}  // namespace cudalab::ch05
