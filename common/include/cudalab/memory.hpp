// Move-only owners of device, pinned host and pitched 2D device memory. Destructors never throw
// (a failing free during unwinding would terminate the program); everything else is checked.
#pragma once

#include <cuda_runtime_api.h>

#include <cstddef>
#include <span>
#include <utility>
#include <vector>

#include "cudalab/check.hpp"
#include "cudalab/handle.hpp"

namespace cudalab {

template <class T>
class DeviceBuffer {
 public:
  DeviceBuffer() = default;
  explicit DeviceBuffer(std::size_t n) : n_(n) {
    if (n > 0) CUDALAB_CHECK(cudaMalloc(reinterpret_cast<void**>(p_.out()), bytes()));
  }
  // Allocates and copies a host vector (synchronous).
  explicit DeviceBuffer(std::span<const T> host) : DeviceBuffer(host.size()) { upload(host); }
  DeviceBuffer(DeviceBuffer&&) noexcept = default;  // the source is left empty (UniqueHandle)
  DeviceBuffer& operator=(DeviceBuffer&&) noexcept = default;

  T* data() noexcept { return p_.get(); }
  const T* data() const noexcept { return p_.get(); }
  std::size_t size() const noexcept { return n_; }
  std::size_t bytes() const noexcept { return n_ * sizeof(T); }

  void upload(std::span<const T> host) {
    require(host.size() <= n_, "host", "more elements than the device buffer holds");
    if (!host.empty())
      CUDALAB_CHECK(cudaMemcpy(p_.get(), host.data(), host.size_bytes(), cudaMemcpyHostToDevice));
  }
  void download(std::span<T> host) const {
    require(host.size() <= n_, "host", "more elements than the device buffer holds");
    if (!host.empty())
      CUDALAB_CHECK(cudaMemcpy(host.data(), p_.get(), host.size_bytes(), cudaMemcpyDeviceToHost));
  }
  std::vector<T> to_host() const {
    std::vector<T> h(n_);
    download(h);
    return h;
  }

 private:
  UniqueHandle<T*, cudaFree> p_;
  ResetOnMove<std::size_t> n_;
};

// Copies a host vector into a new device buffer: auto d_a = to_device(a);
template <class T>
DeviceBuffer<T> to_device(const std::vector<T>& host) {
  return DeviceBuffer<T>(std::span<const T>(host));
}

// Page-locked host memory: the DMA engines read it directly, so copies run at full PCIe/NVLink
// speed and can be asynchronous (chapter 4 measures pageable against pinned).
template <class T>
class PinnedBuffer {
 public:
  PinnedBuffer() = default;
  explicit PinnedBuffer(std::size_t n, unsigned flags = cudaHostAllocDefault) : n_(n) {
    if (n > 0)
      CUDALAB_CHECK(cudaHostAlloc(reinterpret_cast<void**>(p_.out()), n * sizeof(T), flags));
  }
  PinnedBuffer(PinnedBuffer&&) noexcept = default;  // the source is left empty (UniqueHandle)
  PinnedBuffer& operator=(PinnedBuffer&&) noexcept = default;

  T* data() noexcept { return p_.get(); }
  const T* data() const noexcept { return p_.get(); }
  std::size_t size() const noexcept { return n_; }
  std::size_t bytes() const noexcept { return n_ * sizeof(T); }
  std::span<T> span() noexcept { return {p_.get(), n_}; }
  T& operator[](std::size_t i) noexcept { return p_.get()[i]; }

 private:
  UniqueHandle<T*, cudaFreeHost> p_;
  ResetOnMove<std::size_t> n_;
};

// A 2D array of `rows` x `width` elements whose rows start `pitch` bytes apart (cudaMallocPitch
// pads each row so that every row starts on an aligned boundary: coalesced row accesses).
template <class T>
class PitchedBuffer {
 public:
  PitchedBuffer() = default;
  PitchedBuffer(std::size_t rows, std::size_t width) : rows_(rows), width_(width) {
    if (rows > 0 && width > 0) {
      std::size_t pitch = 0;
      CUDALAB_CHECK(
          cudaMallocPitch(reinterpret_cast<void**>(p_.out()), &pitch, width * sizeof(T), rows));
      pitch_ = pitch;
    }
  }
  PitchedBuffer(PitchedBuffer&&) noexcept = default;  // the source is left empty (UniqueHandle)
  PitchedBuffer& operator=(PitchedBuffer&&) noexcept = default;

  T* data() noexcept { return p_.get(); }
  const T* data() const noexcept { return p_.get(); }
  std::size_t rows() const noexcept { return rows_; }
  std::size_t width() const noexcept { return width_; }
  std::size_t pitch_bytes() const noexcept { return pitch_; }

  // Dense host image (rows x width) <-> pitched device image.
  void upload(std::span<const T> host) {
    require(host.size() == rows_ * width_, "host", "size must be rows * width");
    if (!host.empty())
      CUDALAB_CHECK(cudaMemcpy2D(p_.get(), pitch_, host.data(), width_ * sizeof(T),
                                 width_ * sizeof(T), rows_, cudaMemcpyHostToDevice));
  }
  std::vector<T> to_host() const {
    std::vector<T> h(rows_ * width_);
    if (!h.empty())
      CUDALAB_CHECK(cudaMemcpy2D(h.data(), width_ * sizeof(T), p_.get(), pitch_, width_ * sizeof(T),
                                 rows_, cudaMemcpyDeviceToHost));
    return h;
  }
  // Fills every byte, padding included (poisoning before a test).
  void fill_bytes(unsigned char value) {
    if (p_) CUDALAB_CHECK(cudaMemset2D(p_.get(), pitch_, value, pitch_, rows_));
  }

 private:
  UniqueHandle<T*, cudaFree> p_;
  ResetOnMove<std::size_t> rows_, width_, pitch_;
};

}  // namespace cudalab
