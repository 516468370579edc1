// Move-only CUDA stream and event.
#pragma once

#include <cuda_runtime_api.h>

#include <utility>

#include "cudalab/check.hpp"
#include "cudalab/handle.hpp"

namespace cudalab {

class Stream {
 public:
  // cudaStreamNonBlocking: the stream does not synchronize with the legacy default stream.
  explicit Stream(unsigned flags = cudaStreamNonBlocking, int priority = 0) {
    CUDALAB_CHECK(cudaStreamCreateWithPriority(s_.out(), flags, priority));
  }

  cudaStream_t get() const noexcept { return s_.get(); }
  operator cudaStream_t() const noexcept { return s_.get(); }  // NOLINT: used like the raw handle
  void synchronize() const { CUDALAB_CHECK(cudaStreamSynchronize(s_.get())); }

 private:
  UniqueHandle<cudaStream_t, cudaStreamDestroy> s_;  // move-only: the source is left empty
};

class Event {
 public:
  explicit Event(unsigned flags = cudaEventDefault) {
    CUDALAB_CHECK(cudaEventCreateWithFlags(e_.out(), flags));
  }

  cudaEvent_t get() const noexcept { return e_.get(); }
  operator cudaEvent_t() const noexcept { return e_.get(); }  // NOLINT
  void record(cudaStream_t s = nullptr) { CUDALAB_CHECK(cudaEventRecord(e_.get(), s)); }
  void synchronize() const { CUDALAB_CHECK(cudaEventSynchronize(e_.get())); }
  // Milliseconds from `start` to this event (both recorded and completed).
  float elapsed_ms_since(const Event& start) const {
    float ms = 0.0f;
    CUDALAB_CHECK(cudaEventElapsedTime(&ms, start.e_.get(), e_.get()));
    return ms;
  }

 private:
  UniqueHandle<cudaEvent_t, cudaEventDestroy> e_;  // move-only: the source is left empty
};

}  // namespace cudalab
