// Chapter 5 — scan (prefix sum), from one block to the whole device.
//
// inclusive: out[i] = in[0] + ... + in[i];  exclusive: out[i] = in[0] + ... + in[i-1], out[0] = 0.
// A scan must read n and write n elements (8n bytes for float/int): the ceiling is a copy. The
// single-pass decoupled look-back scan (Merrill & Garland 2016) gets close to it; the classic
// scan-then-propagate moves about twice the bytes. Target on an H200: the best variant >= 90% of
// CUB's DeviceScan::InclusiveSum on 2^28 elements, in the same run.
//
// Temporary storage, CUB's habit: ask scan_workspace_bytes(n), allocate it once yourself (never
// inside a timed loop) and pass it to every call; its content on entry does not matter (the
// look-back scan clears its tile states with one cudaMemsetAsync per call). One workspace serves
// one call at a time. `in` and `out` must not overlap (checked).
#pragma once

#include <cuda_runtime_api.h>

#include <cstddef>

namespace cudalab::ch05 {

enum class ScanKind { kInclusive, kExclusive };

// ---- Block level: each tile of kScanTile consecutive elements is scanned on its own ----------
// (a segmented scan with segments of kScanTile; the building block of the multi-block scan).
inline constexpr unsigned kScanTile = 512;
inline constexpr unsigned kKoggeStoneThreads = kScanTile;     // one element per thread
inline constexpr unsigned kBrentKungThreads = kScanTile / 2;  // two elements per thread
static_assert(kScanTile % 64 == 0 && kScanTile <= 1024 && (kScanTile & (kScanTile - 1)) == 0,
              "a power-of-two tile that one block of at most 1024 threads holds");

enum class BlockScanAlgo {
  kKoggeStone,  // log2(T) steps, each element adds the one `offset` to its left: T log T adds
                // (exercise 5.3)
  kBrentKung,   // up-sweep + down-sweep tree: 2T adds, 2 log2(T) steps (work-efficient)
};
const char* to_string(BlockScanAlgo a);

void tile_scan(const float* in, float* out, std::size_t n, BlockScanAlgo algo, ScanKind kind,
               cudaStream_t stream = nullptr);
void tile_scan(const int* in, int* out, std::size_t n, BlockScanAlgo algo, ScanKind kind,
               cudaStream_t stream = nullptr);

// ---- Device level: a scan of all n elements ---------------------------------------------------
enum class ScanVariant {
  kKoggeStone,         // scan-then-propagate: tile scans (Kogge-Stone), scan of the tile sums
                       // (recursively), then add each tile's prefix: ~4n elements moved
  kBrentKung,          // the same with Brent-Kung tile scans
  kDecoupledLookback,  // single pass: a tile's prefix comes from its predecessors' published
                       // states (Merrill & Garland 2016): ~2n elements moved (exercise 5.4)
};
inline constexpr ScanVariant kAllScanVariants[] = {
    ScanVariant::kKoggeStone, ScanVariant::kBrentKung, ScanVariant::kDecoupledLookback};
const char* to_string(ScanVariant v);

// Items each thread of the look-back scan holds: 32 ints/floats = eight 16-byte vectors.
inline constexpr unsigned kLookbackThreads = 256;
inline constexpr unsigned kLookbackItems = 32;
inline constexpr unsigned kLookbackTile = kLookbackThreads * kLookbackItems;  // 8192 elements

// Bytes of device workspace any variant needs for n elements of float or int.
std::size_t scan_workspace_bytes(std::size_t n);

// out[0, n) = scan of in[0, n). Int: exact (wraps on overflow). Float: rounding depends on the
// variant (the order of additions); see the tests for the bound.
void scan(const float* in, float* out, std::size_t n, ScanKind kind, void* workspace,
          std::size_t workspace_bytes, ScanVariant variant = ScanVariant::kDecoupledLookback,
          cudaStream_t stream = nullptr);
void scan(const int* in, int* out, std::size_t n, ScanKind kind, void* workspace,
          std::size_t workspace_bytes, ScanVariant variant = ScanVariant::kDecoupledLookback,
          cudaStream_t stream = nullptr);

}  // namespace cudalab::ch05
