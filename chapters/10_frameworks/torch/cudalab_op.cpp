// Chapter 10 — the lab's fused bias + GELU as a PyTorch operator: the schema (TORCH_LIBRARY) and
// the CPU kernel. The CUDA kernel is registered by cudalab_op_cuda.cpp (built only where torch has
// CUDA), the backward by autograd_registration.cpp (the Autograd key), the fake (meta) kernels
// from Python (ops.py: torch.library.register_fake, as PyTorch's custom-operator guide does).
//
// The schema is the contract every registration must honour: opcheck's test_schema checks that
// no kernel mutates or aliases what the schema says it does not (these return new tensors).
//
//   cudalab::bias_gelu(x, bias, approximate)              y = gelu(x + bias), x (..., n), bias (n)
//   cudalab::bias_gelu_backward(grad, x, bias, approximate) -> (dx, dbias)
//   cudalab::bias_gelu_planted(x, bias, approximate)      the planted bug: the tanh GELU whatever
//   cudalab::bias_gelu_planted_backward(...)              `approximate` says, forward and backward
//                                                         consistent, so opcheck and gradcheck
//                                                         pass; only a value test catches it
#include "cudalab_op.hpp"

#include <ATen/Dispatch.h>
#include <torch/library.h>

#include <string>
#include <tuple>

#include "ch10/bias_gelu_cpu.hpp"

namespace cudalab::ch10::torch_op {

bool tanh_form(const std::string& approximate) {
  TORCH_CHECK(approximate == "none" || approximate == "tanh",
              "cudalab::bias_gelu: argument 'approximate' must be 'none' or 'tanh', got '",
              approximate, "'");
  return approximate == "tanh";
}

Rows as_rows(const at::Tensor& t, const char* name) {
  TORCH_CHECK(t.dim() >= 1, "cudalab::bias_gelu: argument '", name,
              "' must have at least one dimension");
  const int64_t cols = t.size(-1);
  // A 2-D view whose rows are dense (stride 1 along the last dim) is read in place with its row
  // stride. Anything else (a transpose, a >2-D non-contiguous view) is copied: correct, but a
  // hidden pass over memory that the chapter measures (silent_losses.py, "non-contiguous").
  if (t.dim() == 2 && t.stride(1) == 1 && (t.size(0) <= 1 || t.stride(0) >= cols))
    return {t, t.size(0), cols, t.size(0) <= 1 ? cols : t.stride(0)};
  at::Tensor c = t.contiguous();
  return {c, cols == 0 ? 0 : c.numel() / cols, cols, cols};
}

void check_args(const at::Tensor& x, const at::Tensor& bias, const char* xname) {
  TORCH_CHECK(bias.dim() == 1, "cudalab::bias_gelu: argument 'bias' must be 1-D, got ", bias.dim(),
              " dimensions");
  TORCH_CHECK(x.dim() >= 1 && x.size(-1) == bias.size(0), "cudalab::bias_gelu: argument '", xname,
              "' must end in a dimension of bias's size ", bias.size(0), ", got shape ", x.sizes());
  TORCH_CHECK(x.scalar_type() == bias.scalar_type(), "cudalab::bias_gelu: argument 'bias' has ",
              bias.scalar_type(), ", '", xname, "' has ", x.scalar_type());
  TORCH_CHECK(x.device() == bias.device(), "cudalab::bias_gelu: argument 'bias' is on ",
              bias.device(), ", '", xname, "' on ", x.device());
  TORCH_CHECK(at::isFloatingType(x.scalar_type()),
              "cudalab::bias_gelu: floating-point tensors only, got ", x.scalar_type());
}

namespace {

at::Tensor forward_cpu(const at::Tensor& x, const at::Tensor& bias, bool tanh) {
  check_args(x, bias, "x");
  const Rows r = as_rows(x, "x");
  const at::Tensor b = bias.contiguous();
  at::Tensor y = at::empty(x.sizes(), x.options().memory_format(at::MemoryFormat::Contiguous));
  AT_DISPATCH_FLOATING_TYPES_AND2(at::kHalf, at::kBFloat16, x.scalar_type(), "bias_gelu_cpu", [&] {
    cpu::bias_gelu_forward<scalar_t>(r.t.const_data_ptr<scalar_t>(), r.ld,
                                     b.const_data_ptr<scalar_t>(), y.mutable_data_ptr<scalar_t>(),
                                     r.cols, r.rows, r.cols, tanh);
  });
  return y;
}

std::tuple<at::Tensor, at::Tensor> backward_cpu(const at::Tensor& grad, const at::Tensor& x,
                                                const at::Tensor& bias, bool tanh) {
  check_args(x, bias, "x");
  check_args(grad, bias, "grad");
  TORCH_CHECK(grad.sizes() == x.sizes(), "cudalab::bias_gelu_backward: argument 'grad' has shape ",
              grad.sizes(), ", x ", x.sizes());
  const Rows g = as_rows(grad, "grad"), r = as_rows(x, "x");
  const at::Tensor b = bias.contiguous();
  at::Tensor dx = at::empty(x.sizes(), x.options().memory_format(at::MemoryFormat::Contiguous));
  at::Tensor db = at::empty(bias.sizes(), bias.options());
  AT_DISPATCH_FLOATING_TYPES_AND2(
      at::kHalf, at::kBFloat16, x.scalar_type(), "bias_gelu_bwd_cpu", [&] {
        cpu::bias_gelu_backward<scalar_t>(
            g.t.const_data_ptr<scalar_t>(), g.ld, r.t.const_data_ptr<scalar_t>(), r.ld,
            b.const_data_ptr<scalar_t>(), dx.mutable_data_ptr<scalar_t>(), r.cols,
            db.mutable_data_ptr<scalar_t>(), r.rows, r.cols, tanh);
      });
  return {dx, db};
}

}  // namespace

}  // namespace cudalab::ch10::torch_op

TORCH_LIBRARY(cudalab, m) {
  m.def("bias_gelu(Tensor x, Tensor bias, str approximate='none') -> Tensor");
  m.def(
      "bias_gelu_backward(Tensor grad, Tensor x, Tensor bias, str approximate='none') -> "
      "(Tensor, Tensor)");
  m.def("bias_gelu_planted(Tensor x, Tensor bias, str approximate='none') -> Tensor");
  m.def(
      "bias_gelu_planted_backward(Tensor grad, Tensor x, Tensor bias, str approximate='none') -> "
      "(Tensor, Tensor)");
}

TORCH_LIBRARY_IMPL(cudalab, CPU, m) {
  using namespace cudalab::ch10::torch_op;
  m.impl("bias_gelu", [](const at::Tensor& x, const at::Tensor& b, std::string a) {
    return forward_cpu(x, b, tanh_form(a));
  });
  m.impl("bias_gelu_backward", [](const at::Tensor& g, const at::Tensor& x, const at::Tensor& b,
                                  std::string a) { return backward_cpu(g, x, b, tanh_form(a)); });
  // The planted bug opcheck misses (ops.py, test_op.py's PlantedBug): `approximate` is
  // checked and then ignored, the tanh formula always runs.
  m.impl("bias_gelu_planted", [](const at::Tensor& x, const at::Tensor& b, std::string a) {
    (void)tanh_form(a);
    return forward_cpu(x, b, true);
  });
  m.impl("bias_gelu_planted_backward",
         [](const at::Tensor& g, const at::Tensor& x, const at::Tensor& b, std::string a) {
           (void)tanh_form(a);
           return backward_cpu(g, x, b, true);
         });
}
