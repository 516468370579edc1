// Device-side checks for the large tests (see cudalab/device_check.hpp). Grid-stride kernels with
// 64-bit indices; a mismatch bumps a counter and lowers the first index with atomicMin.
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <sstream>

#include "cudalab/check.hpp"
#include "cudalab/device_check.hpp"
#include "cudalab/math.hpp"
#include "cudalab/memory.hpp"

namespace cudalab::testing {
namespace {

constexpr int kBlock = 256;
constexpr unsigned long long kNone = ~0ull;

unsigned grid_for(std::size_t n) {
  return static_cast<unsigned>(std::clamp<std::size_t>(ceil_div<std::size_t>(n, kBlock), 1, 8192));
}

__device__ void record(unsigned long long* st, std::size_t i) {
  atomicAdd(st, 1ull);
  atomicMin(st + 1, static_cast<unsigned long long>(i));
}

__device__ bool same_bits(float a, float b) {
  return __float_as_uint(a) == __float_as_uint(b);
}

__global__ void sum_kernel(const float* a, const float* b, const float* c, std::size_t n,
                           unsigned long long* st) {
  for (std::size_t i = std::size_t{blockIdx.x} * kBlock + threadIdx.x; i < n;
       i += std::size_t{gridDim.x} * kBlock)
    if (!same_bits(c[i], __fadd_rn(a[i], b[i]))) record(st, i);
}
__global__ void gather_kernel(const float* in, const float* out, std::size_t n, std::size_t stride,
                              std::size_t offset, unsigned long long* st) {
  for (std::size_t i = std::size_t{blockIdx.x} * kBlock + threadIdx.x; i < n;
       i += std::size_t{gridDim.x} * kBlock)
    if (!same_bits(out[i], in[i * stride + offset])) record(st, i);
}
__global__ void transpose_kernel(const float* in, const float* out, std::size_t rows,
                                 std::size_t cols, unsigned long long* st) {
  const std::size_t n = rows * cols;
  for (std::size_t o = std::size_t{blockIdx.x} * kBlock + threadIdx.x; o < n;
       o += std::size_t{gridDim.x} * kBlock) {
    const std::size_t c = o / rows, r = o % rows;  // out[c][r] = in[r][c]
    if (!same_bits(out[o], in[r * cols + c])) record(st, o);
  }
}
__global__ void scan_kernel(const int* in, const int* out, std::size_t n, bool inclusive,
                            unsigned long long* st) {
  for (std::size_t i = std::size_t{blockIdx.x} * kBlock + threadIdx.x; i < n;
       i += std::size_t{gridDim.x} * kBlock) {
    const unsigned prev = i == 0 ? 0u : static_cast<unsigned>(out[i - 1]);
    const unsigned add =
        inclusive ? static_cast<unsigned>(in[i]) : (i == 0 ? 0u : static_cast<unsigned>(in[i - 1]));
    if (static_cast<unsigned>(out[i]) != prev + add) record(st, i);
  }
}
__global__ void within_kernel(const float* got, const float* want, const float* bound,
                              std::size_t n, double scale, unsigned long long* st) {
  for (std::size_t i = std::size_t{blockIdx.x} * kBlock + threadIdx.x; i < n;
       i += std::size_t{gridDim.x} * kBlock)
    if (!(fabs(static_cast<double>(got[i]) - static_cast<double>(want[i])) <=
          scale * static_cast<double>(bound[i])))
      record(st, i);
}
__global__ void sum_int64_kernel(const int* in, std::size_t n, unsigned long long* total) {
  long long acc = 0;
  for (std::size_t i = std::size_t{blockIdx.x} * kBlock + threadIdx.x; i < n;
       i += std::size_t{gridDim.x} * kBlock)
    acc += in[i];
  for (int o = 16; o > 0; o /= 2) acc += __shfl_down_sync(0xffffffffu, acc, o);
  if (threadIdx.x % 32 == 0) atomicAdd(total, static_cast<unsigned long long>(acc));
}
__global__ void abs_kernel(const float* in, float* out, std::size_t n) {
  for (std::size_t i = std::size_t{blockIdx.x} * kBlock + threadIdx.x; i < n;
       i += std::size_t{gridDim.x} * kBlock)
    out[i] = fabsf(in[i]);
}
__host__ __device__ inline std::uint64_t mix(std::uint64_t seed, std::uint64_t i) {  // SplitMix64
  std::uint64_t z = seed + (i + 1) * 0x9E3779B97F4A7C15ull;
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  return z ^ (z >> 31);
}
__global__ void dyadic_kernel(float* out, std::size_t n, std::uint64_t seed, int kmax, int denom) {
  const std::uint64_t span = 2ull * static_cast<unsigned>(kmax) + 1;
  for (std::size_t i = std::size_t{blockIdx.x} * kBlock + threadIdx.x; i < n;
       i += std::size_t{gridDim.x} * kBlock)
    out[i] = static_cast<float>(static_cast<long long>(mix(seed, i) % span) - kmax) /
             static_cast<float>(denom);
}

template <class T>
T at(const T* p, std::size_t i) {
  T v{};
  CUDALAB_CHECK(cudaMemcpy(&v, p + i, sizeof(T), cudaMemcpyDeviceToHost));
  return v;
}

// Runs `launch(state)` and reads the state back: {mismatches, first}.
template <class F>
DeviceCheck run_check(std::size_t n, F&& launch) {
  DeviceCheck r;
  r.n = n;
  if (n == 0) return r;
  DeviceBuffer<unsigned long long> st(2);
  const unsigned long long init[2] = {0, kNone};
  CUDALAB_CHECK(cudaMemcpy(st.data(), init, sizeof(init), cudaMemcpyHostToDevice));
  launch(st.data());
  CUDALAB_CHECK_LAUNCH();
  CUDALAB_CHECK(cudaDeviceSynchronize());
  unsigned long long res[2];
  CUDALAB_CHECK(cudaMemcpy(res, st.data(), sizeof(res), cudaMemcpyDeviceToHost));
  r.mismatches = res[0];
  r.first = res[0] ? static_cast<std::size_t>(res[1]) : 0;
  return r;
}

}  // namespace

std::string DeviceCheck::message(const std::string& what) const {
  std::ostringstream s;
  s.precision(9);
  s << what << ": " << mismatches << " of " << n << " elements differ";
  if (mismatches) {
    s << "; first at index " << first << ": got " << got << ", want " << want;
    if (bound > 0) s << " (allowed |got - want| <= " << bound << ")";
    if (std::isnan(got)) s << " (NaN: never written, or poisoned input)";
  }
  return s.str();
}

DeviceCheck check_sum(const float* a, const float* b, const float* c, std::size_t n) {
  DeviceCheck r = run_check(
      n, [&](unsigned long long* st) { sum_kernel<<<grid_for(n), kBlock>>>(a, b, c, n, st); });
  if (r.mismatches) r.got = at(c, r.first), r.want = at(a, r.first) + at(b, r.first);
  return r;
}

DeviceCheck check_gather(const float* in, const float* out, std::size_t n, std::size_t stride,
                         std::size_t offset) {
  DeviceCheck r = run_check(n, [&](unsigned long long* st) {
    gather_kernel<<<grid_for(n), kBlock>>>(in, out, n, stride, offset, st);
  });
  if (r.mismatches) r.got = at(out, r.first), r.want = at(in, r.first * stride + offset);
  return r;
}

DeviceCheck check_transpose(const float* in, const float* out, std::size_t rows, std::size_t cols) {
  const std::size_t n = rows * cols;
  DeviceCheck r = run_check(n, [&](unsigned long long* st) {
    transpose_kernel<<<grid_for(n), kBlock>>>(in, out, rows, cols, st);
  });
  if (r.mismatches) {
    const std::size_t c = r.first / rows, row = r.first % rows;
    r.got = at(out, r.first), r.want = at(in, row * cols + c);
  }
  return r;
}

DeviceCheck check_int_scan(const int* in, const int* out, std::size_t n, bool inclusive) {
  DeviceCheck r = run_check(n, [&](unsigned long long* st) {
    scan_kernel<<<grid_for(n), kBlock>>>(in, out, n, inclusive, st);
  });
  if (r.mismatches) {
    const std::size_t i = r.first;
    const unsigned prev = i == 0 ? 0u : static_cast<unsigned>(at(out, i - 1));
    const unsigned add = inclusive ? static_cast<unsigned>(at(in, i))
                                   : (i == 0 ? 0u : static_cast<unsigned>(at(in, i - 1)));
    r.got = at(out, i);
    r.want = static_cast<int>(prev +
                              add);  // out[i - 1] + in[i]: the first element that breaks the chain
  }
  return r;
}

DeviceCheck check_within(const float* got, const float* want, const float* bound, std::size_t n,
                         double scale) {
  DeviceCheck r = run_check(n, [&](unsigned long long* st) {
    within_kernel<<<grid_for(n), kBlock>>>(got, want, bound, n, scale, st);
  });
  if (r.mismatches)
    r.got = at(got, r.first), r.want = at(want, r.first), r.bound = scale * at(bound, r.first);
  return r;
}

long long sum_int64(const int* in, std::size_t n) {
  if (n == 0) return 0;
  DeviceBuffer<unsigned long long> total(1);
  CUDALAB_CHECK(cudaMemset(total.data(), 0, sizeof(unsigned long long)));
  sum_int64_kernel<<<grid_for(n), kBlock>>>(in, n, total.data());
  CUDALAB_CHECK_LAUNCH();
  return static_cast<long long>(at(total.data(), 0));
}

void abs_device(const float* in, float* out, std::size_t n) {
  if (n == 0) return;
  abs_kernel<<<grid_for(n), kBlock>>>(in, out, n);
  CUDALAB_CHECK_LAUNCH();
}

void fill_dyadic_device(float* out, std::size_t n, std::uint64_t seed, int kmax, int denom) {
  require(kmax >= 0 && denom > 0, "kmax", "kmax >= 0 and denom > 0");
  if (n == 0) return;
  dyadic_kernel<<<grid_for(n), kBlock>>>(out, n, seed, kmax, denom);
  CUDALAB_CHECK_LAUNCH();
}

}  // namespace cudalab::testing
