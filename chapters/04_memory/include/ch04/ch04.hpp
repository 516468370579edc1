// Chapter 4 — the memory hierarchy: coalescing, shared memory and its banks, constant memory,
// host-device transfers (pageable, pinned, mapped).
//
// Every function takes device pointers and a stream (default: the legacy default stream), like
// CUB. Any size works, 0 included; bad arguments throw std::invalid_argument naming the argument.
#pragma once

#include <cuda_runtime_api.h>

#include <cstddef>
#include <cstdint>
#include <span>
#include <string_view>

namespace cudalab::ch04 {

// Threads per block of every 1D kernel in this chapter (whole warps, any GPU).
inline constexpr unsigned kBlock = 256;
static_assert(kBlock % 32 == 0 && kBlock <= 1024, "a block is whole warps, at most 1024 threads");

// ---------------------------------------------------------------------------------------------
// Exercise 4.1 — coalescing. A warp's 32 loads are served by 32-byte sectors: consecutive floats
// need 4 sectors per warp, a stride of s floats needs min(4 s, 32) sectors for the same 128 useful
// bytes, and a misaligned start needs one sector more.

// out[i] = in[i * stride] for i < n; `in` holds strided_input_size(n, stride) floats. stride >= 1.
void strided_copy(const float* in, float* out, std::size_t n, unsigned stride,
                  cudaStream_t stream = nullptr);
// (n - 1) * stride + 1 (0 when n = 0): the floats a strided copy reads from.
std::size_t strided_input_size(std::size_t n, unsigned stride);

// out[i] = in[i + offset] for i < n; `in` holds n + offset floats. The reads start `offset` floats
// past a 256-byte-aligned allocation, so every warp's 128 bytes straddle a sector boundary.
void offset_copy(const float* in, float* out, std::size_t n, unsigned offset,
                 cudaStream_t stream = nullptr);

// ---------------------------------------------------------------------------------------------
// Exercise 4.2 — matrix transpose ladder. `in` is rows x cols, row-major; `out` is cols x rows,
// row-major: out[c * rows + r] = in[r * cols + c]. Any shape (1 x N, N x 1, odd sizes, 0).
//
// Every variant is launched as a 1D grid of tiles (tile t covers tile row t / tiles_x, tile column
// t % tiles_x), so neither dimension is limited by the 65535 blocks a grid may have in y.
struct TransposeShape {
  static constexpr int kThreadsX = 32;  // a warp spans one tile row: 128 contiguous bytes
  static constexpr int kThreadsY = 8;   // 8 warps per block; each thread moves kTile / 8 rows
};
static_assert(TransposeShape::kThreadsX == 32, "a warp must cover one row of a tile");

enum class TransposeVariant {
  kNaive,     // read rows (coalesced), write columns (stride `rows`): 32 sectors per warp store
  kTiled,     // 32x32 shared-memory tile: both global sides coalesced; a 32-way bank conflict
  kPadded,    // tile[32][33]: the column read of the tile hits 32 different banks
  kPadded64,  // tile[64][65], 16 elements per thread: more independent loads in flight
};
inline constexpr TransposeVariant kTransposeVariants[] = {
    TransposeVariant::kNaive, TransposeVariant::kTiled, TransposeVariant::kPadded,
    TransposeVariant::kPadded64};
std::string_view name(TransposeVariant variant);  // "naive", "tiled", "padded", "padded64"

void transpose(const float* in, float* out, int rows, int cols,
               TransposeVariant variant = TransposeVariant::kPadded64,
               cudaStream_t stream = nullptr);

// out = in for a rows x cols matrix, with the naive transpose's launch shape (32 x 8 threads,
// 4 elements per thread): the ceiling of this structure, beside cudaMemcpy in the benchmark.
void copy_2d(const float* in, float* out, int rows, int cols, cudaStream_t stream = nullptr);

// ---------------------------------------------------------------------------------------------
// Exercise 4.3 — shared-memory banks. Shared memory is 32 banks of 4-byte words; word w lives in
// bank w % 32. A warp's access takes as many passes ("wavefronts") as the largest number of
// DIFFERENT words that fall into one bank; lanes reading the same word share it (broadcast).
inline constexpr int kBanks = 32;

// The conflict degree of one warp's access: `words` holds each active lane's 4-byte word index
// (at most 32 lanes). 1 = conflict-free, 32 = fully serialized; 0 for an empty access.
int bank_conflict_ways(std::span<const std::uint32_t> words);

// Conflict degree when the 32 lanes of a warp read one column of a float array whose rows are
// `row_words` words long (tile[lane][c]): 32 for row_words = 32, 1 for 33. row_words >= 1.
int column_read_conflict_ways(int row_words);

// A kernel that only reads shared memory, to time bank conflicts. Each block fills a
// [32][kMaxSmemStride] float array with buf[k] = k; then lane l of warp w reads, at iteration t,
// buf[l * stride + (t + w) % 32] and sums. Warps read a column: stride 32 -> 32-way conflict,
// stride 33 -> conflict-free. out holds blocks * kSmemThreads floats (one sum per thread).
inline constexpr int kMaxSmemStride = 33;
inline constexpr unsigned kSmemThreads = 256;
inline constexpr int kMaxSmemIterations = 8192;  // keeps every sum an exact float (< 2^24)
void smem_column_read(float* out, unsigned blocks, int stride, int iterations,
                      cudaStream_t stream = nullptr);
// What thread `thread` (global index) of smem_column_read writes (exact).
float smem_column_read_oracle(std::size_t thread, int stride, int iterations);

// ---------------------------------------------------------------------------------------------
// Exercise 4.4 — constant memory. y[i] = sum_k c[k][p] x[i]^k (Horner), p = 0 for every element
// (kBroadcast: the warp reads one address per coefficient) or p = i % 32 (kPerLane: 32 different
// addresses). `coeffs` is device memory, terms x kPolys floats, coefficient k of polynomial p at
// coeffs[k * kPolys + p]. kConstant copies them to a __constant__ bank first (stream-ordered;
// calls on different streams with different coefficients must not overlap: one bank per module).
inline constexpr int kMaxTerms = 32;
inline constexpr int kPolys = 32;
enum class CoeffMemory { kGlobal, kConstant };
enum class CoeffPattern { kBroadcast, kPerLane };
void eval_polynomials(const float* x, float* y, std::size_t n, const float* coeffs, int terms,
                      CoeffMemory memory, CoeffPattern pattern, cudaStream_t stream = nullptr);

// ---------------------------------------------------------------------------------------------
// Exercise 4.5 — mapped (zero-copy) host memory against copy-then-kernel.
// out[i] = sum_{r < passes} in[(i + r * kRotation) % n]: every pass reads the whole input once.
inline constexpr std::size_t kRotation = 1024;
inline constexpr int kMaxPasses = 64;
void rotate_sum(const float* in, float* out, std::size_t n, int passes,
                cudaStream_t stream = nullptr);

enum class HostAccess {
  kCopyThenKernel,  // cudaMemcpyAsync(staging <- host_in) on `stream`, then rotate_sum(staging)
  kZeroCopy,        // the kernel reads host_in through its mapped device address: no copy,
                    // but every pass crosses the PCIe bus again
};
// host_in: pinned host memory (cudaHostAlloc / PinnedBuffer), n floats. staging: device memory of
// n floats (used by kCopyThenKernel; may be null for kZeroCopy). out: device memory, n floats.
void rotate_sum_from_host(const float* host_in, float* staging, float* out, std::size_t n,
                          int passes, HostAccess access, cudaStream_t stream = nullptr);

// ---------------------------------------------------------------------------------------------
// Transfer model (cpu/transfer_fit.cpp): t(bytes) = latency + bytes / bandwidth, fitted by least
// squares weighted by 1 / t^2 (relative errors) to measured (bytes, seconds) pairs.
struct TransferFit {
  double latency_s = 0;              // intercept: the fixed cost of one transfer
  double seconds_per_byte = 0;       // slope
  double bandwidth_bytes_per_s = 0;  // 1 / slope (0 when the slope is not positive)
  double r2 = 0;                     // coefficient of determination of the fit
  double predict_seconds(double bytes) const { return latency_s + bytes * seconds_per_byte; }
  // The size at which half the time is latency: latency * bandwidth ("n one-half").
  double half_bandwidth_bytes() const { return latency_s * bandwidth_bytes_per_s; }
  // Achieved bandwidth for one transfer of `bytes`: bytes / t(bytes).
  double effective_bandwidth(double bytes) const {
    const double t = predict_seconds(bytes);
    return t > 0 ? bytes / t : 0;
  }
};
// At least two distinct sizes, same lengths, sizes >= 0, times > 0; else std::invalid_argument.
TransferFit fit_transfer_times(std::span<const double> bytes, std::span<const double> seconds);

}  // namespace cudalab::ch04
