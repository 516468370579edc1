// bench::ReadBase (cudalab/bench.hpp): a read of N bytes, the base of a read-only row.
#include <algorithm>
#include <cstdint>
#include <numeric>
#include <string>
#include <vector>

#include "cudalab/bench.hpp"
#include "cudalab/check.hpp"
#include "cudalab/device.hpp"

namespace cudalab::bench {
namespace {

constexpr unsigned kThreads = 256;
constexpr unsigned kInFlight = 4;  // 16-byte loads in flight per thread
constexpr unsigned kPeriod = 251;  // byte i holds i % 251: no period of 16, so a chunk read twice
                                   // and another skipped changes the sum

__global__ void __launch_bounds__(kThreads) fill_pattern(unsigned char* p, std::size_t n) {
  const std::size_t stride = static_cast<std::size_t>(gridDim.x) * blockDim.x;
  for (std::size_t i = static_cast<std::size_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < n;
       i += stride)
    p[i] = static_cast<unsigned char>(i % kPeriod);
}

__device__ __forceinline__ unsigned add_bytes(int4 v, unsigned acc) {
  acc = __dp4a(static_cast<unsigned>(v.x), 0x01010101u, acc);
  acc = __dp4a(static_cast<unsigned>(v.y), 0x01010101u, acc);
  acc = __dp4a(static_cast<unsigned>(v.z), 0x01010101u, acc);
  return __dp4a(static_cast<unsigned>(v.w), 0x01010101u, acc);
}

// Sums the bytes (mod 2^32); block b writes its sum to partial[b], the one store of the kernel
// (what keeps the loads).
__global__ void __launch_bounds__(kThreads)
    read_kernel(const unsigned char* __restrict__ p, std::size_t n, unsigned* partial) {
  const int4* __restrict__ v = reinterpret_cast<const int4*>(p);
  const std::size_t n16 = n / 16;
  const std::size_t stride = static_cast<std::size_t>(gridDim.x) * blockDim.x;
  const std::size_t tid = static_cast<std::size_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  unsigned acc = 0;
  std::size_t i = tid;
  for (; i + (kInFlight - 1) * stride < n16; i += kInFlight * stride) {
    int4 w[kInFlight];
#pragma unroll
    for (unsigned u = 0; u < kInFlight; ++u) w[u] = __ldg(v + i + u * stride);
#pragma unroll
    for (unsigned u = 0; u < kInFlight; ++u) acc = add_bytes(w[u], acc);
  }
  for (; i < n16; i += stride) acc = add_bytes(__ldg(v + i), acc);
  for (std::size_t j = n16 * 16 + tid; j < n; j += stride) acc += p[j];  // the last n % 16 bytes
  for (int o = 16; o > 0; o >>= 1) acc += __shfl_xor_sync(0xffffffffu, acc, o);
  __shared__ unsigned warp_sums[kThreads / 32];
  if (threadIdx.x % 32 == 0) warp_sums[threadIdx.x / 32] = acc;
  __syncthreads();
  if (threadIdx.x == 0) {
    unsigned s = 0;
    for (unsigned w = 0; w < kThreads / 32; ++w) s += warp_sums[w];
    partial[blockIdx.x] = s;
  }
}

}  // namespace

ReadBase::ReadBase(double read_bytes) : src_(static_cast<std::size_t>(read_bytes)) {
  if (src_.bytes() == 0) return;
  int per_sm = 0;
  CUDALAB_CHECK(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&per_sm, read_kernel, kThreads, 0));
  const int sms = current_sm_count();
  // One wave of resident blocks, fewer when the bytes do not give each thread kInFlight loads.
  const std::size_t wanted =
      (src_.bytes() / 16 + kThreads * kInFlight - 1) / (kThreads * kInFlight);
  blocks_ = static_cast<unsigned>(
      std::clamp<std::size_t>(wanted, 1, static_cast<std::size_t>(std::max(per_sm, 1) * sms)));
  partial_ = DeviceBuffer<unsigned>(blocks_);
  fill_pattern<<<blocks_, kThreads>>>(src_.data(), src_.bytes());
  CUDALAB_CHECK_LAUNCH();
  CUDALAB_CHECK(cudaDeviceSynchronize());
}

void ReadBase::operator()(cudaStream_t stream) const {
  if (blocks_ == 0) return;
  read_kernel<<<blocks_, kThreads, 0, stream>>>(src_.data(), src_.bytes(), partial_.data());
  CUDALAB_CHECK_LAUNCH();
}

std::string ReadBase::check() const {
  if (blocks_ == 0) return "";
  (*this)(nullptr);
  CUDALAB_CHECK(cudaDeviceSynchronize());
  const std::vector<unsigned> sums = partial_.to_host();
  const unsigned got = std::accumulate(sums.begin(), sums.end(), 0u);
  // sum of i % 251 over i < n: full periods of 0 + 1 + ... + 250, then 0 + ... + (r - 1)
  const std::uint64_t n = src_.bytes(), r = n % kPeriod;
  const auto want =
      static_cast<unsigned>(n / kPeriod * (kPeriod * (kPeriod - 1) / 2) + r * (r - 1) / 2);
  if (got == want) return "";
  return "read of " + std::to_string(n) + " bytes: sum " + std::to_string(got) + ", want " +
         std::to_string(want) + " (mod 2^32)";
}

}  // namespace cudalab::bench
