// GoogleTest helpers: the GPU skip rule and comparisons as assertion results.
//
// Every test that needs a device lives in a test suite whose name ends in "Gpu" (the ctest label
// gpu/cpu is derived from it) and starts with CUDALAB_REQUIRE_GPU(). Without a GPU the test is
// skipped with the reason, and ctest reports it as skipped ("skipped: " is its skip pattern).
#pragma once

#include <cuda_runtime_api.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <functional>
#include <limits>
#include <span>
#include <stdexcept>
#include <string>
#include <type_traits>
#include <vector>

#include "cudalab/compare.hpp"
#include "cudalab/device_check.hpp"
#include "cudalab/device_fill.hpp"
#include "cudalab/memory.hpp"

namespace cudalab::testing {

// Empty when the test may run; otherwise the skip reason ("skipped: no GPU (...)"). Also fails the
// test when its suite name does not end in "Gpu" (it would be labelled cpu, and run on CI).
std::string gpu_skip_reason();
// Same for tests that need `bytes` of free device memory (large-index tests).
std::string memory_skip_reason(std::size_t bytes);
// Tests that need tens of GB (the *LargeGpu suites) run one at a time across processes: the
// runners start one process per executable in parallel (ctest -j, scripts/gpu_suite), and two
// 26 GB tests at once could each see enough free memory and then fail to allocate. A
// LargeTestLock holds an exclusive lock on a per-user file in the temporary directory (flock)
// until it goes out of scope; CUDALAB_REQUIRE_DEVICE_MEMORY takes one before it measures.
class LargeTestLock {
 public:
  LargeTestLock();
  ~LargeTestLock();
  LargeTestLock(const LargeTestLock&) = delete;
  LargeTestLock& operator=(const LargeTestLock&) = delete;

 private:
  int fd_ = -1;
};
// Same for tests that need compute capability >= major.minor (wgmma, FP8, TMA).
std::string arch_skip_reason(int major, int minor);

// What a call launches, recorded by stream capture (nothing runs): its kernels with what ptxas
// gave each (cudaFuncGetAttributes: registers, static shared and local memory) and the dynamic
// shared memory of the launch, plus the number of memset, copy and other nodes. Technique checks
// read it: a single-pass scan is one kernel; a tiled kernel uses shared memory (a naive loop,
// which passes every numeric test, uses none). `launch(stream)` must enqueue on `stream` only.
struct CapturedKernel {
  cudaFuncAttributes attr{};
  std::size_t dynamic_shared = 0;
  dim3 grid, block;
  std::size_t shared_bytes() const noexcept { return attr.sharedSizeBytes + dynamic_shared; }
};
struct CapturedLaunches {
  std::vector<CapturedKernel> kernels;
  int memsets = 0, copies = 0, other = 0;
};
CapturedLaunches capture_launches(const std::function<void(cudaStream_t)>& launch);

// The stream contract of a function that takes a cudaStream_t: all of its GPU work goes on that
// stream, and it returns without waiting for it. replay_from_capture() checks both without relying
// on timing: it runs `launch(stream)` once (a warm-up: modules and library workspaces loaded),
// records it by stream capture (relaxed mode, a non-blocking stream), waits for the device, calls
// `reset()` (the caller poisons its outputs again and restores any input the call overwrites),
// then replays the recorded graph on the stream and waits for it. The caller then compares its
// outputs as usual. Work put on another stream (a kernel launched without the stream argument goes
// to the legacy default stream) runs during the capture, not in the graph, so the replay leaves
// that poison in place; waiting for the stream inside the call (cudaStreamSynchronize) is an error
// while it is captured and comes back as cudalab::CudaError. Not for calls whose contract is to
// synchronize (a fault reported before returning).
void replay_from_capture(const std::function<void(cudaStream_t)>& launch,
                         const std::function<void()>& reset);

// Expects `call()` to throw std::invalid_argument whose message names 'argument' (the chapter
// APIs' rule: bad input is refused with the argument's name, never a crash or a silent result).
template <class F>
void expect_throws_naming(F&& call, const char* argument) {
  try {
    call();
    ADD_FAILURE() << "expected std::invalid_argument naming '" << argument << "'";
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find(std::string("'") + argument + "'"), std::string::npos)
        << e.what();
  }
}

// The message of the std::invalid_argument `call()` throws ("no exception" when it returns).
template <class F>
std::string invalid_argument_message(F&& call) {
  try {
    call();
  } catch (const std::invalid_argument& e) {
    return e.what();
  }
  return "no exception";
}

// A device-side check (cudalab/device_check.hpp) as an assertion result; `what` names the
// operation and size.
inline ::testing::AssertionResult device_matches(const DeviceCheck& r, const std::string& what) {
  if (r.ok()) return ::testing::AssertionSuccess();
  return ::testing::AssertionFailure() << r.message(what);
}

inline ::testing::AssertionResult matches(const CompareResult& r) {
  if (r.ok()) return ::testing::AssertionSuccess();
  return ::testing::AssertionFailure() << r.message;
}

// A device output of n elements followed by a guard zone, all poisoned before the kernel runs.
// result() returns the first n elements; guard_intact() fails when anything wrote past the end
// (a missing bounds check corrupts the next buffer silently; the guard makes it visible).
template <class T>
class GuardedOutput {
 public:
  static constexpr std::size_t kGuard = 4096;
  explicit GuardedOutput(std::size_t n) : n_(n), buf_(n + kGuard) {
    poison_device(buf_.data(), buf_.bytes());
    CUDALAB_CHECK(cudaDeviceSynchronize());
  }
  // An in-place output (y = a x + y): the first n elements start as `initial` (n of them), the
  // guard behind them stays poisoned.
  GuardedOutput(std::size_t n, std::span<const T> initial) : GuardedOutput(n) {
    if (initial.size() != n)
      throw std::invalid_argument("GuardedOutput: 'initial' must hold n elements");
    if (n != 0)
      CUDALAB_CHECK(cudaMemcpy(buf_.data(), initial.data(), n * sizeof(T), cudaMemcpyHostToDevice));
  }
  T* data() noexcept { return buf_.data(); }
  std::size_t size() const noexcept { return n_; }
  // Poisons the output and its guard again (replay_from_capture's reset).
  void repoison() {
    poison_device(buf_.data(), buf_.bytes());
    CUDALAB_CHECK(cudaDeviceSynchronize());
  }
  // Downloads everything once (call after the kernel).
  std::vector<T> result() {
    all_ = buf_.to_host();
    return std::vector<T>(all_.begin(), all_.begin() + static_cast<std::ptrdiff_t>(n_));
  }
  ::testing::AssertionResult guard_intact() const {
    const std::size_t k = count_overwritten(std::span<const T>(all_), n_, n_ + kGuard);
    if (k == 0) return ::testing::AssertionSuccess();
    return ::testing::AssertionFailure()
           << k << " of the " << kGuard << " elements after the end of the output (n = " << n_
           << ") were overwritten: the kernel writes past n (missing bounds check?)";
  }

  // Elements [from, to) of the output were never written (after result()): e.g. the `offset`
  // elements in front of a pointer that a test shifted by offset, which the kernel must not touch
  // (a head loop that starts one element early writes there). `what` names the operation.
  ::testing::AssertionResult untouched(std::size_t from, std::size_t to,
                                       const std::string& what) const {
    const std::size_t k = count_overwritten(std::span<const T>(all_), from, to);
    if (k == 0) return ::testing::AssertionSuccess();
    std::size_t first = from;
    while (first < to && is_poison(all_[first])) ++first;
    return ::testing::AssertionFailure()
           << what << ": " << k << " of the elements " << from << ".." << (to - 1)
           << " before the output were written (first: index " << first
           << " relative to the buffer,"
           << " n = " << n_ << "): the kernel writes before its first element";
  }

 private:
  std::size_t n_;
  DeviceBuffer<T> buf_;
  std::vector<T> all_;
};

// replay_from_capture() judged against a plain call: `launch(nullptr)` on the legacy stream with
// `out` poisoned (and `restore()` run first: inputs the call overwrites), then the replay of a
// capture of `launch`, after the same reset. The two outputs must be the same bits (rel_tol = 0:
// a deterministic call) or, for a library call that may pick another algorithm under capture,
// agree within rel_tol of the larger magnitude (at least 1); the values themselves are the other
// tests' business.
template <class T>
::testing::AssertionResult replay_matches_plain_call(
    const std::function<void(cudaStream_t)>& launch, GuardedOutput<T>& out, const std::string& what,
    const std::function<void()>& restore = {}, double rel_tol = 0.0) {
  const auto reset = [&] {
    out.repoison();
    if (restore) restore();
    CUDALAB_CHECK(cudaDeviceSynchronize());
  };
  reset();
  launch(nullptr);
  CUDALAB_CHECK(cudaDeviceSynchronize());
  const std::vector<T> plain = out.result();
  replay_from_capture(launch, reset);
  const std::vector<T> replayed = out.result();
  std::size_t differ = 0, first = 0;
  const auto same = [&](const T& a, const T& b) {
    if (std::memcmp(&a, &b, sizeof(T)) == 0) return true;
    if constexpr (std::is_floating_point_v<T>) {
      const double x = a, y = b;  // NaN (poison) on either side is never within a tolerance
      return rel_tol > 0 &&
             std::fabs(x - y) <= rel_tol * std::max({std::fabs(x), std::fabs(y), 1.0});
    }
    return false;
  };
  for (std::size_t i = 0; i < plain.size(); ++i)
    if (!same(plain[i], replayed[i]) && differ++ == 0) first = i;
  if (differ == 0) return ::testing::AssertionSuccess();
  return ::testing::AssertionFailure()
         << what << ", replayed from a capture of its stream: " << differ << " of " << plain.size()
         << " elements differ from a plain call's, the first at " << first
         << " (work left the caller's stream: a launch, copy or library call without it?)";
}

// An input on the device with a guard zone of "loud" values around it: `offset` elements before
// (also misaligns the data by offset * sizeof(T) bytes: a +1-element view of a larger allocation)
// and kGuard after. A kernel that reads past n (or before 0) picks up NaN (float) or 2^24
// (integers), which no tolerance hides: a read outside the input shows in the result even where
// it does not crash.
template <class T>
class GuardedInput {
 public:
  static constexpr std::size_t kGuard = 64;
  static T loud() {
    if constexpr (std::is_floating_point_v<T>)
      return std::numeric_limits<T>::quiet_NaN();
    else
      return T{1} << 24;
  }
  GuardedInput(const std::vector<T>& host, std::size_t offset = 0)
      : GuardedInput(host, offset, loud()) {}
  // With another loud value (the bits of an fp16 NaN, 0x7E00, for a buffer of uint16_t).
  GuardedInput(const std::vector<T>& host, std::size_t offset, T loud_value)
      : offset_(offset), buf_(offset + host.size() + kGuard) {
    std::vector<T> all(buf_.size(), loud_value);
    for (std::size_t i = 0; i < host.size(); ++i) all[offset + i] = host[i];
    buf_.upload(std::span<const T>(all));
  }
  const T* data() const noexcept { return buf_.data() + offset_; }

 private:
  std::size_t offset_;
  DeviceBuffer<T> buf_;
};

// Indices to check in a large output (the *LargeGpu tests, whose inputs are filled on the device
// and whose oracle is computed only at these indices): the first and last elements, both sides of
// 2^31 and 2^32 (where a 32-bit int or unsigned index breaks), and `random` more drawn from
// `seed`, all below n, sorted, without repeats.
inline std::vector<std::size_t> boundary_samples(std::size_t n, std::uint64_t seed,
                                                 std::size_t random = 64) {
  std::vector<std::size_t> s;
  if (n == 0) return s;
  for (const std::size_t edge : {std::size_t{0}, std::size_t{1} << 31, std::size_t{1} << 32, n})
    for (std::size_t d = 0; d < 3; ++d) {
      if (edge + d >= 1 && edge + d - 1 < n) s.push_back(edge + d - 1);  // edge - 1 .. edge + 1
    }
  std::uint64_t x = seed * 0x9E3779B97F4A7C15ull + 1;
  for (std::size_t k = 0; k < random; ++k) {
    x ^= x >> 12, x ^= x << 25, x ^= x >> 27;  // xorshift64*
    s.push_back(static_cast<std::size_t>((x * 0x2545F4914F6CDD1Dull) % n));
  }
  std::sort(s.begin(), s.end());
  s.erase(std::unique(s.begin(), s.end()), s.end());
  return s;
}

// The device elements p[i] for the given indices (one small copy each: for a few hundred samples).
template <class T>
std::vector<T> download_at(const T* p, const std::vector<std::size_t>& indices) {
  std::vector<T> out(indices.size());
  for (std::size_t k = 0; k < indices.size(); ++k)
    CUDALAB_CHECK(cudaMemcpy(&out[k], p + indices[k], sizeof(T), cudaMemcpyDeviceToHost));
  return out;
}

// The first index of `indices` where got and want differ beyond `tol` (exact by default), as an
// assertion result naming the element: "<what>: element 4294967296: got NaN (poison: never
// written), want 1.25; 3 of 80 sampled elements differ".
template <class T>
::testing::AssertionResult samples_match(const std::vector<std::size_t>& indices,
                                         const std::vector<T>& got, const std::vector<T>& want,
                                         Tolerance tol, const std::string& what) {
  std::size_t bad = 0, first = indices.size();
  for (std::size_t k = 0; k < indices.size(); ++k) {
    const double g = static_cast<double>(got[k]), w = static_cast<double>(want[k]);
    if (!(std::abs(g - w) <= tol.abs + tol.rel * std::abs(w))) {
      ++bad;
      if (first == indices.size()) first = k;
    }
  }
  if (bad == 0) return ::testing::AssertionSuccess();
  return ::testing::AssertionFailure()
         << what << ": element " << indices[first] << ": got " << static_cast<double>(got[first])
         << (is_poison(got[first]) ? " (poison: never written)" : "") << ", want "
         << static_cast<double>(want[first]) << "; " << bad << " of " << indices.size()
         << " sampled elements differ (tolerance " << tol.abs << " + " << tol.rel << " |want|)";
}

}  // namespace cudalab::testing

#define CUDALAB_REQUIRE_GPU()                                                      \
  do {                                                                             \
    if (const std::string r_ = ::cudalab::testing::gpu_skip_reason(); !r_.empty()) \
      GTEST_SKIP() << r_;                                                          \
  } while (0)

// Declares a LargeTestLock in the enclosing scope (held to the end of the test): use it once per
// test, as a statement of the test body.
#define CUDALAB_REQUIRE_DEVICE_MEMORY(bytes)                                               \
  const ::cudalab::testing::LargeTestLock cudalab_large_test_lock_;                        \
  do {                                                                                     \
    if (const std::string r_ = ::cudalab::testing::memory_skip_reason(bytes); !r_.empty()) \
      GTEST_SKIP() << r_;                                                                  \
  } while (0)

#define CUDALAB_REQUIRE_ARCH(major, minor)                                                      \
  do {                                                                                          \
    if (const std::string r_ = ::cudalab::testing::arch_skip_reason(major, minor); !r_.empty()) \
      GTEST_SKIP() << r_;                                                                       \
  } while (0)

// EXPECT_MATCHES(compare(got, want, tol, "saxpy (n = 1000)"));
#define EXPECT_MATCHES(result) EXPECT_TRUE(::cudalab::testing::matches(result))
#define ASSERT_MATCHES(result) ASSERT_TRUE(::cudalab::testing::matches(result))
