// Starter track — write your code at the TODO marks; the tests of each exercise
// fail until you do. (Generated from chapters/05_patterns/reference/reduce.cu by scripts/gen_starter.py.)
// Chapter 5 reduction: host API, argument checks, workspace layout and the multi-pass driver.
//
// Workspace (reduce_workspace_bytes): [counter, 256 B][partials A][partials B], each part
// 256-byte aligned. Steps 1-5 ping-pong between A and B: pass 1 writes ceil(n / E) block sums to
// A, pass 2 ceil(n / E^2) to B, pass 3 back to A, ... the pass with one block writes *out.
#include <algorithm>
#include <cstdint>

#include "ch05/reduce.hpp"
#include "cudalab/check.hpp"
#include "cudalab/math.hpp"
#include "reduce_internal.hpp"

namespace cudalab::ch05 {
namespace {

constexpr std::size_t kAlign = 256;
constexpr std::size_t kElem = 4;  // float and int

struct Layout {
  std::size_t a_elems, b_elems, bytes;
};
Layout layout(std::size_t n) {
  // Largest first pass: one element per thread (steps 1-2) or the grid-stride bound (6-7).
  const std::size_t a = std::max<std::size_t>({ceil_div<std::size_t>(n, kReduceBlock),
                                               detail::grid_stride_blocks_max(n), 1});
  const std::size_t b = std::max<std::size_t>(ceil_div<std::size_t>(a, kReduceBlock), 1);
  return {a, b, kAlign + round_up(a * kElem, kAlign) + round_up(b * kElem, kAlign)};
}

template <class T>
void reduce_impl(const T* in, T* out, std::size_t n, void* workspace, std::size_t workspace_bytes,
                 ReduceVariant variant, cudaStream_t stream) {
  static_assert(sizeof(T) == kElem);
  require(static_cast<unsigned>(variant) <= static_cast<unsigned>(ReduceVariant::kOnePass), "variant",
          "unknown ReduceVariant");
  const Layout lay = layout(n);
  require(workspace_bytes >= lay.bytes, "workspace_bytes", "smaller than reduce_workspace_bytes(n)");
  require_device_pointer(in, n, "in");
  require_device_pointer(out, 1, "out");
  require_device_pointer(workspace, lay.bytes, "workspace");
  require(reinterpret_cast<std::uintptr_t>(workspace) % kAlign == 0, "workspace",
          "must be 256-byte aligned (cudaMalloc memory is)");
  if (n == 0) {  // the empty sum; all-zero bits are 0 for float and int
    CUDALAB_CHECK(cudaMemsetAsync(out, 0, sizeof(T), stream));
    return;
  }
  auto* base = static_cast<unsigned char*>(workspace);
  auto* counter = reinterpret_cast<unsigned*>(base);
  T* bufs[2] = {reinterpret_cast<T*>(base + kAlign),
                reinterpret_cast<T*>(base + kAlign + round_up(lay.a_elems * kElem, kAlign))};

  if (variant == ReduceVariant::kVectorized || variant == ReduceVariant::kOnePass) {
    detail::launch_grid_stride(variant == ReduceVariant::kOnePass, in, out, n, bufs[0], counter, stream);
    return;
  }
  const std::size_t per_block = detail::elements_per_block(variant);
  const T* src = in;
  for (std::size_t m = n, pass = 0;; ++pass) {
    const std::size_t blocks = ceil_div(m, per_block);
    T* dst = blocks == 1 ? out : bufs[pass % 2];
    if (variant == ReduceVariant::kWarpShuffle)
      detail::launch_shuffle_pass(src, dst, m, stream);
    else
      detail::launch_tree_pass(variant, src, dst, m, stream);
    if (blocks == 1) break;
    src = dst;
    m = blocks;
  }
}

}  // namespace

const char* to_string(ReduceVariant v) {
  switch (v) {
    case ReduceVariant::kInterleaved: return "interleaved";
    case ReduceVariant::kSequential: return "sequential";
    case ReduceVariant::kFirstAddDuringLoad: return "first_add_during_load";
    case ReduceVariant::kUnrollLastWarp: return "unroll_last_warp";
    case ReduceVariant::kWarpShuffle: return "warp_shuffle";
    case ReduceVariant::kVectorized: return "vectorized";
    case ReduceVariant::kOnePass: return "one_pass";
  }
  return "unknown";
}

std::size_t reduce_workspace_bytes(std::size_t n) { return layout(n).bytes; }

void reduce_sum(const float* in, float* out, std::size_t n, void* workspace, std::size_t workspace_bytes,
                ReduceVariant variant, cudaStream_t stream) {
  reduce_impl(in, out, n, workspace, workspace_bytes, variant, stream);
}
void reduce_sum(const int* in, int* out, std::size_t n, void* workspace, std::size_t workspace_bytes,
                ReduceVariant variant, cudaStream_t stream) {
  reduce_impl(in, out, n, workspace, workspace_bytes, variant, stream);
}

}  // namespace cudalab::ch05
