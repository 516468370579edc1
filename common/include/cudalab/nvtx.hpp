// A named range on the calling host thread's NVTX timeline: Nsight Systems shows it above the
// CUDA API calls and kernels it encloses. Header-only (nvtx3 is header-only too); without the
// nvtx3 headers, or without a profiler attached, it costs nothing and records nothing.
#pragma once

#if __has_include(<nvtx3/nvToolsExt.h>)
#include <nvtx3/nvToolsExt.h>
#define CUDALAB_HAVE_NVTX 1
#endif

namespace cudalab {

class NvtxRange {
 public:
#if defined(CUDALAB_HAVE_NVTX)
  explicit NvtxRange(const char* name) {
    nvtxRangePushA(name);
  }
  ~NvtxRange() {
    nvtxRangePop();
  }
#else
  explicit NvtxRange(const char*) {}
#endif
  NvtxRange(const NvtxRange&) = delete;
  NvtxRange& operator=(const NvtxRange&) = delete;
};

}  // namespace cudalab
