// Move-only owners of device, pinned host and pitched 2D device memory. Destructors never throw
// (a failing free during unwinding would terminate the program); everything else is checked.
#pragma once

#include <cuda_runtime_api.h>

#include <cstddef>
#include <span>
#include <utility>
#include <vector>

#include "cudalab/check.hpp"

namespace cudalab {

template <class T>
class DeviceBuffer {
 public:
  DeviceBuffer() = default;
  explicit DeviceBuffer(std::size_t n) : n_(n) {
    if (n_ > 0) CUDALAB_CHECK(cudaMalloc(reinterpret_cast<void**>(&p_), bytes()));
  }
  // Allocates and copies a host vector (synchronous).
  explicit DeviceBuffer(std::span<const T> host) : DeviceBuffer(host.size()) { upload(host); }
  ~DeviceBuffer() { reset(); }
  DeviceBuffer(DeviceBuffer&& o) noexcept
      : p_(std::exchange(o.p_, nullptr)), n_(std::exchange(o.n_, 0)) {}
  DeviceBuffer& operator=(DeviceBuffer&& o) noexcept {
    if (this != &o) {
      reset();
      p_ = std::exchange(o.p_, nullptr);
      n_ = std::exchange(o.n_, 0);
    }
    return *this;
  }
  DeviceBuffer(const DeviceBuffer&) = delete;
  DeviceBuffer& operator=(const DeviceBuffer&) = delete;

  T* data() noexcept { return p_; }
  const T* data() const noexcept { return p_; }
  std::size_t size() const noexcept { return n_; }
  std::size_t bytes() const noexcept { return n_ * sizeof(T); }

  void upload(std::span<const T> host) {
    require(host.size() <= n_, "host", "more elements than the device buffer holds");
    if (!host.empty())
      CUDALAB_CHECK(cudaMemcpy(p_, host.data(), host.size_bytes(), cudaMemcpyHostToDevice));
  }
  void download(std::span<T> host) const {
    require(host.size() <= n_, "host", "more elements than the device buffer holds");
    if (!host.empty())
      CUDALAB_CHECK(cudaMemcpy(host.data(), p_, host.size_bytes(), cudaMemcpyDeviceToHost));
  }
  std::vector<T> to_host() const {
    std::vector<T> h(n_);
    download(h);
    return h;
  }

 private:
  void reset() noexcept {
    if (p_) cudaFree(p_);  // never throws; an error here is sticky and the next check reports it
    p_ = nullptr;
    n_ = 0;
  }
  T* p_ = nullptr;
  std::size_t n_ = 0;
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
    if (n_ > 0) CUDALAB_CHECK(cudaHostAlloc(reinterpret_cast<void**>(&p_), n_ * sizeof(T), flags));
  }
  ~PinnedBuffer() { reset(); }
  PinnedBuffer(PinnedBuffer&& o) noexcept
      : p_(std::exchange(o.p_, nullptr)), n_(std::exchange(o.n_, 0)) {}
  PinnedBuffer& operator=(PinnedBuffer&& o) noexcept {
    if (this != &o) {
      reset();
      p_ = std::exchange(o.p_, nullptr);
      n_ = std::exchange(o.n_, 0);
    }
    return *this;
  }
  PinnedBuffer(const PinnedBuffer&) = delete;
  PinnedBuffer& operator=(const PinnedBuffer&) = delete;

  T* data() noexcept { return p_; }
  const T* data() const noexcept { return p_; }
  std::size_t size() const noexcept { return n_; }
  std::size_t bytes() const noexcept { return n_ * sizeof(T); }
  std::span<T> span() noexcept { return {p_, n_}; }
  T& operator[](std::size_t i) noexcept { return p_[i]; }

 private:
  void reset() noexcept {
    if (p_) cudaFreeHost(p_);
    p_ = nullptr;
    n_ = 0;
  }
  T* p_ = nullptr;
  std::size_t n_ = 0;
};

// A 2D array of `rows` x `width` elements whose rows start `pitch` bytes apart (cudaMallocPitch
// pads each row so that every row starts on an aligned boundary: coalesced row accesses).
template <class T>
class PitchedBuffer {
 public:
  PitchedBuffer() = default;
  PitchedBuffer(std::size_t rows, std::size_t width) : rows_(rows), width_(width) {
    if (rows_ > 0 && width_ > 0)
      CUDALAB_CHECK(cudaMallocPitch(reinterpret_cast<void**>(&p_), &pitch_, width_ * sizeof(T), rows_));
  }
  ~PitchedBuffer() { reset(); }
  PitchedBuffer(PitchedBuffer&& o) noexcept
      : p_(std::exchange(o.p_, nullptr)), rows_(std::exchange(o.rows_, 0)),
        width_(std::exchange(o.width_, 0)), pitch_(std::exchange(o.pitch_, 0)) {}
  PitchedBuffer& operator=(PitchedBuffer&& o) noexcept {
    if (this != &o) {
      reset();
      p_ = std::exchange(o.p_, nullptr);
      rows_ = std::exchange(o.rows_, 0);
      width_ = std::exchange(o.width_, 0);
      pitch_ = std::exchange(o.pitch_, 0);
    }
    return *this;
  }
  PitchedBuffer(const PitchedBuffer&) = delete;
  PitchedBuffer& operator=(const PitchedBuffer&) = delete;

  T* data() noexcept { return p_; }
  const T* data() const noexcept { return p_; }
  std::size_t rows() const noexcept { return rows_; }
  std::size_t width() const noexcept { return width_; }
  std::size_t pitch_bytes() const noexcept { return pitch_; }

  // Dense host image (rows x width) <-> pitched device image.
  void upload(std::span<const T> host) {
    require(host.size() == rows_ * width_, "host", "size must be rows * width");
    if (!host.empty())
      CUDALAB_CHECK(cudaMemcpy2D(p_, pitch_, host.data(), width_ * sizeof(T), width_ * sizeof(T),
                                 rows_, cudaMemcpyHostToDevice));
  }
  std::vector<T> to_host() const {
    std::vector<T> h(rows_ * width_);
    if (!h.empty())
      CUDALAB_CHECK(cudaMemcpy2D(h.data(), width_ * sizeof(T), p_, pitch_, width_ * sizeof(T),
                                 rows_, cudaMemcpyDeviceToHost));
    return h;
  }
  // Fills every byte, padding included (poisoning before a test).
  void fill_bytes(unsigned char value) {
    if (p_) CUDALAB_CHECK(cudaMemset2D(p_, pitch_, value, pitch_, rows_));
  }

 private:
  void reset() noexcept {
    if (p_) cudaFree(p_);
    p_ = nullptr;
  }
  T* p_ = nullptr;
  std::size_t rows_ = 0, width_ = 0, pitch_ = 0;
};

}  // namespace cudalab
