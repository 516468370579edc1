// Starter track — write your code at the TODO marks; the tests of each exercise
// fail until you do. (Generated from chapters/09_profiling/reference/hunt_07_quad_sums.cu by scripts/variants.py.)
// Bug hunt 7 — quad sums: out[j] = in[4j] + in[4j + 1] + in[4j + 2] + in[4j + 3], on a view that
// starts one float into its allocation (a slice, as tensors hand out).
//
// Launch shape: 1D, kBlock threads per block, one thread per output. The fast path loads the four
// inputs as one float4 (one 16-byte load instruction instead of four), which needs `in` on a
// 16-byte boundary; the scalar path works on any float pointer.
#include <cstdint>
#include <vector>

#include "ch09/hunt.hpp"
#include "cudalab/check.hpp"
#include "cudalab/math.hpp"
#include "cudalab/memory.hpp"

namespace cudalab::ch09 {
namespace {

constexpr unsigned kBlock = 256;

__global__ void __launch_bounds__(kBlock)
    quad_sum_vec_kernel(const float* in, float* out, std::size_t quads) {
  const std::size_t j = std::size_t{blockIdx.x} * kBlock + threadIdx.x;
  if (j >= quads) return;
  const float4 v = reinterpret_cast<const float4*>(in)[j];
  out[j] = (v.x + v.y) + (v.z + v.w);
}

__global__ void __launch_bounds__(kBlock)
    quad_sum_scalar_kernel(const float* in, float* out, std::size_t quads) {
  const std::size_t j = std::size_t{blockIdx.x} * kBlock + threadIdx.x;
  if (j >= quads) return;
  out[j] = (in[4 * j] + in[4 * j + 1]) + (in[4 * j + 2] + in[4 * j + 3]);
}

void quad_sums(const float* in, float* out, std::size_t quads) {
  const unsigned blocks = static_cast<unsigned>(ceil_div<std::size_t>(quads, kBlock));
  // TODO(9.8): this case has one bug. Run it under the sanitizers (README, "The bug hunt"), find
  // what they report, fix it; the ctest tests of 9.8 pass when every tool is clean.
  // The vector path pays off from a block of quads up; below that, one scalar launch.
  if (quads < kBlock) quad_sum_scalar_kernel<<<blocks, kBlock>>>(in, out, quads);
  else quad_sum_vec_kernel<<<blocks, kBlock>>>(in, out, quads);
  // A float4 load needs a 16-byte-aligned address, which a view into an allocation need not have.
  CUDALAB_CHECK_LAUNCH();
}

}  // namespace

HuntResult hunt_quad_sums() {
  constexpr std::size_t quads = 1000;
  std::vector<float> x(4 * quads + 1), want(quads);
  for (std::size_t i = 0; i < x.size(); ++i) x[i] = static_cast<float>(i % 9);
  for (std::size_t j = 0; j < quads; ++j)
    want[j] = (x[1 + 4 * j] + x[2 + 4 * j]) + (x[3 + 4 * j] + x[4 + 4 * j]);
  const DeviceBuffer<float> in = to_device(x);
  DeviceBuffer<float> out(quads);
  quad_sums(in.data() + 1, out.data(), quads);  // the view: one float past a 256-byte-aligned start
  CUDALAB_CHECK(cudaDeviceSynchronize());
  const std::string bad = first_mismatch(out.to_host(), want);
  return {bad.empty(), bad.empty() ? "1000 quads at offset 1 matched" : bad};
}

}  // namespace cudalab::ch09
