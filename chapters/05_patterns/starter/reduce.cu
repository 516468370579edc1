// Starter track — write your code at the TODO marks; the tests of each exercise
// fail until you do. (Generated from chapters/05_patterns/reference/reduce.cu by scripts/variants.py.)
// Chapter 5 reduction: host API, argument checks, workspace layout, the ladder's table and the
// multi-pass driver.
//
// The ladder itself is one file a step: reduce_1_interleaved.cu ... reduce_7_one_pass.cu, with
// the device helpers they share in reduce_common.cuh and reduce_warp.cuh.
//
// Workspace (reduce_workspace_bytes): [step 7's state, 256 B][partials A][partials B][arrival
// marks], each part 256-byte aligned. Steps 1-5 ping-pong between A and B: pass 1 writes
// ceil(n / E) block sums to A, pass 2 ceil(n / E^2) to B, pass 3 back to A, ... the pass with one
// block writes *out. Steps 6 and 7 use A for their partials; step 7 also the state and the marks.
#include <algorithm>
#include <cstdint>
#include <stdexcept>
#include <string>

#include "ch05/reduce.hpp"
#include "cudalab/check.hpp"
#include "cudalab/ladder.hpp"
#include "cudalab/math.hpp"
#include "reduce_common.cuh"

namespace cudalab::ch05 {
namespace {

constexpr std::size_t kAlign = 256;
constexpr std::size_t kElem = 4;  // float and int

struct Layout {
  std::size_t a_elems, b_elems, marks_offset, bytes;
};
Layout layout(std::size_t n) {
  static_assert(sizeof(detail::OnePassState) <= kAlign);
  // Largest first pass: one element per thread (steps 1-2) or the grid-stride bound (6-7).
  const std::size_t a = std::max<std::size_t>(
      {ceil_div<std::size_t>(n, kReduceBlock), detail::grid_stride_blocks_max(n), 1});
  const std::size_t b = std::max<std::size_t>(ceil_div<std::size_t>(a, kReduceBlock), 1);
  const std::size_t marks = kAlign + round_up(a * kElem, kAlign) + round_up(b * kElem, kAlign);
  return {a, b, marks,
          marks + round_up(detail::grid_stride_blocks_max(n) * sizeof(unsigned), kAlign)};
}

// Step 7's state says whether the workspace can be trusted; throws when it cannot.
void check_state(const detail::OnePassState& st) {
  if (st.counter == 0 && st.dirty == 0) return;
  std::string why = "reduce_sum(kOnePass): the workspace is dirty (arrival counter = " +
                    std::to_string(st.counter) + ", flags = " + std::to_string(st.dirty) + "): ";
  if (st.dirty & detail::kDirtyMissingBlock)
    why +=
        "a call found a block's partial missing, so its counter did not start at 0 (it wrote NaN "
        "/ INT_MIN, not a sum). ";
  else if (st.dirty & detail::kDirtyCounterAhead)
    why += "a call drew more tickets than it had blocks (it wrote NaN / INT_MIN, not a sum). ";
  why +=
      "An earlier call did not finish, the workspace was not zeroed before its first use, or two "
      "calls shared it at once. cudaMemset it to 0 before using it again.";
  throw std::runtime_error(why);
}

// The last workspace this thread checked (see reduce_sum: a new workspace is checked once).
thread_local const void* t_checked_workspace = nullptr;

// One checked call, its workspace carved: what every step's launcher receives.
template <class T>
struct Call {
  const T* in;
  T* out;
  std::size_t n;  // > 0
  unsigned char* workspace;
  std::size_t workspace_bytes;
  Layout lay;
  cudaStream_t stream;
  // Partials buffer A (i = 0) or B (i = 1).
  T* partials(int i) const {
    return reinterpret_cast<T*>(workspace + kAlign +
                                (i == 0 ? 0 : round_up(lay.a_elems * kElem, kAlign)));
  }
};

template <class T>
using PassLauncher = void (*)(dim3, const T*, T*, std::size_t, cudaStream_t);

// Steps 1-5: each pass reduces blocks of elements_per_block(V) elements to one partial each,
// then runs again on the partials (ping-pong between A and B) until one block writes *out.
template <class T, ReduceVariant V, PassLauncher<T> Pass>
void multi_pass(const Call<T>& c) {
  const std::size_t per_block = detail::elements_per_block(V);
  const T* src = c.in;
  for (std::size_t m = c.n, pass = 0;; ++pass) {
    const std::size_t blocks = ceil_div(m, per_block);
    require(blocks <= 0x7fffffff, "n", "needs between 1 and 2^31 - 1 blocks");
    T* dst = blocks == 1 ? c.out : c.partials(static_cast<int>(pass % 2));
    Pass(dim3(static_cast<unsigned>(blocks)), src, dst, m, c.stream);
    if (blocks == 1) break;
    src = dst;
    m = blocks;
  }
}

// Step 6: a device-sized grid, then one single-block launch on its partials.
template <class T>
void vectorized(const Call<T>& c) {
  detail::launch_vectorized(c.in, c.out, c.n, c.partials(0), c.stream);
}

// Step 7: one launch; the last block to finish adds the partials.
template <class T>
void one_pass(const Call<T>& c) {
  // A workspace this thread has not just used is checked once (one synchronous 12-byte read):
  // that catches a workspace never zeroed. A dirty counter met later is caught by the kernel,
  // which then writes NaN / INT_MIN and flags the workspace (reduce_check_workspace). Not while
  // the stream is being captured into a graph (a synchronization would end the capture).
  cudaStreamCaptureStatus capture = cudaStreamCaptureStatusNone;
  CUDALAB_CHECK(cudaStreamIsCapturing(c.stream, &capture));
  if (c.workspace != t_checked_workspace && capture == cudaStreamCaptureStatusNone) {
    reduce_check_workspace(c.workspace, c.workspace_bytes, c.stream);
    t_checked_workspace = c.workspace;
  }
  detail::launch_one_pass(c.in, c.out, c.n, c.partials(0),
                          reinterpret_cast<detail::OnePassState*>(c.workspace),
                          reinterpret_cast<unsigned*>(c.workspace + c.lay.marks_offset), c.stream);
}

// The ladder, one row a step: the variant, its name (benchmark rows and test cases use it) and
// its launcher (one file a step: reduce_<k>_*.cu). to_string and reduce_sum() read this table
// only; the public kAllReduceVariants lists the same steps in the same order (checked below,
// cudalab/ladder.hpp).
template <class T>
struct Step {
  ReduceVariant variant;
  const char* name;
  void (*launch)(const Call<T>&);
};
template <class T>
constexpr Step<T> kLadder[] = {
    {ReduceVariant::kInterleaved, "interleaved",
     multi_pass<T, ReduceVariant::kInterleaved, detail::launch_interleaved_pass<T>>},
    {ReduceVariant::kSequential, "sequential",
     multi_pass<T, ReduceVariant::kSequential, detail::launch_sequential_pass<T>>},
    {ReduceVariant::kFirstAddDuringLoad, "first_add_during_load",
     multi_pass<T, ReduceVariant::kFirstAddDuringLoad, detail::launch_first_add_pass<T>>},
    {ReduceVariant::kUnrollLastWarp, "unroll_last_warp",
     multi_pass<T, ReduceVariant::kUnrollLastWarp, detail::launch_last_warp_pass<T>>},
    {ReduceVariant::kWarpShuffle, "warp_shuffle",
     multi_pass<T, ReduceVariant::kWarpShuffle, detail::launch_shuffle_pass<T>>},
    {ReduceVariant::kVectorized, "vectorized", vectorized<T>},
    {ReduceVariant::kOnePass, "one_pass", one_pass<T>},
};
static_assert(same_steps(kLadder<float>, kAllReduceVariants) &&
                  same_steps(kLadder<int>, kAllReduceVariants),
              "kAllReduceVariants (ch05/reduce.hpp) and kLadder list the same steps in the same "
              "order");

template <class T>
void reduce_impl(const T* in, T* out, std::size_t n, void* workspace, std::size_t workspace_bytes,
                 ReduceVariant variant, cudaStream_t stream) {
  static_assert(sizeof(T) == kElem);
  const Step<T>* step = find_step(kLadder<T>, variant);
  require(step != nullptr, "variant", "unknown ReduceVariant");
  const Layout lay = layout(n);
  require(workspace_bytes >= lay.bytes, "workspace_bytes",
          "smaller than reduce_workspace_bytes(n)");
  require_device_pointer(in, n, "in");
  require_device_pointer(out, 1, "out");
  require_device_pointer(workspace, lay.bytes, "workspace");
  require(reinterpret_cast<std::uintptr_t>(workspace) % kAlign == 0, "workspace",
          "must be 256-byte aligned (cudaMalloc memory is)");
  if (n == 0) {  // the empty sum; all-zero bits are 0 for float and int
    CUDALAB_CHECK(cudaMemsetAsync(out, 0, sizeof(T), stream));
    return;
  }
  step->launch({in, out, n, static_cast<unsigned char*>(workspace), workspace_bytes, lay, stream});
}

}  // namespace

const char* to_string(ReduceVariant v) {
  const Step<float>* s = find_step(kLadder<float>, v);
  return s ? s->name : "unknown";
}

std::size_t reduce_workspace_bytes(std::size_t n) {
  return layout(n).bytes;
}

void reduce_check_workspace(const void* workspace, std::size_t workspace_bytes,
                            cudaStream_t stream) {
  require(workspace_bytes >= sizeof(detail::OnePassState), "workspace_bytes",
          "smaller than the state");
  require_device_pointer(workspace, sizeof(detail::OnePassState), "workspace");
  detail::OnePassState st{};
  CUDALAB_CHECK(cudaMemcpyAsync(&st, workspace, sizeof st, cudaMemcpyDeviceToHost, stream));
  CUDALAB_CHECK(cudaStreamSynchronize(stream));
  check_state(st);
}

void reduce_sum(const float* in, float* out, std::size_t n, void* workspace,
                std::size_t workspace_bytes, ReduceVariant variant, cudaStream_t stream) {
  reduce_impl(in, out, n, workspace, workspace_bytes, variant, stream);
}
void reduce_sum(const int* in, int* out, std::size_t n, void* workspace,
                std::size_t workspace_bytes, ReduceVariant variant, cudaStream_t stream) {
  reduce_impl(in, out, n, workspace, workspace_bytes, variant, stream);
}

}  // namespace cudalab::ch05
