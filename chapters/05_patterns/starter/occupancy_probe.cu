// Starter track — write your code at the TODO marks; the tests of each exercise
// fail until you do. (Generated from chapters/05_patterns/reference/occupancy_probe.cu by scripts/variants.py.)
// The occupancy API on real kernels (worked example for the occupancy section; exercise 5.8 is
// the CPU calculator that must agree with it).
//
// A probe kernel computes y = x + s, where s is the sum of the kKeep values the thread loaded
// (lane l of a warp owns elements base + l + 32 k, k < kKeep, of its warp's 32 x kKeep chunk).
// Every value is loaded before any is stored and all of them are needed after s is known, so the
// kKeep values are live at once: registers grow with kKeep (on sm_90 with CUDA 13, ptxas gave
// 24, 87, 128, 152 for kKeep = 4, 32, 64, 128: other compilers differ, the trend does not).
// kSmemKiB adds a static shared array; kMinBlocks goes into __launch_bounds__(256, kMinBlocks),
// which tells ptxas to fit kMinBlocks blocks of 256 threads per SM: at most 65536 / (256 x
// kMinBlocks) registers per thread, spilling to local memory when the kernel needs more.
// Bytes: 8 per element (x read, y written), memory-bound, so time tracks the bytes in flight per
// SM = resident warps x loads in flight per warp (occupancy x ILP).
#include <atomic>

#include "ch05/occupancy.hpp"
#include "cudalab/check.hpp"
#include "cudalab/device.hpp"
#include "cudalab/math.hpp"

namespace cudalab::ch05 {
namespace {

template <int kKeep, int kSmemKiB, int kMinBlocks>
__global__ void __launch_bounds__(kOccupancyProbeMaxBlock, kMinBlocks)
    occupancy_probe_kernel(const float* __restrict__ x, float* __restrict__ y, std::size_t n) {
  constexpr int kPad = kSmemKiB > 0 ? kSmemKiB * 256 : 1;  // floats (>= 1: no zero-size arrays)
  static_assert(kSmemKiB == 0 || kPad >= kOccupancyProbeMaxBlock, "one slot per thread");
  __shared__ float pad[kPad];  // only occupies shared memory (the point of the probe)
  // Each warp owns chunks of 32 x kKeep consecutive floats; lane l takes elements l, l + 32, ...
  // of its chunk, so every load instruction of the warp reads 128 contiguous bytes (coalesced)
  // and the offsets k * 32 are compile-time constants folded into the load instruction (one base
  // register per thread instead of one 64-bit address per value).
  constexpr std::size_t kChunk = std::size_t{32} * kKeep;
  const std::size_t warps = std::size_t{gridDim.x} * (blockDim.x / 32);
  const unsigned lane = threadIdx.x % 32;
  for (std::size_t base = (std::size_t{blockIdx.x} * (blockDim.x / 32) + threadIdx.x / 32) * kChunk;
       base < n; base += warps * kChunk) {
    const std::size_t rem = n - base;  // elements left from the start of this chunk
    const bool full = rem >= kChunk;   // the common case: no per-element bounds checks needed
    const float* xp = x + base + lane;
    float* yp = y + base + lane;
    float v[kKeep];  // constant indices after unrolling: registers, not local memory
#pragma unroll
    for (int k = 0; k < kKeep; ++k) v[k] = (full || k * 32u + lane < rem) ? xp[k * 32] : 0.0f;
    float s = 0.0f;
#pragma unroll
    for (int k = 0; k < kKeep; ++k) s += v[k];  // every v[k] is needed again below: all live
#pragma unroll
    for (int k = 0; k < kKeep; ++k)
      if (full || k * 32u + lane < rem) yp[k * 32] = v[k] + s;
    // A volatile store keeps the shared array alive (ptxas would drop an array nobody touches);
    // each thread its own slot (kPad >= 1024 > blockDim), so racecheck sees no conflicting writes.
    if constexpr (kSmemKiB > 0) static_cast<volatile float*>(pad)[threadIdx.x] = s;
  }
}

using ProbeKernel = void (*)(const float*, float*, std::size_t);

struct ProbeEntry {
  ProbeKernel kernel;
  int keep;
  const char* name;
};

ProbeEntry probe_entry(OccupancyProbe p) {
  switch (p) {
    case OccupancyProbe::kKeep4:
      return {occupancy_probe_kernel<4, 0, 1>, 4, "keep4"};
    case OccupancyProbe::kKeep32:
      return {occupancy_probe_kernel<32, 0, 1>, 32, "keep32"};
    case OccupancyProbe::kKeep64:
      return {occupancy_probe_kernel<64, 0, 1>, 64, "keep64"};
    case OccupancyProbe::kKeep128:
      return {occupancy_probe_kernel<128, 0, 1>, 128, "keep128"};
    case OccupancyProbe::kKeep64Bounded:
      return {occupancy_probe_kernel<64, 0, 4>, 64, "keep64_launch_bounds_256_4"};
    case OccupancyProbe::kKeep4Smem16K:
      return {occupancy_probe_kernel<4, 16, 1>, 4, "keep4_smem16K"};
    case OccupancyProbe::kKeep4Smem40K:
      return {occupancy_probe_kernel<4, 40, 1>, 4, "keep4_smem40K"};
  }
  throw_invalid_argument("probe", "unknown OccupancyProbe");
}

// Lets the probe use up to the opt-in maximum of dynamic shared memory (above 48 KiB a kernel
// must ask: cudaFuncAttributeMaxDynamicSharedMemorySize). The occupancy API then checks a block
// against the opt-in limit, as our calculator does. Done once per probe and device (the result is
// remembered), so that timed loops do not pay for the attribute calls.
void opt_in_shared(OccupancyProbe p, ProbeKernel k) {
  static std::atomic<int> opted_device[kOccupancyProbeCount];  // device id + 1; 0 = not yet
  int dev = 0;
  CUDALAB_CHECK(cudaGetDevice(&dev));
  std::atomic<int>& slot = opted_device[static_cast<int>(p)];
  if (slot.load(std::memory_order_acquire) == dev + 1) return;
  int optin = 0;
  CUDALAB_CHECK(cudaDeviceGetAttribute(&optin, cudaDevAttrMaxSharedMemoryPerBlockOptin, dev));
  cudaFuncAttributes attr{};
  CUDALAB_CHECK(cudaFuncGetAttributes(&attr, reinterpret_cast<const void*>(k)));
  CUDALAB_CHECK(cudaFuncSetAttribute(reinterpret_cast<const void*>(k),
                                     cudaFuncAttributeMaxDynamicSharedMemorySize,
                                     optin - static_cast<int>(attr.sharedSizeBytes)));
  slot.store(dev + 1, std::memory_order_release);  // a race here only repeats the same calls
}

}  // namespace

const char* to_string(OccupancyProbe p) {
  return probe_entry(p).name;
}
int probe_keep(OccupancyProbe p) {
  return probe_entry(p).keep;
}

ProbeResources probe_resources(OccupancyProbe p) {
  cudaFuncAttributes attr{};
  CUDALAB_CHECK(cudaFuncGetAttributes(&attr, reinterpret_cast<const void*>(probe_entry(p).kernel)));
  return {attr.numRegs, attr.localSizeBytes, attr.sharedSizeBytes, attr.maxThreadsPerBlock};
}

int probe_blocks_per_sm(OccupancyProbe p, int block_threads, std::size_t dynamic_smem) {
  const ProbeKernel k = probe_entry(p).kernel;
  require(block_threads >= 1 && block_threads <= kOccupancyProbeMaxBlock, "block_threads",
          "must be in 1..256 (the probes' __launch_bounds__)");
  opt_in_shared(p, k);
  int blocks = 0;
  CUDALAB_CHECK(
      cudaOccupancyMaxActiveBlocksPerMultiprocessor(&blocks, k, block_threads, dynamic_smem));
  return blocks;
}

SuggestedLaunch probe_suggested_launch(OccupancyProbe p, std::size_t dynamic_smem) {
  const ProbeKernel k = probe_entry(p).kernel;
  opt_in_shared(p, k);
  SuggestedLaunch s;
  // Tries every block size up to the kernel's limit (256 here) and keeps the best occupancy.
  CUDALAB_CHECK(cudaOccupancyMaxPotentialBlockSize(&s.min_grid, &s.block_threads, k, dynamic_smem,
                                                   kOccupancyProbeMaxBlock));
  return s;
}

void run_occupancy_probe(OccupancyProbe p, const float* x, float* y, std::size_t n,
                         int block_threads, std::size_t dynamic_smem, cudaStream_t stream) {
  const ProbeEntry e = probe_entry(p);
  require(
      block_threads >= 32 && block_threads <= kOccupancyProbeMaxBlock && block_threads % 32 == 0,
      "block_threads", "must be a multiple of 32 in 32..256");
  require_device_pointer(x, n, "x");
  require_device_pointer(y, n, "y");
  const int per_sm = probe_blocks_per_sm(p, block_threads, dynamic_smem);
  require(per_sm > 0, "dynamic_smem", "a block of this probe does not fit on an SM");
  if (n == 0) return;
  const int sms = current_sm_count();
  // One wave of resident blocks (grid-stride over the chunks), never more blocks than chunks.
  const std::size_t chunks = ceil_div<std::size_t>(
      n, std::size_t{static_cast<unsigned>(block_threads)} * e.keep);  // per block
  const std::size_t wave = static_cast<std::size_t>(per_sm) * static_cast<std::size_t>(sms);
  const unsigned grid = static_cast<unsigned>(chunks < wave ? chunks : wave);
  void* args[] = {&x, &y, &n};
  CUDALAB_CHECK(cudaLaunchKernel(reinterpret_cast<const void*>(e.kernel), dim3(grid),
                                 dim3(static_cast<unsigned>(block_threads)), args, dynamic_smem,
                                 stream));
  CUDALAB_CHECK_LAUNCH();
}

}  // namespace cudalab::ch05
