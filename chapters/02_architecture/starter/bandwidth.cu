// Starter track — write your code at the TODO marks; the tests of each exercise
// fail until you do. (Generated from chapters/02_architecture/reference/bandwidth.cu by scripts/variants.py.)
// Bandwidth by level (worked examples): the DRAM write and copy rows, the L2 and L1 read rows and
// the shared-memory conflict ladder of the card. The DRAM read row is exercise 2.3 (dram_read.cu).
//
// Every kernel is a grid-stride loop over 16-byte accesses with kLoads of them in flight per
// thread (Little's law: exercise 2.4), so the benchmark can sweep the resident warps per SM and
// find where each level saturates. The cache rows use volatile asm loads: the same addresses are
// read pass after pass, and a plain load the compiler may prove loop-invariant. Launch shape:
// blocks x threads, any (threads <= kMaxThreads); every function accepts any n.
//
// The copy walks tiles: a block's threads cover one contiguous tile per trip, and the blocks walk
// the tiles grid-stride. With blocks = 0 the call launches one block per tile instead, a grid of
// short blocks, which moves more bytes (README, "Resident grid or short blocks"); the resident
// grid stays, because its warps per SM are the variable of the card's occupancy sweep.
#include <cooperative_groups.h>
#include <cooperative_groups/reduce.h>

#include <algorithm>
#include <climits>

#include "ch02/ch02.hpp"
#include "cudalab/check.hpp"

namespace cudalab::ch02 {
namespace {

namespace cg = cooperative_groups;

constexpr int kMaxThreads = 1024;
constexpr int kLoads = kCopyBytesInFlight / 16;  // 16-byte accesses in flight per thread per trip
constexpr int kL2Loads = 32;                     // 8-byte loads per thread per tile (l2_read_tiles)
constexpr int kSmemWords = 1024;                 // the shared-memory ladder's buffer: 4 KiB
constexpr int kSmemReads = 8;                    // shared reads per thread per iteration
constexpr std::size_t kMaxL1Bytes = 64 * 1024;

__device__ __forceinline__ float4 load_cg(const float4* p) {  // cached in L2 only
  float4 v;
  asm volatile("ld.global.cg.v4.f32 {%0, %1, %2, %3}, [%4];"
               : "=f"(v.x), "=f"(v.y), "=f"(v.z), "=f"(v.w)
               : "l"(p));
  return v;
}
__device__ __forceinline__ float2 load_cg(const float2* p) {  // 8 bytes, L2 only
  float2 v;
  asm volatile("ld.global.cg.v2.f32 {%0, %1}, [%2];" : "=f"(v.x), "=f"(v.y) : "l"(p));
  return v;
}
__device__ __forceinline__ float4 load_ca(const float4* p) {  // cached in L1 and L2
  float4 v;
  asm volatile("ld.global.ca.v4.f32 {%0, %1, %2, %3}, [%4];"
               : "=f"(v.x), "=f"(v.y), "=f"(v.z), "=f"(v.w)
               : "l"(p));
  return v;
}
// ld.volatile: `asm volatile` only binds the C++ compiler; ptxas still sees eight loads of
// loop-invariant shared addresses with no store between them and keeps them in registers, and the
// "shared" row then times FADDs (3.5x the bank peak on an H200). A volatile load is issued every
// time it is written, so every byte the row counts is read from the banks.
__device__ __forceinline__ float load_smem(std::uint32_t addr) {
  float v;
  asm volatile("ld.volatile.shared.f32 %0, [%1];" : "=f"(v) : "r"(addr) : "memory");
  return v;
}
__device__ __forceinline__ float sum4(float4 v) {
  return (v.x + v.y) + (v.z + v.w);
}

// One trip of a thread: the kLoads vectors at base, base + stride, ... (zero past n4), every load
// issued before any value is used, so kLoads x 16 bytes are in flight.
template <class Load>
__device__ __forceinline__ void load_trip(float4 (&vec)[kLoads], std::size_t base,
                                          std::size_t stride, std::size_t n4, Load load) {
#pragma unroll
  for (int k = 0; k < kLoads; ++k) {
    const std::size_t at = base + k * stride;
    vec[k] = at < n4 ? load(at) : make_float4(0.f, 0.f, 0.f, 0.f);
  }
}
__device__ __forceinline__ float trip_sum(const float4 (&vec)[kLoads]) {
  float acc = 0.0f;
#pragma unroll
  for (int k = 0; k < kLoads; ++k) acc += sum4(vec[k]);
  return acc;
}

__device__ __forceinline__ std::size_t thread_index() {
  return blockIdx.x * static_cast<std::size_t>(blockDim.x) + threadIdx.x;
}
__device__ __forceinline__ std::size_t grid_threads() {
  return static_cast<std::size_t>(gridDim.x) * blockDim.x;
}

__global__ void __launch_bounds__(kMaxThreads)
    fill_kernel(float* __restrict__ out, std::size_t n, float value) {
  const std::size_t t = thread_index(), T = grid_threads(), n4 = n / 4;
  float4* out4 = reinterpret_cast<float4*>(out);
  const float4 v = make_float4(value, value, value, value);
  for (std::size_t i = t; i < n4; i += T) out4[i] = v;
  for (std::size_t i = 4 * n4 + t; i < n; i += T) out[i] = value;
}

// Tile t is the kLoads x blockDim.x vectors from t * kLoads * blockDim.x on, thread j reading
// vectors j, j + blockDim.x, ...: each load instruction of a warp reads 512 contiguous bytes.
__global__ void __launch_bounds__(kMaxThreads)
    copy_kernel_impl(const float* __restrict__ in, float* __restrict__ out, std::size_t n) {
  const std::size_t n4 = n / 4, tile = std::size_t{blockDim.x} * kLoads;
  const float4* in4 = reinterpret_cast<const float4*>(in);
  float4* out4 = reinterpret_cast<float4*>(out);
  for (std::size_t base = blockIdx.x * tile + threadIdx.x; base < n4;
       base += std::size_t{gridDim.x} * tile) {
    float4 vec[kLoads];
    load_trip(vec, base, blockDim.x, n4, [&](std::size_t at) { return in4[at]; });  // loads first
#pragma unroll
    for (int k = 0; k < kLoads; ++k)
      if (base + k * blockDim.x < n4) out4[base + k * blockDim.x] = vec[k];
  }
  if (blockIdx.x == 0)
    for (std::size_t i = 4 * n4 + threadIdx.x; i < n; i += blockDim.x) out[i] = in[i];
}

__global__ void __launch_bounds__(kMaxThreads)
    l2_read_kernel(const float* __restrict__ in, std::size_t n, int passes,
                   float* __restrict__ partial) {
  const std::size_t t = thread_index(), T = grid_threads(), n4 = n / 4;
  const float4* in4 = reinterpret_cast<const float4*>(in);
  float s = 0.0f;
  for (int p = 0; p < passes; ++p) {
    for (std::size_t trip = t; trip < n4; trip += T * kLoads) {
      float4 vec[kLoads];
      load_trip(vec, trip, T, n4, [&](std::size_t at) { return load_cg(in4 + at); });
      s += trip_sum(vec);
    }
    for (std::size_t i = 4 * n4 + t; i < n; i += T) s += in[i];
  }
  partial[t] = s;
}

// l2_read_tiles: per pass, in[0, n) as float2 vectors is kL2Loads rows of `slabs` slabs of
// blockDim.x vectors (gpu-benches' L2 kernel). Block v (one per tile; the loop only covers a grid
// capped at INT_MAX blocks) reads slab v % slabs of every row, pass v / slabs: one thread's
// kL2Loads loads are a row apart. The odd last float is added by thread 0 of each pass's slab-0
// tile. __launch_bounds__(kMaxThreads, 2): at most 32 registers, so 64 warps fit on an SM at any
// block size; ptxas then adds each float2 soon after it arrives instead of holding all 32 (at 62
// registers only 32 warps fit). One block per tile, not a resident grid walking them: a resident
// block re-reads its slab pass after pass, and the SM merges those requests before the L2 (README,
// "An L2 row that counts bytes the L2 never sent").
__global__ void __launch_bounds__(kMaxThreads, 2)
    l2_tiles_kernel(const float* __restrict__ in, std::size_t n, std::size_t slabs,
                    std::size_t tiles, float* __restrict__ partial) {
  const std::size_t n2 = n / 2, row = slabs * blockDim.x;
  const float2* in2 = reinterpret_cast<const float2*>(in);
  float s = 0.0f;
  for (std::size_t t = blockIdx.x; t < tiles; t += gridDim.x) {
    const std::size_t slab = t % slabs, base = slab * blockDim.x + threadIdx.x;
    float acc[4] = {0.f, 0.f, 0.f, 0.f};  // four sums: the adds never wait on one chain
    if ((slab + 1) * blockDim.x + (kL2Loads - 1) * row <= n2) {  // the whole tile is inside
      const float2* p = in2 + base;
#pragma unroll
      for (int k = 0; k < kL2Loads; ++k) {
        const float2 v = load_cg(p + k * row);
        acc[k % 4] += v.x + v.y;
      }
    } else {
#pragma unroll
      for (int k = 0; k < kL2Loads; ++k) {
        const std::size_t at = base + k * row;
        const float2 v = at < n2 ? load_cg(in2 + at) : make_float2(0.f, 0.f);
        acc[k % 4] += v.x + v.y;
      }
    }
    s += (acc[0] + acc[1]) + (acc[2] + acc[3]);
    if (slab == 0 && threadIdx.x == 0 && n % 2 != 0) s += in[n - 1];
  }
  // One add per warp into kL2ReadSlots slots: the sink that keeps the loads, without a write per
  // thread per tile (a grid of short blocks would otherwise write as many partials as it has
  // threads, and those lines would evict the buffer it times from L2).
  // (coalesced_threads: the lanes the warp has; a block of 100 threads ends in a 4-lane warp.)
  const cg::coalesced_group lanes = cg::coalesced_threads();
  s = cg::reduce(lanes, s, cg::plus<float>());
  const std::size_t warp = (std::size_t{blockIdx.x} * blockDim.x + threadIdx.x) / 32;
  if (lanes.thread_rank() == 0) atomicAdd(partial + warp % kL2ReadSlots, s);
}

__global__ void __launch_bounds__(kMaxThreads)
    l1_read_kernel(const float* __restrict__ in, std::size_t n, int passes,
                   float* __restrict__ partial) {
  // Every block reads all of in[0, n): its SM's L1 holds it after the first pass.
  const std::size_t n4 = n / 4, T = blockDim.x;
  const float4* in4 = reinterpret_cast<const float4*>(in);
  float s = 0.0f;
  for (int p = 0; p < passes; ++p) {
    for (std::size_t trip = threadIdx.x; trip < n4; trip += T * kLoads) {
      float4 vec[kLoads];
      load_trip(vec, trip, T, n4, [&](std::size_t at) { return load_ca(in4 + at); });
      s += trip_sum(vec);
    }
    for (std::size_t i = 4 * n4 + threadIdx.x; i < n; i += T) s += in[i];
  }
  partial[thread_index()] = s;
}

__global__ void __launch_bounds__(kMaxThreads)
    smem_read_kernel(int stride, int iterations, float* __restrict__ partial) {
  __shared__ float buf[kSmemWords];
  for (int w = threadIdx.x; w < kSmemWords; w += blockDim.x) buf[w] = static_cast<float>(w & 7);
  __syncthreads();  // the buffer is written before any thread reads it
  const int lane = threadIdx.x % 32;
  const std::uint32_t base = static_cast<std::uint32_t>(__cvta_generic_to_shared(buf));
  // Lane l reads word (l * stride + u) % kSmemWords: stride 1 spreads a warp over the 32 banks;
  // stride 2^k puts 2^k lanes on each bank it uses (a 2^k-way conflict), stride 32 all 32 on one.
  std::uint32_t addr[kSmemReads];
#pragma unroll
  for (int u = 0; u < kSmemReads; ++u)
    addr[u] = base + 4u * static_cast<std::uint32_t>((lane * stride + u) % kSmemWords);
  float s[4] = {0.f, 0.f, 0.f, 0.f};  // four sums: the adds never wait on one chain
  for (int i = 0; i < iterations; ++i) {
#pragma unroll
    for (int u = 0; u < kSmemReads; ++u) s[u % 4] += load_smem(addr[u]);
  }
  partial[thread_index()] = (s[0] + s[1]) + (s[2] + s[3]);
}

void check_grid(int blocks, int threads) {
  require(blocks >= 1, "blocks", "must be >= 1");
  require(threads >= 1 && threads <= kMaxThreads, "threads", "must be in [1, 1024]");
}
void check_aligned(const void* p, const char* name) {
  require(reinterpret_cast<std::uintptr_t>(p) % 16 == 0, name, "must be 16-byte aligned");
}

}  // namespace

int bandwidth_resident_warps(BandwidthKernel k, int threads) {
  require(threads >= 1 && threads <= kMaxThreads, "threads", "must be in [1, 1024]");
  const void* f = nullptr;
  switch (k) {
    case BandwidthKernel::fill:
      f = reinterpret_cast<const void*>(fill_kernel);
      break;
    case BandwidthKernel::copy:
      f = reinterpret_cast<const void*>(copy_kernel_impl);
      break;
    case BandwidthKernel::l2_read:
      f = reinterpret_cast<const void*>(l2_read_kernel);
      break;
    case BandwidthKernel::l2_tiles:
      f = reinterpret_cast<const void*>(l2_tiles_kernel);
      break;
    case BandwidthKernel::l1_read:
      f = reinterpret_cast<const void*>(l1_read_kernel);
      break;
    case BandwidthKernel::smem_read:
      f = reinterpret_cast<const void*>(smem_read_kernel);
      break;
  }
  int blocks = 0;
  CUDALAB_CHECK(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&blocks, f, threads, 0));
  return blocks * ((threads + 31) / 32);
}

void fill_write(float* out, std::size_t n, float value, int blocks, int threads,
                cudaStream_t stream) {
  check_grid(blocks, threads);
  require(out != nullptr || n == 0, "out", "must not be null");
  check_aligned(out, "out");
  fill_kernel<<<blocks, threads, 0, stream>>>(out, n, value);
  CUDALAB_CHECK_LAUNCH();
}

void copy_kernel(const float* in, float* out, std::size_t n, int blocks, int threads,
                 cudaStream_t stream) {
  require(blocks >= 0, "blocks", "must be >= 1, or 0 for one block per tile");
  check_grid(std::max(blocks, 1), threads);
  require((in != nullptr && out != nullptr) || n == 0, "in", "in and out must not be null");
  check_aligned(in, "in");
  check_aligned(out, "out");
  if (n == 0) return;
  const std::size_t tile = std::size_t(threads) * kLoads;
  const std::size_t tiles = std::max<std::size_t>(1, (n / 4 + tile - 1) / tile);
  // blocks = 0: one block per tile (the kernel's grid-stride loop covers a grid capped at INT_MAX).
  const int grid = blocks > 0 ? blocks : static_cast<int>(std::min<std::size_t>(tiles, INT_MAX));
  copy_kernel_impl<<<grid, threads, 0, stream>>>(in, out, n);
  CUDALAB_CHECK_LAUNCH();
}

void l2_read(const float* in, std::size_t n, int passes, float* partial, int blocks, int threads,
             cudaStream_t stream) {
  check_grid(blocks, threads);
  require(in != nullptr || n == 0, "in", "must not be null");
  check_aligned(in, "in");
  require(passes >= 1, "passes", "must be >= 1");
  require(partial != nullptr, "partial", "must not be null");
  l2_read_kernel<<<blocks, threads, 0, stream>>>(in, n, passes, partial);
  CUDALAB_CHECK_LAUNCH();
}

void l2_read_tiles(const float* in, std::size_t n, int passes, float* partial, int threads,
                   cudaStream_t stream) {
  check_grid(1, threads);
  require(in != nullptr || n == 0, "in", "must not be null");
  check_aligned(in, "in");
  require(passes >= 1, "passes", "must be >= 1");
  require(partial != nullptr, "partial", "must not be null");
  const std::size_t per_tile = std::size_t(threads) * kL2Loads;  // float2 vectors a tile reads
  const std::size_t slabs = std::max<std::size_t>(1, (n / 2 + per_tile - 1) / per_tile);
  const std::size_t tiles = slabs * static_cast<std::size_t>(passes);
  // One block per tile (the kernel's tile loop covers a grid capped at INT_MAX).
  const int grid = static_cast<int>(std::min<std::size_t>(tiles, INT_MAX));
  l2_tiles_kernel<<<grid, threads, 0, stream>>>(in, n, slabs, tiles, partial);
  CUDALAB_CHECK_LAUNCH();
}

void l1_read(const float* in, std::size_t n, int passes, float* partial, int blocks, int threads,
             cudaStream_t stream) {
  check_grid(blocks, threads);
  require(in != nullptr || n == 0, "in", "must not be null");
  check_aligned(in, "in");
  require(n * 4 <= kMaxL1Bytes, "n", "the L1 buffer is at most 64 KiB");
  require(passes >= 1, "passes", "must be >= 1");
  require(partial != nullptr, "partial", "must not be null");
  l1_read_kernel<<<blocks, threads, 0, stream>>>(in, n, passes, partial);
  CUDALAB_CHECK_LAUNCH();
}

void smem_read(int stride, int iterations, float* partial, int blocks, int threads,
               cudaStream_t stream) {
  check_grid(blocks, threads);
  require(stride >= 1 && stride <= 32, "stride", "must be in [1, 32] words");
  require(iterations >= 1 && iterations <= (1 << 18), "iterations",
          "must be in [1, 2^18] (the sums stay exact)");
  require(partial != nullptr, "partial", "must not be null");
  smem_read_kernel<<<blocks, threads, 0, stream>>>(stride, iterations, partial);
  CUDALAB_CHECK_LAUNCH();
}

double smem_expected(std::size_t t, int threads, int stride, int iterations) {
  const int lane = static_cast<int>(t % static_cast<std::size_t>(threads)) % 32;
  double per_iteration = 0;
  for (int u = 0; u < kSmemReads; ++u) per_iteration += ((lane * stride + u) % kSmemWords) & 7;
  return per_iteration * iterations;
}

}  // namespace cudalab::ch02
