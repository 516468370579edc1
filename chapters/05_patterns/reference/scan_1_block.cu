// Block-level scans (Kogge-Stone, Brent-Kung): every tile scanned on its own.
//
// Tile kernel: one block scans one tile of kScanTile elements in shared memory and writes the
// tile's total to tile_sums[b]. Launch: ceil(n / kScanTile) blocks of kKoggeStoneThreads (one
// element per thread) or kBrentKungThreads (two per thread).
//  - Kogge-Stone (exercise 5.3): log2(T) steps of one add per thread; about T log2 T adds (4097
//    for T = 512), but every step is short and regular.
//  - Brent-Kung: an up-sweep builds partial sums at the nodes of a binary tree (T - 1 adds), a
//    down-sweep hands them down (T - log2 T - 1 adds): ~2T adds, 2 log2 T steps, and more idle
//    threads per step. Work-efficient, but not faster on one block of a GPU.
// The multi-block scan built on these tiles is in scan_2_propagate.cu.
#include "ch05/scan.hpp"
#include "cudalab/check.hpp"
#include "cudalab/math.hpp"
#include "scan_common.hpp"

namespace cudalab::ch05::detail {
namespace {

constexpr unsigned kT = kScanTile;

// In place: s[0, kT) becomes its inclusive scan. Block of kT threads, one element each. Ends with
// a barrier, so every thread may read any s[j] afterwards.
template <class T>
__device__ void kogge_stone_scan(T* s) {
  const unsigned tid = threadIdx.x;
  // BEGIN EXERCISE 5.3
  // TODO(5.3): kogge_stone_scan(s), in place.
  //   Contract: called by all kT threads of the block (one element each) after s[0, kT) is
  //     complete; on return s[i] = s[0] + ... + s[i] (the inclusive scan) and every thread may read
  //     any s[j].
  //   Constraints: Kogge-Stone: log2(kT) steps, each one add per thread; in place in this one
  //     shared array (no second buffer); race-free (compute-sanitizer --tool racecheck must be
  //     clean).
  //   Goal: BM_scan_int/kogge_stone >= 0.22x BM_scan_int_cub at 2^28 ints;
  //     `scripts/lab check 5.3`.
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
__global__ void __launch_bounds__(kAlgo == BlockScanAlgo::kKoggeStone ? kKoggeStoneThreads
                                                                      : kBrentKungThreads)
    tile_scan_kernel(const T* in, T* out, std::size_t n, ScanKind kind, T* tile_sums) {
  constexpr unsigned kThreads =
      kAlgo == BlockScanAlgo::kKoggeStone ? kKoggeStoneThreads : kBrentKungThreads;
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
    if (base + j < n)
      out[base + j] = kind == ScanKind::kInclusive ? s[j] : (j == 0 ? T{0} : s[j - 1]);
  if (tile_sums != nullptr && threadIdx.x == 0) tile_sums[blockIdx.x] = s[kT - 1];
}

}  // namespace

template <class T>
void launch_tile_scan(const T* in, T* out, std::size_t n, BlockScanAlgo algo, ScanKind kind,
                      T* tile_sums, cudaStream_t stream) {
  if (n == 0) return;
  const std::size_t tiles = ceil_div<std::size_t>(n, kT);
  require(tiles <= 0x7fffffff, "n", "needs more than 2^31 - 1 tiles");
  const dim3 grid(static_cast<unsigned>(tiles));
  if (algo == BlockScanAlgo::kKoggeStone)
    tile_scan_kernel<T, BlockScanAlgo::kKoggeStone>
        <<<grid, kKoggeStoneThreads, 0, stream>>>(in, out, n, kind, tile_sums);
  else
    tile_scan_kernel<T, BlockScanAlgo::kBrentKung>
        <<<grid, kBrentKungThreads, 0, stream>>>(in, out, n, kind, tile_sums);
  CUDALAB_CHECK_LAUNCH();
}

template void launch_tile_scan<float>(const float*, float*, std::size_t, BlockScanAlgo, ScanKind,
                                      float*, cudaStream_t);
template void launch_tile_scan<int>(const int*, int*, std::size_t, BlockScanAlgo, ScanKind, int*,
                                    cudaStream_t);

}  // namespace cudalab::ch05::detail
