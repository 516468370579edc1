// Starter track — write your code at the TODO marks; the tests of each exercise
// fail until you do. (Generated from chapters/11_llm_serving/reference/fill_random.cu by scripts/variants.py.)
// Device-made fp16/bf16 inputs (ch11.hpp: fill_random; its host twin random_at is in
// cpu/oracle.cpp). Not an exercise: the benchmarks' gigabytes of KV cache come from here.
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

constexpr unsigned kConvertBlock = 256;  // threads per block of the conversion (bounds, launch)

__global__ void __launch_bounds__(kConvertBlock)
    to_dtype_kernel(const float* __restrict__ in, std::uint16_t* __restrict__ out, std::size_t n,
                    bool f16) {
  const std::size_t i = std::size_t{blockIdx.x} * blockDim.x + threadIdx.x;
  if (i >= n) return;
  out[i] = f16 ? static_cast<__half_raw>(__float2half_rn(in[i])).x
               : static_cast<__nv_bfloat16_raw>(__float2bfloat16_rn(in[i])).x;
}

}  // namespace

void fill_random(void* out, std::size_t n, std::uint64_t seed, DType dtype, float lo, float hi) {
  require_device_pointer(out, n, "out");
  if (n == 0) return;
  DeviceBuffer<float> tmp(std::min(n, kFillChunk));
  auto* o = static_cast<std::uint16_t*>(out);
  for (std::size_t start = 0, c = 0; start < n; start += kFillChunk, ++c) {
    const std::size_t len = std::min(kFillChunk, n - start);
    fill_uniform_device(tmp.data(), len, seed + c, lo, hi);
    to_dtype_kernel<<<static_cast<unsigned>(ceil_div<std::size_t>(len, kConvertBlock)),
                      kConvertBlock>>>(tmp.data(), o + start, len, dtype == DType::kF16);
    CUDALAB_CHECK_LAUNCH();
  }
  CUDALAB_CHECK(cudaDeviceSynchronize());
}

}  // namespace cudalab::ch11
