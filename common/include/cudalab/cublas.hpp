// cuBLAS status checks and a move-only handle (header-only: only targets that link CUDA::cublas
// include it). A failing call throws cudalab::LibraryError carrying the status name, the
// expression and file:line, like CUDALAB_CHECK does for the runtime.
#pragma once

#include <cublas_v2.h>

#include <utility>

#include "cudalab/check.hpp"
#include "cudalab/handle.hpp"

namespace cudalab {

inline void check_cublas(cublasStatus_t status, const char* expression, const char* file,
                         int line) {
  if (status != CUBLAS_STATUS_SUCCESS)
    throw LibraryError("cuBLAS", static_cast<long>(status), cublasGetStatusName(status), expression,
                       file, line);
}

// One cuBLAS context (created once, reused: cublasCreate costs milliseconds and allocates).
// The math mode is explicit: CUBLAS_DEFAULT_MATH never uses TF32 for SGEMM (only
// CUBLAS_TF32_TENSOR_OP_MATH does), so an SGEMM compared with ours runs on the FP32 CUDA cores.
class CublasHandle {
 public:
  explicit CublasHandle(cublasMath_t mode = CUBLAS_DEFAULT_MATH) {
    check_cublas(cublasCreate(h_.out()), "cublasCreate(&h)", __FILE__, __LINE__);
    check_cublas(cublasSetMathMode(h_.get(), mode), "cublasSetMathMode(h, mode)", __FILE__,
                 __LINE__);
  }

  cublasHandle_t get() const noexcept { return h_.get(); }
  operator cublasHandle_t() const noexcept { return h_.get(); }  // NOLINT: used like the raw handle

 private:
  UniqueHandle<cublasHandle_t, cublasDestroy> h_;  // move-only: the source is left empty
};

}  // namespace cudalab

#define CUDALAB_CHECK_CUBLAS(expr) ::cudalab::check_cublas((expr), #expr, __FILE__, __LINE__)
