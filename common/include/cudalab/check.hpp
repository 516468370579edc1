// Error checks that throw: every CUDA call and every launch is checked, and a failure carries the
// expression, file:line, the error's name and string, and a hint a student can act on.
// Code throws; main() decides (no exit() anywhere in the library).
#pragma once

#include <cuda_runtime_api.h>

#include <cstddef>
#include <stdexcept>
#include <string>
#include <string_view>

namespace cudalab {

// A failed CUDA runtime call. what() reads, for example:
//   CUDA error cudaErrorInvalidConfiguration (invalid configuration argument)
//     in cudaGetLastError() at vector_add.cu:42
//     hint: a block has at most 1024 threads, and no grid or block dimension may be 0 ...
class CudaError : public std::runtime_error {
 public:
  CudaError(cudaError_t code, std::string_view expression, std::string_view file, int line);
  cudaError_t code() const noexcept { return code_; }
  const std::string& expression() const noexcept { return expression_; }
  const std::string& file() const noexcept { return file_; }
  int line() const noexcept { return line_; }

 private:
  cudaError_t code_;
  std::string expression_;
  std::string file_;
  int line_;
};

// A library status that is not cudaError_t (cuBLAS, cuDNN, NCCL, NVML): same shape of message.
class LibraryError : public std::runtime_error {
 public:
  LibraryError(std::string_view library, long status, std::string_view status_name,
               std::string_view expression, std::string_view file, int line);
  long status() const noexcept { return status_; }

 private:
  long status_;
};

// A starter-track function the learner has not written yet.
class NotImplemented : public std::logic_error {
 public:
  explicit NotImplemented(std::string_view what);
};

// A short, actionable hint for the errors beginners meet most (empty when none applies).
std::string_view error_hint(cudaError_t code) noexcept;

void check(cudaError_t code, const char* expression, const char* file, int line);

// After a launch: configuration errors are reported by cudaGetLastError() at once; faults inside
// the kernel only at the next synchronizing call. With CUDALAB_SYNC_LAUNCHES (debug preset) we
// also synchronize, so a fault is reported at the launch that caused it.
void check_launch(const char* file, int line);
// The same check that never synchronizes, whatever the preset: for launches that may be captured
// into a CUDA graph (a synchronize during capture is illegal and breaks the capture) or that queue
// behind a stream held on purpose (a synchronize would wait forever).
void check_launch_async(const char* file, int line);

// Arguments: throw std::invalid_argument naming the argument and saying why.
[[noreturn]] void throw_invalid_argument(std::string_view argument, std::string_view why);

inline void require(bool condition, std::string_view argument, std::string_view why) {
  if (!condition) throw_invalid_argument(argument, why);
}

// A pointer a kernel will dereference for `count` elements: not null when count > 0, and not
// plain host memory (a host pointer in a kernel is an illegal address, or worse, a silent read).
void require_device_pointer(const void* p, std::size_t count, std::string_view argument);

}  // namespace cudalab

#define CUDALAB_CHECK(expr) ::cudalab::check((expr), #expr, __FILE__, __LINE__)
#define CUDALAB_CHECK_LAUNCH() ::cudalab::check_launch(__FILE__, __LINE__)
#define CUDALAB_CHECK_LAUNCH_ASYNC() ::cudalab::check_launch_async(__FILE__, __LINE__)
