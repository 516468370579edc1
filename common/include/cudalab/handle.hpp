// The move-only owner every RAII class of libcudalab is built on: the move constructor and the
// move assignment are written once, here. Destructors never throw (a failing release during
// unwinding would terminate the program; an error there is sticky and the next check reports it).
#pragma once

#include <utility>

namespace cudalab {

// Owns one handle (a pointer, a cudaStream_t, a cublasHandle_t, ...) released by Release(h) when
// it is not the empty value Handle{}. Moved-from owners hold Handle{}.
template <class Handle, auto Release>
class UniqueHandle {
 public:
  UniqueHandle() = default;
  explicit UniqueHandle(Handle h) noexcept : h_(h) {}
  ~UniqueHandle() { reset(); }
  UniqueHandle(UniqueHandle&& o) noexcept : h_(std::exchange(o.h_, Handle{})) {}
  UniqueHandle& operator=(UniqueHandle&& o) noexcept {
    if (this != &o) {
      reset();
      h_ = std::exchange(o.h_, Handle{});
    }
    return *this;
  }
  UniqueHandle(const UniqueHandle&) = delete;
  UniqueHandle& operator=(const UniqueHandle&) = delete;

  Handle get() const noexcept { return h_; }
  // Where a create function writes the new handle (the owner must be empty).
  Handle* out() noexcept { return &h_; }
  explicit operator bool() const noexcept { return h_ != Handle{}; }
  void reset() noexcept {
    if (h_ != Handle{}) (void)Release(h_);  // never throws
    h_ = Handle{};
  }

 private:
  Handle h_{};
};

// A value that reads as T{} once moved from: the sizes kept beside an owned pointer.
template <class T>
class ResetOnMove {
 public:
  ResetOnMove() = default;
  ResetOnMove(T v) noexcept : v_(v) {}  // NOLINT: converts like the value it holds
  ResetOnMove(ResetOnMove&& o) noexcept : v_(std::exchange(o.v_, T{})) {}
  ResetOnMove& operator=(ResetOnMove&& o) noexcept {
    v_ = std::exchange(o.v_, T{});
    return *this;
  }
  operator T() const noexcept { return v_; }  // NOLINT

 private:
  T v_{};
};

}  // namespace cudalab
