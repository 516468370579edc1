// Chapter 10 — the CUDA registration of cudalab::bias_gelu: the chapter's kernels
// (reference/bias_gelu.cu, compiled by nvcc without torch's headers) on torch's current stream,
// the backward's workspace from torch's caching allocator (no cudaMalloc in the step).
#include <ATen/cuda/CUDAContext.h>
#include <c10/cuda/CUDAGuard.h>
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <torch/library.h>

#include <string>
#include <tuple>

#include "ch10/bias_gelu.hpp"
#include "cudalab_op.hpp"

namespace cudalab::ch10::torch_op {
namespace {

// torch's element types as the kernels' (same bits: at::Half is IEEE binary16, at::BFloat16 is
// bfloat16).
template <class F>
void dispatch(at::ScalarType t, F&& f) {
  switch (t) {
    case at::kFloat:
      return f(float{});
    case at::kDouble:
      return f(double{});
    case at::kHalf:
      return f(__half{});
    case at::kBFloat16:
      return f(__nv_bfloat16{});
    default:
      TORCH_CHECK(false, "cudalab::bias_gelu (CUDA): float32, float64, float16 or bfloat16, got ",
                  t);
  }
}

template <class T>
const T* ptr(const at::Tensor& t) {
  return reinterpret_cast<const T*>(t.const_data_ptr());
}
template <class T>
T* mptr(at::Tensor& t) {
  return reinterpret_cast<T*>(t.mutable_data_ptr());
}

at::Tensor forward_cuda(const at::Tensor& x, const at::Tensor& bias, bool tanh) {
  check_args(x, bias, "x");
  const c10::cuda::CUDAGuard guard(x.device());
  const Rows r = as_rows(x, "x");
  const at::Tensor b = bias.contiguous();
  at::Tensor y = at::empty(x.sizes(), x.options().memory_format(at::MemoryFormat::Contiguous));
  const cudaStream_t s = at::cuda::getCurrentCUDAStream();
  dispatch(x.scalar_type(), [&](auto tag) {
    using T = decltype(tag);
    bias_gelu_forward<T>(ptr<T>(r.t), r.ld, ptr<T>(b), mptr<T>(y), r.cols, r.rows, r.cols,
                         tanh ? Gelu::kTanh : Gelu::kErf, s);
  });
  return y;
}

std::tuple<at::Tensor, at::Tensor> backward_cuda(const at::Tensor& grad, const at::Tensor& x,
                                                 const at::Tensor& bias, bool tanh) {
  check_args(x, bias, "x");
  check_args(grad, bias, "grad");
  TORCH_CHECK(grad.sizes() == x.sizes(), "cudalab::bias_gelu_backward: argument 'grad' has shape ",
              grad.sizes(), ", x ", x.sizes());
  const c10::cuda::CUDAGuard guard(x.device());
  const Rows g = as_rows(grad, "grad"), r = as_rows(x, "x");
  const at::Tensor b = bias.contiguous();
  at::Tensor dx = at::empty(x.sizes(), x.options().memory_format(at::MemoryFormat::Contiguous));
  at::Tensor db = at::empty(bias.sizes(), bias.options());
  const std::size_t wbytes = bias_gelu_backward_workspace_bytes(r.cols);
  at::Tensor work = at::empty({static_cast<int64_t>(wbytes)}, x.options().dtype(at::kByte));
  const cudaStream_t s = at::cuda::getCurrentCUDAStream();
  dispatch(x.scalar_type(), [&](auto tag) {
    using T = decltype(tag);
    bias_gelu_backward<T>(ptr<T>(g.t), g.ld, ptr<T>(r.t), r.ld, ptr<T>(b), mptr<T>(dx), r.cols,
                          mptr<T>(db), r.rows, r.cols, work.mutable_data_ptr(), wbytes,
                          tanh ? Gelu::kTanh : Gelu::kErf, s);
  });
  return {dx, db};
}

}  // namespace
}  // namespace cudalab::ch10::torch_op

TORCH_LIBRARY_IMPL(cudalab, CUDA, m) {
  using namespace cudalab::ch10::torch_op;
  m.impl("bias_gelu", [](const at::Tensor& x, const at::Tensor& b, std::string a) {
    return forward_cuda(x, b, tanh_form(a));
  });
  m.impl("bias_gelu_backward", [](const at::Tensor& g, const at::Tensor& x, const at::Tensor& b,
                                  std::string a) { return backward_cuda(g, x, b, tanh_form(a)); });
  m.impl("bias_gelu_planted", [](const at::Tensor& x, const at::Tensor& b, std::string a) {
    (void)tanh_form(a);
    return forward_cuda(x, b, true);
  });
  m.impl("bias_gelu_planted_backward",
         [](const at::Tensor& g, const at::Tensor& x, const at::Tensor& b, std::string a) {
           (void)tanh_form(a);
           return backward_cuda(g, x, b, true);
         });
}
