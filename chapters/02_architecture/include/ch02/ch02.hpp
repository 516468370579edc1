// Chapter 2 — GPU architecture: the microbenchmarks that measure this GPU's card (host API the
// tests, the benchmark and apps/card call). Every call is asynchronous on `stream` unless it says
// otherwise; pointers are device pointers. The spec-sheet calculator is ch02/spec.hpp.
#pragma once

#include <cuda_runtime_api.h>

#include <cstddef>
#include <cstdint>
#include <vector>

namespace cudalab::ch02 {

// ---- 2.1 FMA throughput ----------------------------------------------------------------------
// Each of blocks x threads threads keeps `ilp` independent accumulators x_j = (t % 1024) + j and
// applies x_j = fma(x_j, a, b) `iterations` times to each, then writes sum_j x_j to out[t]
// (t = global thread index; out has blocks * threads elements). With a = 1 and b = 1 every value
// is an integer below 2^24, so the result is exact in fp32 and fp64 (fma_expected).
// ilp in {1, 2, 4, 8}; threads in [32, 1024], a multiple of 32; iterations in [1, 2^20].
void fma_throughput_f32(float* out, int blocks, int threads, int ilp, int iterations, float a,
                        float b, cudaStream_t stream = nullptr);
void fma_throughput_f64(double* out, int blocks, int threads, int ilp, int iterations, double a,
                        double b, cudaStream_t stream = nullptr);
// Warps of fma_kernel<fp64 ? double : float, ilp> one SM holds at `threads` per block (the
// occupancy API: registers and the block limit decide), so a row can state its real occupancy.
int fma_resident_warps(bool fp64, int ilp, int threads);
// What out[t] must hold for a = 1, b = 1 (host, exact).
double fma_expected(std::size_t t, int ilp, int iterations);
// FLOP one launch performs: 2 per FMA (the counted work of the benchmark rows).
double fma_flops(int blocks, int threads, int ilp, int iterations);

// ---- 2.2 pointer chase -----------------------------------------------------------------------
// A chase ring over `bytes` of memory: ring[i] is the index (in 4-byte words) of the word read
// after word i. It visits every line of `stride_bytes` once (one word per line, the first of
// it), in one single cycle, in an order that defeats the prefetcher (random, seeded), and no hop
// lands on the next line (distance at least one line). Words not on the ring hold 0.
// stride_bytes: a power of two >= 4; bytes >= 2 * stride_bytes, a multiple of stride_bytes.
std::vector<std::uint32_t> make_chase_ring(std::size_t bytes, std::size_t stride_bytes,
                                           std::uint64_t seed);

// One thread chases `ring` (device, `words` words): `warm` untimed loads from word 0 (one lap
// warms the level under test), then `steps` timed dependent loads. Writes the clock64() cycles of
// the timed loads to result[0] and the index where the chase ended to result[1] (written out, so
// the chain cannot be optimised away; the test checks it against chase_end). `shared`: the ring
// (at most kMaxSharedChaseBytes) is first copied to shared memory and chased there. `resume`:
// start at the word result[1] holds (where the previous call ended; word 0 if it is past the
// ring) instead of word 0, so that repeated calls on a ring far larger than L2 keep walking into
// lines no call has touched instead of re-timing the same, now L2-resident, first lines.
inline constexpr std::size_t kMaxSharedChaseBytes = 48 * 1024;
void pointer_chase(const std::uint32_t* ring, std::size_t words, long long warm, long long steps,
                   bool shared, long long* result, cudaStream_t stream = nullptr,
                   bool resume = false);
// Host twin: the index where the chase ends after warm + steps loads from word 0.
std::uint32_t chase_end(const std::vector<std::uint32_t>& ring, long long warm, long long steps);

// Bytes one thread keeps in flight in the bandwidth kernels (Little's law, exercise 2.4): the
// benchmark rows report them, the card turns them into a predicted occupancy.
inline constexpr int kReadBytesInFlight = 128;  // dram_read: 8 float4 loads per trip
inline constexpr int kCopyBytesInFlight = 64;   // copy_kernel, l2_read, l1_read: 4 float4 loads
inline constexpr int kWriteBytesInFlight = 16;  // fill_write: one float4 store per trip

// ---- 2.3 DRAM read at low occupancy ------------------------------------------------------------
// partial[t] = sum of in[i] over the elements thread t reads (t < blocks * threads); every element
// of in[0, n) is read exactly once. n any size (n % 4 != 0 and misaligned tails included);
// `in` 16-byte aligned.
void dram_read(const float* in, std::size_t n, float* partial, int blocks, int threads,
               cudaStream_t stream = nullptr);

// Warps of dram_read's kernel one SM holds at `threads` per block (occupancy API).
int dram_read_resident_warps(int threads);

// ---- worked bandwidth kernels ------------------------------------------------------------------
enum class BandwidthKernel { fill, copy, l2_read, l2_tiles, l1_read, smem_read };
// Warps of that kernel one SM holds at `threads` per block (occupancy API).
int bandwidth_resident_warps(BandwidthKernel k, int threads);
// out[i] = value (float4 stores, grid-stride; n any size).
void fill_write(float* out, std::size_t n, float value, int blocks, int threads,
                cudaStream_t stream = nullptr);
// out[i] = in[i] (float4 loads and stores; n any size). The blocks walk tiles of threads x 4
// vectors; blocks = 0 launches one block per tile instead (a grid of short blocks).
void copy_kernel(const float* in, float* out, std::size_t n, int blocks, int threads,
                 cudaStream_t stream = nullptr);
// L2 bandwidth: the grid reads in[0, n) `passes` times (grid-stride, ld.global.cg: cached in
// L2 only, so a thread's second pass cannot hit its SM's L1); partial[t] = the thread's sum over
// every pass. With 4 n bytes well below the L2 size, every pass after the first comes from L2.
void l2_read(const float* in, std::size_t n, int passes, float* partial, int blocks, int threads,
             cudaStream_t stream = nullptr);
// L2 bandwidth as a grid of short blocks, one per tile (gpu-benches' order): per pass, in[0, n) as
// float2 vectors is 32 rows of slabs of `threads` vectors, and a block reads one slab of every row
// (8-byte ld.global.cg), so each thread has 32 independent loads. Adds what it read into
// partial[0, kL2ReadSlots) (one atomic per warp): their total grows by passes x sum(in).
// Only a buffer of at least 8 MiB measures the L2 (at 256 threads: >= 128 slabs, so no two blocks
// resident on one SM read the same slab; two that do have their requests merged before the L2).
inline constexpr int kL2ReadSlots = 4096;
void l2_read_tiles(const float* in, std::size_t n, int passes, float* partial, int threads,
                   cudaStream_t stream = nullptr);
// L1 bandwidth: every block reads the same in[0, n) (n * 4 <= 64 KiB: resident in each SM's L1)
// `passes` times; partial[t] = the thread's sum.
void l1_read(const float* in, std::size_t n, int passes, float* partial, int blocks, int threads,
             cudaStream_t stream = nullptr);
// Shared-memory bandwidth: every thread reads words at stride `stride` (in 4-byte words; 1 is
// conflict-free, 2..32 gives a 2..32-way conflict) `iterations` times; partial per thread.
void smem_read(int stride, int iterations, float* partial, int blocks, int threads,
               cudaStream_t stream = nullptr);
// What smem_read's partial[t] holds (host).
double smem_expected(std::size_t t, int threads, int stride, int iterations);

// ---- 2.4 Little's law
// ----------------------------------------------------------------------------
struct LittlesLaw {
  double bytes_in_flight = 0;  // bandwidth x latency, whole GPU
  double bytes_per_sm = 0;     // per SM
  double threads_per_sm = 0;   // per SM, at bytes_per_thread in flight each
  double occupancy = 0;        // threads_per_sm / max_threads_per_sm (may exceed 1)
};
// Bytes that must be in flight to sustain `bandwidth_gbps` at `latency_ns`, spread over `sms`
// SMs with `bytes_per_thread` outstanding per thread. Throws std::invalid_argument naming the
// argument when one is not positive.
LittlesLaw littles_law(double bandwidth_gbps, double latency_ns, int sms, double bytes_per_thread,
                       int max_threads_per_sm);

// ---- tensor cores ------------------------------------------------------------------------------
enum class MmaKind { fp16, bf16, tf32, int8, fp8, bf16_sparse };
// Each warp issues `iterations` x 4 independent mma.sync (m16n8k16 fp16/bf16, m16n8k8 tf32,
// m16n8k32 int8/fp8, m16n8k32 bf16 2:4 sparse) on register operands and writes its accumulators
// (out: blocks * threads elements of 4-byte values). No memory traffic: the tensor cores' issue
// rate. fp8 needs sm_89+, everything else sm_80+; the host checks the device (std::runtime_error).
void mma_throughput(MmaKind kind, float* out, int blocks, int threads, int iterations,
                    cudaStream_t stream = nullptr);
// FLOP (or OP) of one launch: 2 x M x N x K per mma (the sparse row counts the dense-equivalent
// K, as NVIDIA's "with sparsity" figures do).
double mma_flops(MmaKind kind, int blocks, int threads, int iterations);
// What every out element holds for the mma kernels' operands (all ones: an exact integer).
double mma_expected(MmaKind kind, int iterations);
bool mma_supported(MmaKind kind);  // on the current device

enum class WgmmaKind { bf16, fp8 };
// One warpgroup per 128 threads issues `iterations` m64n256k16 (bf16) / m64n256k32 (fp8 e4m3)
// wgmma from the same shared-memory tiles: the tensor cores' Hopper issue path. sm_90a only
// (std::runtime_error elsewhere). threads: a multiple of 128.
void wgmma_throughput(WgmmaKind kind, float* out, int blocks, int threads, int iterations,
                      cudaStream_t stream = nullptr);
double wgmma_flops(WgmmaKind kind, int blocks, int threads, int iterations);
double wgmma_expected(WgmmaKind kind, int iterations);
bool wgmma_supported();

}  // namespace cudalab::ch02
