// cuDNN status checks and move-only owners of its handle and descriptors (header-only: only
// targets that link cudalab::cudnn include it). A failing call throws cudalab::LibraryError.
#pragma once

#include <cudnn.h>

#include <utility>

#include "cudalab/check.hpp"
#include "cudalab/handle.hpp"

namespace cudalab {

inline void check_cudnn(cudnnStatus_t status, const char* expression, const char* file, int line) {
  if (status != CUDNN_STATUS_SUCCESS)
    throw LibraryError("cuDNN", static_cast<long>(status), cudnnGetErrorString(status), expression,
                       file, line);
}

// A move-only owner of any cuDNN object created by Create(&p) and released by Destroy(p).
template <class T, cudnnStatus_t (*Create)(T*), cudnnStatus_t (*Destroy)(T)>
class CudnnOwner {
 public:
  CudnnOwner() { check_cudnn(Create(p_.out()), "cudnnCreate...(&p)", __FILE__, __LINE__); }

  T get() const noexcept { return p_.get(); }
  operator T() const noexcept { return p_.get(); }  // NOLINT: used like the raw handle

 private:
  UniqueHandle<T, Destroy> p_;  // move-only: the source is left empty
};

using CudnnHandle = CudnnOwner<cudnnHandle_t, cudnnCreate, cudnnDestroy>;
using CudnnTensorDesc =
    CudnnOwner<cudnnTensorDescriptor_t, cudnnCreateTensorDescriptor, cudnnDestroyTensorDescriptor>;
using CudnnFilterDesc =
    CudnnOwner<cudnnFilterDescriptor_t, cudnnCreateFilterDescriptor, cudnnDestroyFilterDescriptor>;
using CudnnConvDesc = CudnnOwner<cudnnConvolutionDescriptor_t, cudnnCreateConvolutionDescriptor,
                                 cudnnDestroyConvolutionDescriptor>;

}  // namespace cudalab

#define CUDALAB_CHECK_CUDNN(expr) ::cudalab::check_cudnn((expr), #expr, __FILE__, __LINE__)
