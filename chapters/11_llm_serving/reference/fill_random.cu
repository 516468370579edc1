// Device-made fp16/bf16 inputs with a host twin (ch11.hpp: fill_random, random_at). Not an
// exercise: the benchmarks' gigabytes of KV cache come from here.
#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include <algorithm>
#include <cstdint>

#include "ch11/ch11.hpp"
#include "cudalab/check.hpp"
#include "cudalab/device_fill.hpp"
#include "cudalab/math.hpp"
#include "cudalab/memory.hpp"

namespace cudalab::ch11 {
namespace {

constexpr std::size_t kChunk = std::size_t{1} << 28;  // elements per fill (1 GiB of floats)

__global__ void to_dtype_kernel(const float* __restrict__ in, std::uint16_t* __restrict__ out,
                                std::size_t n, bool f16) {
  const std::size_t i = std::size_t{blockIdx.x} * blockDim.x + threadIdx.x;
  if (i >= n) return;
  out[i] = f16 ? static_cast<__half_raw>(__float2half_rn(in[i])).x
               : static_cast<__nv_bfloat16_raw>(__float2bfloat16_rn(in[i])).x;
}

}  // namespace

void fill_random(void* out, std::size_t n, std::uint64_t seed, DType dtype, float lo, float hi) {
  require_device_pointer(out, n, "out");
  if (n == 0) return;
  DeviceBuffer<float> tmp(std::min(n, kChunk));
  auto* o = static_cast<std::uint16_t*>(out);
  for (std::size_t start = 0, c = 0; start < n; start += kChunk, ++c) {
    const std::size_t len = std::min(kChunk, n - start);
    fill_uniform_device(tmp.data(), len, seed + c, lo, hi);
    to_dtype_kernel<<<static_cast<unsigned>(ceil_div<std::size_t>(len, 256)), 256>>>(
        tmp.data(), o + start, len, dtype == DType::kF16);
    CUDALAB_CHECK_LAUNCH();
  }
  CUDALAB_CHECK(cudaDeviceSynchronize());
}

float random_at(std::uint64_t seed, std::size_t i, DType dtype, float lo, float hi) {
  const float x = uniform_at(seed + i / kChunk, i % kChunk, lo, hi);
  return dtype == DType::kF16 ? __half2float(__float2half_rn(x))
                              : __bfloat162float(__float2bfloat16_rn(x));
}

}  // namespace cudalab::ch11
