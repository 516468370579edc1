// Move-only CUDA stream and event.
#pragma once

#include <cuda_runtime_api.h>

#include <utility>

#include "cudalab/check.hpp"

namespace cudalab {

class Stream {
 public:
  // cudaStreamNonBlocking: the stream does not synchronize with the legacy default stream.
  explicit Stream(unsigned flags = cudaStreamNonBlocking, int priority = 0) {
    CUDALAB_CHECK(cudaStreamCreateWithPriority(&s_, flags, priority));
  }
  ~Stream() {
    if (s_) cudaStreamDestroy(s_);
  }
  Stream(Stream&& o) noexcept : s_(std::exchange(o.s_, nullptr)) {}
  Stream& operator=(Stream&& o) noexcept {
    if (this != &o) {
      if (s_) cudaStreamDestroy(s_);
      s_ = std::exchange(o.s_, nullptr);
    }
    return *this;
  }
  Stream(const Stream&) = delete;
  Stream& operator=(const Stream&) = delete;

  cudaStream_t get() const noexcept { return s_; }
  operator cudaStream_t() const noexcept { return s_; }  // NOLINT: used like the raw handle
  void synchronize() const { CUDALAB_CHECK(cudaStreamSynchronize(s_)); }

 private:
  cudaStream_t s_ = nullptr;
};

class Event {
 public:
  explicit Event(unsigned flags = cudaEventDefault) { CUDALAB_CHECK(cudaEventCreateWithFlags(&e_, flags)); }
  ~Event() {
    if (e_) cudaEventDestroy(e_);
  }
  Event(Event&& o) noexcept : e_(std::exchange(o.e_, nullptr)) {}
  Event& operator=(Event&& o) noexcept {
    if (this != &o) {
      if (e_) cudaEventDestroy(e_);
      e_ = std::exchange(o.e_, nullptr);
    }
    return *this;
  }
  Event(const Event&) = delete;
  Event& operator=(const Event&) = delete;

  cudaEvent_t get() const noexcept { return e_; }
  operator cudaEvent_t() const noexcept { return e_; }  // NOLINT
  void record(cudaStream_t s = nullptr) { CUDALAB_CHECK(cudaEventRecord(e_, s)); }
  void synchronize() const { CUDALAB_CHECK(cudaEventSynchronize(e_)); }
  // Milliseconds from `start` to this event (both recorded and completed).
  float elapsed_ms_since(const Event& start) const {
    float ms = 0.0f;
    CUDALAB_CHECK(cudaEventElapsedTime(&ms, start.e_, e_));
    return ms;
  }

 private:
  cudaEvent_t e_ = nullptr;
};

}  // namespace cudalab
