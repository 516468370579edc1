// Single-pass scan with decoupled look-back: the warp-shuffle scan of step 3, and the translation
// unit of the look-back scan (its kernel and look_back, exercise 5.4, are in scan_lookback.cuh).
#include "scan_lookback.cuh"

namespace cudalab::ch05::detail {
namespace {

// Inclusive scan of v over the 32 lanes: after the step with `offset`, lane i holds the sum of
// lanes i - 2 offset + 1 .. i. __shfl_up_sync returns the caller's OWN value when lane - offset
// is below 0, hence the guard.
template <class T>
__device__ T warp_inclusive_scan(T v, unsigned lane) {
#pragma unroll
  for (unsigned offset = 1; offset < 32; offset *= 2) {
    const T up = __shfl_up_sync(kFullMask, v, offset);
    // BEGIN PITFALL scan_shfl_up_unguarded EXERCISES 5.4
    // A warp scan without the `lane >= offset` guard. __shfl_up_sync(mask, v, offset) hands lane i
    // the value of lane i - offset; for lanes below `offset` there is no such lane and the call
    // returns the caller's OWN value. Added unguarded, lanes 0..offset-1 add themselves again at
    // every step: lane 0 ends with 32 x its value, and every prefix is wrong from the first element
    // on. The look-back scan's kernel scans its lanes with this. Caught by: LookbackScanGpu.* for
    // every n >= 9. The fix: `if (lane >= offset) v += up;`.
    if (lane >= offset) v += up;
    // BUG: v += up;
    // END PITFALL
  }
  return v;
}

}  // namespace

template void launch_lookback_scan<float>(const float*, float*, std::size_t, ScanKind, unsigned long long*, unsigned*, cudaStream_t);
template void launch_lookback_scan<int>(const int*, int*, std::size_t, ScanKind, unsigned long long*, unsigned*, cudaStream_t);

}  // namespace cudalab::ch05::detail
