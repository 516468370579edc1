#include "cudalab/check.hpp"

#include <fmt/format.h>

#include <filesystem>

namespace cudalab {
namespace {

std::string base_name(std::string_view file) {
  return std::filesystem::path(std::string(file)).filename().string();
}

std::string format_cuda_error(cudaError_t code, std::string_view expression, std::string_view file,
                              int line) {
  std::string msg = fmt::format("CUDA error {} ({})\n  in {} at {}:{}", cudaGetErrorName(code),
                                cudaGetErrorString(code), expression, base_name(file), line);
  if (auto hint = error_hint(code); !hint.empty()) msg += fmt::format("\n  hint: {}", hint);
  return msg;
}

}  // namespace

CudaError::CudaError(cudaError_t code, std::string_view expression, std::string_view file, int line)
    : std::runtime_error(format_cuda_error(code, expression, file, line)),
      code_(code),
      expression_(expression),
      file_(base_name(file)),
      line_(line) {}

LibraryError::LibraryError(std::string_view library, long status, std::string_view status_name,
                           std::string_view expression, std::string_view file, int line)
    : std::runtime_error(fmt::format("{} error {} ({})\n  in {} at {}:{}", library, status_name,
                                     status, expression, base_name(file), line)),
      status_(status) {}

NotImplemented::NotImplemented(std::string_view what)
    : std::logic_error(fmt::format("not implemented yet — {} (starter track: write it, then rerun "
                                   "the exercise's tests)",
                                   what)) {}

std::string_view error_hint(cudaError_t code) noexcept {
  switch (code) {
    case cudaErrorInvalidConfiguration:
      return "a block has at most 1024 threads (x, y <= 1024, z <= 64), grid.y/z at most 65535, "
             "and "
             "no dimension may be 0 (n = 0 must not launch); check the block and grid you passed";
    case cudaErrorNoKernelImageForDevice:
      return "the binary holds no machine code (SASS) for this GPU and no PTX it could JIT: "
             "rebuild "
             "with CMAKE_CUDA_ARCHITECTURES=native, or add this GPU's sm_XY to the list";
    case cudaErrorIllegalAddress:
      return "a kernel read or wrote outside its allocations (missing bounds check? host pointer? "
             "32-bit index overflow?). The context is now unusable: every later call fails with "
             "this error. Run the program under compute-sanitizer to find the faulting access";
    case cudaErrorLaunchFailure:
    case cudaErrorMisalignedAddress:
      return "a kernel faulted; the context is unusable. Run under compute-sanitizer";
    case cudaErrorInsufficientDriver:
    case cudaErrorNoDevice:
      return "no usable GPU or driver on this machine (GPU tests skip here; run them on a GPU)";
    case cudaErrorMemoryAllocation:
      return "the device is out of memory: free buffers you no longer need or use a smaller size";
    case cudaErrorInvalidDevicePointer:
    case cudaErrorInvalidValue:
      return "an argument is invalid: a host pointer where a device pointer is expected, a size "
             "larger than the allocation, a null pointer — or, right after a launch, a block of "
             "more "
             "than 1024 threads or of 0 threads (CUDA 13 reports those as invalid value)";
    case cudaErrorLaunchOutOfResources:
      return "too many registers or too much shared memory per block for this block size: use "
             "fewer threads per block or __launch_bounds__";
    default:
      return {};
  }
}

void check(cudaError_t code, const char* expression, const char* file, int line) {
  if (code != cudaSuccess) {
    // Clear a non-sticky error so the next, unrelated check does not report it again.
    (void)cudaGetLastError();
    throw CudaError(code, expression, file, line);
  }
}

void check_launch_async(const char* file, int line) {
  check(cudaGetLastError(), "kernel launch (cudaGetLastError)", file, line);
}

void check_launch(const char* file, int line) {
  check_launch_async(file, line);
#if defined(CUDALAB_SYNC_LAUNCHES)
  check(cudaDeviceSynchronize(), "kernel execution (cudaDeviceSynchronize, CUDALAB_SYNC_LAUNCHES)",
        file, line);
#endif
}

void throw_invalid_argument(std::string_view argument, std::string_view why) {
  throw std::invalid_argument(fmt::format("invalid argument '{}': {}", argument, why));
}

void require_device_pointer(const void* p, std::size_t count, std::string_view argument) {
  if (count == 0) return;
  if (p == nullptr)
    throw_invalid_argument(argument,
                           fmt::format("null pointer with {} elements to process", count));
  cudaPointerAttributes attr{};
  if (cudaPointerGetAttributes(&attr, p) != cudaSuccess) {
    (void)cudaGetLastError();  // no driver, or an unknown pointer: let the launch report it
    return;
  }
  if (attr.type == cudaMemoryTypeUnregistered)
    throw_invalid_argument(argument,
                           "a plain host pointer; kernels need device memory (cudaMalloc, "
                           "DeviceBuffer) or pinned/managed memory");
}

}  // namespace cudalab
