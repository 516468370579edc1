// Starter track — write your code at the TODO marks; the tests of each exercise
// fail until you do. (Generated from chapters/06_libraries/reference/convert.cu by scripts/variants.py.)
// fp32 -> fp16 / bf16 on the device (round to nearest even): inputs for the tensor-core GEMMs
// (tests fill on the host; the benchmark fills fp32 with fill_uniform_device and converts).
#include <algorithm>

#include "ch06/tensor_core.hpp"
#include "cudalab/check.hpp"
#include "cudalab/math.hpp"

namespace cudalab::ch06 {
namespace {

constexpr int kConvertBlock = 256;

template <class T>
__device__ T convert_one(float x);
template <>
__device__ __half convert_one<__half>(float x) {
  return __float2half_rn(x);
}
template <>
__device__ __nv_bfloat16 convert_one<__nv_bfloat16>(float x) {
  return __float2bfloat16_rn(x);
}

// Launch: grid-stride loop, coalesced reads and writes.
template <class T>
__global__ void __launch_bounds__(kConvertBlock)
    convert_kernel(const float* __restrict__ in, T* __restrict__ out, std::size_t n) {
  for (std::size_t i = std::size_t{blockIdx.x} * blockDim.x + threadIdx.x; i < n;
       i += std::size_t{gridDim.x} * blockDim.x)
    out[i] = convert_one<T>(in[i]);
}

template <class T>
void launch_convert(const float* in, T* out, std::size_t n, cudaStream_t stream) {
  if (n == 0) return;
  require_device_pointer(in, n, "in");
  require_device_pointer(out, n, "out");
  const std::size_t blocks =
      std::min<std::size_t>(ceil_div<std::size_t>(n, kConvertBlock), 132 * 16);
  convert_kernel<T><<<static_cast<unsigned>(blocks), kConvertBlock, 0, stream>>>(in, out, n);
  CUDALAB_CHECK_LAUNCH();
}

}  // namespace

void convert(const float* in, __half* out, std::size_t n, cudaStream_t stream) {
  launch_convert(in, out, n, stream);
}
void convert(const float* in, __nv_bfloat16* out, std::size_t n, cudaStream_t stream) {
  launch_convert(in, out, n, stream);
}

}  // namespace cudalab::ch06
