// Starter track — write your code at the TODO marks; the tests of each exercise
// fail until you do. (Generated from chapters/10_frameworks/reference/autograd_ops.cpp by scripts/variants.py.)
// Chapter 10 — the mini autograd's ops: each computes its result on the backend and, when an
// input needs a gradient, records a Node whose closure computes the inputs' gradients from the
// output's (the vector-Jacobian product) and adds them with accumulate_grad.
#include <cmath>
#include <cstdio>
#include <string>
#include <utility>

#include "ch10/autograd.hpp"
#include "cudalab/check.hpp"
#include "cudalab/random.hpp"

namespace cudalab::ch10::ag {
namespace {

// A temporary backend buffer (a gradient on its way to accumulate_grad).
class Scratch {
 public:
  Scratch(Backend& be, std::size_t n) : be_(&be), p_(be.allocate(n)) {}
  ~Scratch() { be_->release(p_); }
  Scratch(const Scratch&) = delete;
  Scratch& operator=(const Scratch&) = delete;
  float* get() const noexcept { return p_; }

 private:
  Backend* be_;
  float* p_;
};

const TensorImpl& impl_of(const Tensor& t, const char* argument) {
  require(t.defined(), argument, "undefined Tensor");
  return *t.impl();
}

Tensor make_result(const char* argument, const Tensor& like, std::size_t rows, std::size_t cols) {
  const TensorImpl& src = impl_of(like, argument);
  auto impl = std::make_shared<TensorImpl>();
  impl->backend = src.backend;
  impl->rows = rows;
  impl->cols = cols;
  Backend* be = src.backend;
  impl->value =
      std::shared_ptr<float>(be->allocate(rows * cols), [be](float* p) { be->release(p); });
  return Tensor(std::move(impl));
}

void same_backend(const Tensor& a, const Tensor& b, const char* argument) {
  require(impl_of(a, "a").backend == impl_of(b, argument).backend, argument,
          "lives on another backend");
}

// Records the node of `out` when recording is on and an input requires a gradient.
void record(Tensor& out, std::string name, std::vector<std::shared_ptr<TensorImpl>> inputs,
            std::function<void(const float*)> apply) {
  if (!grad_enabled()) return;
  bool needs = false;
  for (const auto& in : inputs) needs = needs || in->requires_grad;
  if (!needs) return;
  auto node = std::make_shared<Node>();
  node->name = std::move(name);
  node->inputs = std::move(inputs);
  node->apply = std::move(apply);
  node->output = out.impl();
  out.impl()->grad_fn = std::move(node);
  out.impl()->requires_grad = true;
}

}  // namespace

Tensor matmul(const Tensor& a, const Tensor& b) {
  same_backend(a, b, "b");
  require(a.cols() == b.rows(), "b", "rows must equal a's cols");
  const std::size_t m = a.rows(), k = a.cols(), n = b.cols();
  Tensor out = make_result("a", a, m, n);
  Backend& be = a.backend();
  be.gemm(false, false, m, n, k, a.data(), b.data(), 0.0f, out.mutable_data());
  auto ai = a.impl(), bi = b.impl();
  record(out, "matmul", {ai, bi}, [ai, bi, m, n, k](const float* g) {
    Backend& bk = *ai->backend;
    if (ai->requires_grad) {  // dA = dC B^T  (m x k)
      Scratch da(bk, m * k);
      bk.gemm(false, true, m, k, n, g, bi->value.get(), 0.0f, da.get());
      accumulate_grad(*ai, da.get());
    }
    if (bi->requires_grad) {  // dB = A^T dC  (k x n)
      Scratch db(bk, k * n);
      bk.gemm(true, false, k, n, m, ai->value.get(), g, 0.0f, db.get());
      accumulate_grad(*bi, db.get());
    }
  });
  return out;
}

Tensor add(const Tensor& a, const Tensor& b) {
  same_backend(a, b, "b");
  require(a.rows() == b.rows() && a.cols() == b.cols(), "b", "shape must equal a's");
  Tensor out = make_result("a", a, a.rows(), a.cols());
  a.backend().add(a.data(), b.data(), 1.0f, out.mutable_data(), a.numel());
  auto ai = a.impl(), bi = b.impl();
  record(out, "add", {ai, bi}, [ai, bi](const float* g) {
    // Both inputs receive g itself; when a and b are the same tensor it arrives twice.
    if (ai->requires_grad) accumulate_grad(*ai, g);
    if (bi->requires_grad) accumulate_grad(*bi, g);
  });
  return out;
}

Tensor add_bias(const Tensor& x, const Tensor& bias) {
  same_backend(x, bias, "bias");
  require(bias.rows() == 1 && bias.cols() == x.cols(), "bias", "must be 1 x x.cols()");
  const std::size_t rows = x.rows(), cols = x.cols();
  Tensor out = make_result("x", x, rows, cols);
  x.backend().add_bias(x.data(), bias.data(), out.mutable_data(), rows, cols);
  auto xi = x.impl(), bi = bias.impl();
  record(out, "add_bias", {xi, bi}, [xi, bi, rows, cols](const float* g) {
    Backend& bk = *xi->backend;
    if (xi->requires_grad) accumulate_grad(*xi, g);
    if (bi->requires_grad) {  // dbias = column sums of g
      Scratch db(bk, cols);
      bk.column_sum(g, db.get(), rows, cols);
      accumulate_grad(*bi, db.get());
    }
  });
  return out;
}

Tensor bias_gelu(const Tensor& x, const Tensor& bias) {
  same_backend(x, bias, "bias");
  require(bias.rows() == 1 && bias.cols() == x.cols(), "bias", "must be 1 x x.cols()");
  const std::size_t rows = x.rows(), cols = x.cols();
  Tensor out = make_result("x", x, rows, cols);
  x.backend().bias_gelu(x.data(), bias.data(), out.mutable_data(), rows, cols);
  auto xi = x.impl(), bi = bias.impl();
  // The node keeps x (not z = x + bias): the fused backward recomputes z, as the fused forward
  // never stored it.
  record(out, "bias_gelu", {xi, bi}, [xi, bi, rows, cols](const float* g) {
    Backend& bk = *xi->backend;
    Scratch dx(bk, rows * cols), db(bk, cols);
    bk.bias_gelu_backward(g, xi->value.get(), bi->value.get(), dx.get(), db.get(), rows, cols);
    if (xi->requires_grad) accumulate_grad(*xi, dx.get());
    if (bi->requires_grad) accumulate_grad(*bi, db.get());
  });
  return out;
}

Tensor sum(const Tensor& x) {
  const std::size_t rows = x.rows(), cols = x.cols();
  Tensor out = make_result("x", x, 1, 1);
  Backend& be = x.backend();
  const float s = static_cast<float>(be.sum(x.data(), x.numel()));
  be.upload(out.mutable_data(), &s, 1);
  auto xi = x.impl();
  record(out, "sum", {xi}, [xi, rows, cols](const float* g) {
    Backend& bk = *xi->backend;
    float gh = 0.0f;
    bk.download(&gh, g, 1);
    Scratch ones(bk, rows * cols);
    bk.fill(ones.get(), rows * cols, gh);  // d sum / d x = 1 everywhere, times the upstream g
    accumulate_grad(*xi, ones.get());
  });
  return out;
}

Tensor mse_loss(const Tensor& pred, const Tensor& target) {
  same_backend(pred, target, "target");
  require(pred.rows() == target.rows() && pred.cols() == target.cols(), "target",
          "shape must equal pred's");
  const std::size_t n = pred.numel();
  require(n > 0, "pred", "is empty (the mean of nothing)");
  Backend& be = pred.backend();
  Scratch diff(be, n);
  be.add(pred.data(), target.data(), -1.0f, diff.get(), n);  // pred - target
  // sum of squares via the backend: d . d = gemm of (1 x n) (n x 1)
  Scratch sq(be, 1);
  be.gemm(false, false, 1, 1, n, diff.get(), diff.get(), 0.0f, sq.get());
  Tensor out = make_result("pred", pred, 1, 1);
  const float inv_n = 1.0f / static_cast<float>(n);
  be.fill(out.mutable_data(), 1, 0.0f);
  be.axpy(inv_n, sq.get(), out.mutable_data(), 1);  // out = sq / n
  auto pi = pred.impl(), ti = target.impl();
  record(out, "mse_loss", {pi, ti}, [pi, ti, n, inv_n](const float* g) {
    Backend& bk = *pi->backend;
    float gh = 0.0f;
    bk.download(&gh, g, 1);
    Scratch d(bk, n);  // d loss / d pred = 2 (pred - target) / n, times g
    bk.add(pi->value.get(), ti->value.get(), -1.0f, d.get(), n);
    Scratch grad(bk, n);
    bk.fill(grad.get(), n, 0.0f);
    bk.axpy(2.0f * inv_n * gh, d.get(), grad.get(), n);
    if (pi->requires_grad) accumulate_grad(*pi, grad.get());
    if (ti->requires_grad) {
      Scratch neg(bk, n);
      bk.fill(neg.get(), n, 0.0f);
      bk.axpy(-1.0f, grad.get(), neg.get(), n);
      accumulate_grad(*ti, neg.get());
    }
  });
  return out;
}

Mlp::Mlp(Backend& be, std::size_t in, std::size_t hidden, std::size_t out, unsigned seed) {
  require(in > 0 && hidden > 0 && out > 0, "in", "layer sizes must be > 0");
  Rng rng(seed);
  auto init = [&](std::size_t fan_in, std::size_t r, std::size_t c) {
    const float a = 1.0f / std::sqrt(static_cast<float>(fan_in));  // PyTorch's Linear init range
    return Tensor::from(be, r, c, rng.uniform<float>(r * c, -a, a), true);
  };
  w1 = init(in, in, hidden);
  b1 = init(in, 1, hidden);
  w2 = init(hidden, hidden, out);
  b2 = init(hidden, 1, out);
}

Tensor Mlp::forward(const Tensor& x) const {
  return add_bias(matmul(bias_gelu(matmul(x, w1), b1), w2), b2);
}

std::vector<Tensor*> Mlp::parameters() {
  return {&w1, &b1, &w2, &b2};
}

void Mlp::sgd_step(float lr) {
  NoGrad no_grad;
  for (Tensor* p : parameters()) {
    if (p->grad_data()) p->backend().axpy(-lr, p->grad_data(), p->mutable_data(), p->numel());
    p->zero_grad();
  }
}

}  // namespace cudalab::ch10::ag
