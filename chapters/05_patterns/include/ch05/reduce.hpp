// Chapter 5 — reduction: Harris' ladder ("Optimizing Parallel Reduction in CUDA"), modernized.
//
// sum = in[0] + in[1] + ... + in[n-1], for float and int. Reading n elements is the whole cost
// (4n bytes, n - 1 adds): a reduction is memory bound, and the best variant should read at the
// speed of CUB's DeviceReduce::Sum (target on an H200: >= 95% of it, 2^28 floats).
//
// Temporary storage, CUB's habit: ask reduce_workspace_bytes(n) once, allocate that many bytes of
// device memory yourself (outside any timed loop), zero them ONCE (cudaMemset) and pass them to
// every call. No call allocates. kOnePass keeps an arrival counter in the workspace and the last
// block sets it back to zero, so the same workspace serves call after call; two calls must not
// use one workspace at the same time (e.g. on two streams). A counter left dirty (a call that did
// not finish, a workspace never zeroed) never yields a wrong sum: see reduce_check_workspace.
#pragma once

#include <cuda_runtime_api.h>

#include <cstddef>

namespace cudalab::ch05 {

// Threads per block of every reduction kernel; one constant drives block size, __launch_bounds__,
// the shared-memory tree and the grid (reference/reduce_*.cu static_assert against it).
inline constexpr unsigned kReduceBlock = 256;
static_assert(kReduceBlock % 32 == 0 && (kReduceBlock & (kReduceBlock - 1)) == 0 &&
                  kReduceBlock >= 64 && kReduceBlock <= 1024,
              "the tree halves a power-of-two block down to one warp");

// The ladder. Steps 1-5 reduce each block's elements to one partial sum and launch again on the
// partials until one value is left (log_{elements per block}(n) launches); step 6 runs a fixed
// grid sized from the device and finishes with one single-block launch; step 7 needs one launch.
enum class ReduceVariant {
  kInterleaved,  // 1: interleaved addressing, `tid % (2s) == 0`: divergent warps (Harris 1)
  kSequential,   // 2: sequential addressing, active threads contiguous (Harris 3; exercise 5.1)
  kFirstAddDuringLoad,  // 3: each thread adds two elements while loading: half the blocks (Harris
                        // 4)
  kUnrollLastWarp,      // 4: the last 6 steps inside one warp, no __syncthreads (Harris 5)
  kWarpShuffle,         // 5: register shuffles instead of shared memory in each warp (exercise 5.2)
  kVectorized,          // 6: grid-stride float4/int4 loads, 4 in flight per thread; 2 launches
  kOnePass,             // 7: as 6, and the last block to finish adds the partials: 1 launch
};
inline constexpr ReduceVariant kAllReduceVariants[] = {
    ReduceVariant::kInterleaved,    ReduceVariant::kSequential,  ReduceVariant::kFirstAddDuringLoad,
    ReduceVariant::kUnrollLastWarp, ReduceVariant::kWarpShuffle, ReduceVariant::kVectorized,
    ReduceVariant::kOnePass};
const char* to_string(ReduceVariant v);

// Bytes of device workspace any variant needs for n elements of float or int.
std::size_t reduce_workspace_bytes(std::size_t n);

// *out = sum of in[0, n) (out: one element of device memory; n = 0 gives 0). `workspace` holds at
// least reduce_workspace_bytes(n) bytes, zeroed once before its first use. Asynchronous on
// `stream`. Float: the order of additions is fixed by the variant and the grid, so repeated calls
// give bit-identical results (no atomics on the sum). Int: wraps on overflow like CUB.
void reduce_sum(const float* in, float* out, std::size_t n, void* workspace,
                std::size_t workspace_bytes, ReduceVariant variant = ReduceVariant::kOnePass,
                cudaStream_t stream = nullptr);
void reduce_sum(const int* in, int* out, std::size_t n, void* workspace,
                std::size_t workspace_bytes, ReduceVariant variant = ReduceVariant::kOnePass,
                cudaStream_t stream = nullptr);

// Throws std::runtime_error, with the reason, when kOnePass cannot trust `workspace`: its arrival
// counter is not 0, or a call found it dirty (that call wrote NaN, or INT_MIN for int, to *out
// instead of a sum). Synchronizes `stream` (one 12-byte read): call it after a failure, not in a
// timed loop. reduce_sum(kOnePass) calls it itself the first time a thread passes a workspace
// (any workspace other than the one its previous kOnePass call used).
void reduce_check_workspace(const void* workspace, std::size_t workspace_bytes,
                            cudaStream_t stream = nullptr);

}  // namespace cudalab::ch05
