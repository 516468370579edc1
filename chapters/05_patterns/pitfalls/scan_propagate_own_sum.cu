// PITFALL (replaces reference/scan_block.cu, exercise 5.3): off by one in the propagation of
// scan-then-propagate. After scanning the tile sums inclusively, scanned_sums[b] is the sum of
// tiles 0..b: INCLUDING tile b. Tile b must add the sum of the tiles BEFORE it, scanned_sums[b-1];
// adding scanned_sums[b] counts tile b's own elements twice. (Equivalently: an exclusive scan of
// the tile sums, indexed by b.) Mixing up inclusive and exclusive prefixes is the classic scan bug.
// Caught by: ScanThenPropagateGpu.*/*_n_513 and every size with more than one tile (kScanTile = 512).
// Block-level scans (Kogge-Stone, Brent-Kung) and the multi-block scan-then-propagate.
//
// Tile kernel: one block scans one tile of kScanTile elements in shared memory and writes the
// tile's total to tile_sums[b]. Launch: ceil(n / kScanTile) blocks of kKoggeStoneThreads (one
// element per thread) or kBrentKungThreads (two per thread).
//  - Kogge-Stone (exercise 5.3): log2(T) steps; at step `offset` every element adds the value
//    `offset` places to its left. About T log2 T adds (4097 for T = 512) but every step is one add
//    per thread: short and regular. Needs a barrier between a step's reads and its writes.
//  - Brent-Kung: an up-sweep builds partial sums at the nodes of a binary tree (T - 1 adds), a
//    down-sweep hands them down (T - log2 T - 1 adds): ~2T adds, 2 log2 T steps, and more idle
//    threads per step. Work-efficient, but not faster on one block of a GPU.
// Multi-block scan-then-propagate: (1) scan every tile and keep its total, (2) scan the totals
// (the same algorithm, recursively, until one tile is left), (3) add the scanned total of tiles
// 0..b-1 to every element of tile b. Passes 1 and 3 each read and write all n elements: about
// 4n elements moved against 2n for a single-pass scan (scan_lookback.cu).
#include "ch05/scan.hpp"
#include "cudalab/check.hpp"
#include "cudalab/math.hpp"
#include "scan_internal.hpp"

namespace cudalab::ch05::detail {
namespace {

constexpr unsigned kT = kScanTile;
constexpr unsigned kPropagateThreads = 256;

// In place: s[0, kT) becomes its inclusive scan. Block of kT threads, one element each. Ends with
// a barrier, so every thread may read any s[j] afterwards.
template <class T>
__device__ void kogge_stone_scan(T* s) {
  const unsigned tid = threadIdx.x;
  // BEGIN EXERCISE 5.3
  // TODO(5.3): Kogge-Stone. For offset = 1, 2, 4, ..., kT / 2: every thread with tid >= offset
  //            adds s[tid - offset] to s[tid]. All reads of a step must happen before any write
  //            of that step (thread tid - offset may be updating s[tid - offset] meanwhile): read
  //            into a register, __syncthreads(), write, __syncthreads().
  // STARTER: (void)s; (void)tid;
  for (unsigned offset = 1; offset < kT; offset *= 2) {
    const T left = tid >= offset ? s[tid - offset] : T{0};
    __syncthreads();  // every read of this step is done before anyone overwrites s
    s[tid] += left;
    __syncthreads();  // every write of this step is done before the next step reads
  }
  // END EXERCISE
}

// In place: s[0, kT) becomes its inclusive scan. Block of kT / 2 threads, two elements each.
template <class T>
__device__ void brent_kung_scan(T* s) {
  const unsigned tid = threadIdx.x;
  // Up-sweep: after the step with `stride`, s[k * 2 stride - 1] holds the sum of its 2 stride
  // elements ending there (the tree's nodes).
  for (unsigned stride = 1; stride < kT; stride *= 2) {
    __syncthreads();  // the previous level's nodes are written before this level reads them
    const unsigned i = (tid + 1) * 2 * stride - 1;
    if (i < kT) s[i] += s[i - stride];
  }
  // Down-sweep: each node hands its sum to the node `stride` to its right that lacks it.
  for (unsigned stride = kT / 4; stride > 0; stride /= 2) {
    __syncthreads();  // the level above is complete before this level reads it
    const unsigned i = (tid + 1) * 2 * stride - 1;
    if (i + stride < kT) s[i + stride] += s[i];
  }
  __syncthreads();  // the scan is complete before anyone reads it
}

template <class T, BlockScanAlgo kAlgo>
__global__ void __launch_bounds__(kAlgo == BlockScanAlgo::kKoggeStone ? kKoggeStoneThreads : kBrentKungThreads)
tile_scan_kernel(const T* in, T* out, std::size_t n, ScanKind kind, T* tile_sums) {
  constexpr unsigned kThreads = kAlgo == BlockScanAlgo::kKoggeStone ? kKoggeStoneThreads : kBrentKungThreads;
  static_assert(kT % kThreads == 0);
  __shared__ T s[kT];
  const std::size_t base = std::size_t{blockIdx.x} * kT;
  // Coalesced: thread j loads elements j, j + kThreads, ...; past n the identity 0.
  for (unsigned j = threadIdx.x; j < kT; j += kThreads) s[j] = base + j < n ? in[base + j] : T{0};
  __syncthreads();  // the tile is in shared memory before the scan reads it
  if constexpr (kAlgo == BlockScanAlgo::kKoggeStone)
    kogge_stone_scan(s);
  else
    brent_kung_scan(s);
  // Exclusive = the inclusive scan shifted right by one (no subtraction: exact for floats too).
  for (unsigned j = threadIdx.x; j < kT; j += kThreads)
    if (base + j < n) out[base + j] = kind == ScanKind::kInclusive ? s[j] : (j == 0 ? T{0} : s[j - 1]);
  if (tile_sums != nullptr && threadIdx.x == 0) tile_sums[blockIdx.x] = s[kT - 1];
}

// Tile b >= 1 adds the scanned sum of tiles 0..b-1, scanned_sums[b - 1]. Launch: tiles - 1 blocks.
template <class T>
__global__ void __launch_bounds__(kPropagateThreads)
add_tile_prefix(T* __restrict__ out, std::size_t n, const T* __restrict__ scanned_sums) {
  const std::size_t tile = std::size_t{blockIdx.x} + 1;  // tile 0 has nothing to its left
  const T prefix = scanned_sums[tile];  // BUG: includes this tile's own sum
  const std::size_t base = tile * kT;
  for (unsigned j = threadIdx.x; j < kT; j += kPropagateThreads)
    if (base + j < n) out[base + j] += prefix;
}

}  // namespace

template <class T>
void launch_tile_scan(const T* in, T* out, std::size_t n, BlockScanAlgo algo, ScanKind kind, T* tile_sums,
                      cudaStream_t stream) {
  if (n == 0) return;
  const std::size_t tiles = ceil_div<std::size_t>(n, kT);
  require(tiles <= 0x7fffffff, "n", "needs more than 2^31 - 1 tiles");
  const dim3 grid(static_cast<unsigned>(tiles));
  if (algo == BlockScanAlgo::kKoggeStone)
    tile_scan_kernel<T, BlockScanAlgo::kKoggeStone><<<grid, kKoggeStoneThreads, 0, stream>>>(in, out, n, kind, tile_sums);
  else
    tile_scan_kernel<T, BlockScanAlgo::kBrentKung><<<grid, kBrentKungThreads, 0, stream>>>(in, out, n, kind, tile_sums);
  CUDALAB_CHECK_LAUNCH();
}

std::size_t propagate_workspace_elems(std::size_t n) {
  std::size_t total = 0;
  for (std::size_t tiles = ceil_div<std::size_t>(n, kT); tiles > 1; tiles = ceil_div<std::size_t>(tiles, kT))
    total += tiles;
  return total;
}

template <class T>
void scan_then_propagate(const T* in, T* out, std::size_t n, ScanKind kind, BlockScanAlgo algo, T* level_sums,
                         cudaStream_t stream) {
  if (n == 0) return;
  const std::size_t tiles = ceil_div<std::size_t>(n, kT);
  launch_tile_scan(in, out, n, algo, kind, tiles > 1 ? level_sums : nullptr, stream);
  if (tiles == 1) return;
  // The tile sums, scanned in place (inclusive): level_sums[b] = sum of tiles 0..b.
  scan_then_propagate(level_sums, level_sums, tiles, ScanKind::kInclusive, algo, level_sums + tiles, stream);
  add_tile_prefix<T><<<static_cast<unsigned>(tiles - 1), kPropagateThreads, 0, stream>>>(out, n, level_sums);
  CUDALAB_CHECK_LAUNCH();
}

template void launch_tile_scan<float>(const float*, float*, std::size_t, BlockScanAlgo, ScanKind, float*, cudaStream_t);
template void launch_tile_scan<int>(const int*, int*, std::size_t, BlockScanAlgo, ScanKind, int*, cudaStream_t);
template void scan_then_propagate<float>(const float*, float*, std::size_t, ScanKind, BlockScanAlgo, float*, cudaStream_t);
template void scan_then_propagate<int>(const int*, int*, std::size_t, ScanKind, BlockScanAlgo, int*, cudaStream_t);

}  // namespace cudalab::ch05::detail
