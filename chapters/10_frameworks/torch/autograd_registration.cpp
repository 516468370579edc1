// Chapter 10 — the backward of cudalab::bias_gelu (and of its planted twin), registered in C++ at
// the Autograd dispatch key: a torch::autograd::Function whose forward calls the operator below
// autograd (the CPU or CUDA kernel, or the fake one while torch.compile traces) and saves x and
// bias, and whose backward calls cudalab::bias_gelu_backward, itself an operator with a fake, so
// AOTAutograd traces the backward too. opcheck's test_autograd_registration checks this
// registration; gradcheck checks its formula.
#include <ATen/core/dispatch/Dispatcher.h>
#include <torch/autograd.h>
#include <torch/library.h>

#include <string>
#include <tuple>

namespace cudalab::ch10::torch_op {
namespace {

using torch::autograd::AutogradContext;
using torch::autograd::variable_list;

// The kernels' C++ signature, which every registration of an operator must share (std::string
// for the schema's str, as the CPU and CUDA kernels take it).
using Forward = at::Tensor(const at::Tensor&, const at::Tensor&, std::string);
using Backward = std::tuple<at::Tensor, at::Tensor>(const at::Tensor&, const at::Tensor&,
                                                    const at::Tensor&, std::string);

template <const char* Name, const char* BackwardName>
struct BiasGeluFunction : torch::autograd::Function<BiasGeluFunction<Name, BackwardName>> {
  static at::Tensor forward(AutogradContext* ctx, const at::Tensor& x, const at::Tensor& bias,
                            const std::string& approximate) {
    static const auto op =
        c10::Dispatcher::singleton().findSchemaOrThrow(Name, "").template typed<Forward>();
    at::AutoDispatchBelowADInplaceOrView below;
    ctx->save_for_backward({x, bias});  // x, not z = x + bias: the backward recomputes z
    ctx->saved_data["approximate"] = approximate;
    return op.call(x, bias, approximate);
  }

  static variable_list backward(AutogradContext* ctx, variable_list grads) {
    static const auto op =
        c10::Dispatcher::singleton().findSchemaOrThrow(BackwardName, "").template typed<Backward>();
    const auto saved = ctx->get_saved_variables();
    const std::string approximate = ctx->saved_data["approximate"].toStringRef();
    auto [dx, dbias] = op.call(grads[0], saved[0], saved[1], approximate);
    return {dx, dbias, at::Tensor()};  // no gradient for the string
  }
};

constexpr char kForward[] = "cudalab::bias_gelu";
constexpr char kBackward[] = "cudalab::bias_gelu_backward";
constexpr char kPlanted[] = "cudalab::bias_gelu_planted";
constexpr char kPlantedBackward[] = "cudalab::bias_gelu_planted_backward";

}  // namespace
}  // namespace cudalab::ch10::torch_op

TORCH_LIBRARY_IMPL(cudalab, Autograd, m) {
  using namespace cudalab::ch10::torch_op;
  m.impl("bias_gelu", [](const at::Tensor& x, const at::Tensor& b, std::string a) {
    return BiasGeluFunction<kForward, kBackward>::apply(x, b, a);
  });
  m.impl("bias_gelu_planted", [](const at::Tensor& x, const at::Tensor& b, std::string a) {
    return BiasGeluFunction<kPlanted, kPlantedBackward>::apply(x, b, a);
  });
}
