// Chapter 10 — the mini autograd (reference/autograd*.cpp, CPU backend) behind a PyTorch operator,
// so that a test can put its gradients beside torch.autograd's on the same weights:
//
//   cudalab::mini_autograd_mlp(x, y, w1, b1, w2, b2) -> [loss, dw1, db1, dw2, db2]
//
// for loss = mse(gelu(x w1 + b1) w2 + b2, y), float32 CPU tensors (w: in x out, as the C++ MLP
// stores them; b: 1-D).
#include <ATen/ATen.h>
#include <torch/library.h>

#include <exception>
#include <vector>

#include "ch10/autograd.hpp"

namespace {

namespace ag = cudalab::ch10::ag;

std::vector<float> values_of(const at::Tensor& t, const char* name) {
  TORCH_CHECK(t.device().is_cpu() && t.scalar_type() == at::kFloat,
              "cudalab::mini_autograd_mlp: argument '", name, "' must be a float32 CPU tensor");
  const at::Tensor c = t.contiguous();
  const float* p = c.const_data_ptr<float>();
  return std::vector<float>(p, p + c.numel());
}

at::Tensor as_tensor(const std::vector<float>& v, at::IntArrayRef shape) {
  // from_blob borrows v's memory: clone before v goes away.
  return at::from_blob(const_cast<float*>(v.data()), {static_cast<int64_t>(v.size())},
                       at::TensorOptions().dtype(at::kFloat))
      .clone()
      .reshape(shape);
}

std::vector<at::Tensor> run_mlp(const at::Tensor& x, const at::Tensor& y, const at::Tensor& w1,
                                const at::Tensor& b1, const at::Tensor& w2, const at::Tensor& b2);

std::vector<at::Tensor> mini_autograd_mlp(const at::Tensor& x, const at::Tensor& y,
                                          const at::Tensor& w1, const at::Tensor& b1,
                                          const at::Tensor& w2, const at::Tensor& b2) {
  TORCH_CHECK(x.dim() == 2 && y.dim() == 2 && w1.dim() == 2 && w2.dim() == 2 && b1.dim() == 1 &&
                  b2.dim() == 1,
              "cudalab::mini_autograd_mlp: x, y, w1, w2 must be 2-D and b1, b2 1-D");
  // Shape errors surface as std::invalid_argument naming the argument (the ops' checks); they
  // are rethrown as c10::Error, the one exception type torch maps to RuntimeError on every
  // version: a std::invalid_argument leaving the operator is left to the exception translator
  // of the torch at hand (the H200's torch 2.11 reported an error there, not a failed
  // assertion, where torch 2.15 CPU gives the RuntimeError).
  try {
    return run_mlp(x, y, w1, b1, w2, b2);
  } catch (const c10::Error&) {
    throw;
  } catch (const std::exception& e) {
    TORCH_CHECK(false, "cudalab::mini_autograd_mlp: ", e.what());
  }
}

std::vector<at::Tensor> run_mlp(const at::Tensor& x, const at::Tensor& y, const at::Tensor& w1,
                                const at::Tensor& b1, const at::Tensor& w2, const at::Tensor& b2) {
  const auto be = ag::cpu_backend();
  auto leaf = [&](const at::Tensor& t, const char* name, bool grad) {
    const std::size_t rows = t.dim() == 1 ? 1 : static_cast<std::size_t>(t.size(0));
    const std::size_t cols = static_cast<std::size_t>(t.size(-1));
    return ag::Tensor::from(*be, rows, cols, values_of(t, name), grad);
  };
  const ag::Tensor tx = leaf(x, "x", false), ty = leaf(y, "y", false);
  const ag::Tensor tw1 = leaf(w1, "w1", true), tb1 = leaf(b1, "b1", true);
  const ag::Tensor tw2 = leaf(w2, "w2", true), tb2 = leaf(b2, "b2", true);
  const ag::Tensor loss =
      ag::mse_loss(ag::add_bias(ag::matmul(ag::bias_gelu(ag::matmul(tx, tw1), tb1), tw2), tb2), ty);
  ag::backward(loss);
  return {as_tensor(loss.values(), {}), as_tensor(tw1.grad(), w1.sizes()),
          as_tensor(tb1.grad(), b1.sizes()), as_tensor(tw2.grad(), w2.sizes()),
          as_tensor(tb2.grad(), b2.sizes())};
}

}  // namespace

TORCH_LIBRARY_FRAGMENT(cudalab, m) {
  m.def(
      "mini_autograd_mlp(Tensor x, Tensor y, Tensor w1, Tensor b1, Tensor w2, Tensor b2) -> "
      "Tensor[]");
}

TORCH_LIBRARY_IMPL(cudalab, CPU, m) {
  m.impl("mini_autograd_mlp", &mini_autograd_mlp);
}
