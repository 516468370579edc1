// Starter track — write your code at the TODO marks; the tests of each exercise
// fail until you do. (Generated from chapters/05_patterns/reference/scan_common.hpp by scripts/variants.py.)
// Chapter 5 scan, between the host API (scan.cu) and the step files scan_1_block.cu,
// scan_2_propagate.cu, scan_3_lookback.cu. Host-only; compiles on its own.
#pragma once

#include <cuda_runtime_api.h>

#include <cstddef>

#include "ch05/scan.hpp"

namespace cudalab::ch05::detail {

// scan_1_block.cu: every tile of kScanTile elements scanned on its own; when tile_sums is not null,
// tile_sums[b] = the sum of tile b. `in` may equal `out`.
template <class T>
void launch_tile_scan(const T* in, T* out, std::size_t n, BlockScanAlgo algo, ScanKind kind,
                      T* tile_sums, cudaStream_t stream);

// scan_2_propagate.cu: scan-then-propagate over all n elements. `level_sums` holds
// propagate_workspace_elems(n) elements.
template <class T>
void scan_then_propagate(const T* in, T* out, std::size_t n, ScanKind kind, BlockScanAlgo algo,
                         T* level_sums, cudaStream_t stream);
std::size_t propagate_workspace_elems(std::size_t n);

// scan_3_lookback.cu: the single-pass scan. `tile_states` holds ceil(n / kLookbackTile) 64-bit
// words and `tile_counter` one unsigned, all zero on entry (the caller clears them).
template <class T>
void launch_lookback_scan(const T* in, T* out, std::size_t n, ScanKind kind,
                          unsigned long long* tile_states, unsigned* tile_counter,
                          cudaStream_t stream);

}  // namespace cudalab::ch05::detail
