// Starter track — write your code at the TODO marks; the tests of each exercise
// fail until you do. (Generated from chapters/05_patterns/reference/scan_2_propagate.cu by scripts/variants.py.)
// The multi-block scan-then-propagate, built on the tile scans of scan_1_block.cu.
//
// (1) scan every tile and keep its total, (2) scan the totals (the same algorithm, recursively,
// until one tile is left), (3) add the scanned total of tiles 0..b-1 to every element of tile b.
// Passes 1 and 3 each read and write all n elements: about 4n elements moved against 2n for a
// single-pass scan (scan_3_lookback.cu).
#include "ch05/scan.hpp"
#include "cudalab/check.hpp"
#include "cudalab/math.hpp"
#include "scan_common.hpp"

namespace cudalab::ch05::detail {
namespace {

constexpr unsigned kT = kScanTile;
constexpr unsigned kPropagateThreads = 256;

// Tile b >= 1 adds the scanned sum of tiles 0..b-1, scanned_sums[b - 1]. Launch: tiles - 1 blocks.
template <class T>
__global__ void __launch_bounds__(kPropagateThreads)
    add_tile_prefix(T* __restrict__ out, std::size_t n, const T* __restrict__ scanned_sums) {
  const std::size_t tile = std::size_t{blockIdx.x} + 1;  // tile 0 has nothing to its left
  // Off by one in the propagation of scan-then-propagate. After scanning the tile sums inclusively,
  // scanned_sums[b] is the sum of tiles 0..b: INCLUDING tile b. Tile b must add the sum of the
  // tiles BEFORE it, scanned_sums[b-1]; adding scanned_sums[b] counts tile b's own elements twice.
  // (Equivalently: an exclusive scan of the tile sums, indexed by b.) Mixing up inclusive and
  // exclusive prefixes is the classic scan bug. Caught by: ScanThenPropagateGpu.*/*_n_513 and every
  // size with more than one tile (kScanTile = 512). The fix: scanned_sums[tile - 1].
  const T prefix = scanned_sums[tile - 1];
  const std::size_t base = tile * kT;
  for (unsigned j = threadIdx.x; j < kT; j += kPropagateThreads)
    if (base + j < n) out[base + j] += prefix;
}

}  // namespace

std::size_t propagate_workspace_elems(std::size_t n) {
  std::size_t total = 0;
  for (std::size_t tiles = ceil_div<std::size_t>(n, kT); tiles > 1;
       tiles = ceil_div<std::size_t>(tiles, kT))
    total += tiles;
  return total;
}

template <class T>
void scan_then_propagate(const T* in, T* out, std::size_t n, ScanKind kind, BlockScanAlgo algo,
                         T* level_sums, cudaStream_t stream) {
  if (n == 0) return;
  const std::size_t tiles = ceil_div<std::size_t>(n, kT);
  launch_tile_scan(in, out, n, algo, kind, tiles > 1 ? level_sums : nullptr, stream);
  if (tiles == 1) return;
  // The tile sums, scanned in place (inclusive): level_sums[b] = sum of tiles 0..b.
  scan_then_propagate(level_sums, level_sums, tiles, ScanKind::kInclusive, algo, level_sums + tiles,
                      stream);
  add_tile_prefix<T>
      <<<static_cast<unsigned>(tiles - 1), kPropagateThreads, 0, stream>>>(out, n, level_sums);
  CUDALAB_CHECK_LAUNCH();
}

template void scan_then_propagate<float>(const float*, float*, std::size_t, ScanKind, BlockScanAlgo,
                                         float*, cudaStream_t);
template void scan_then_propagate<int>(const int*, int*, std::size_t, ScanKind, BlockScanAlgo, int*,
                                       cudaStream_t);

}  // namespace cudalab::ch05::detail
