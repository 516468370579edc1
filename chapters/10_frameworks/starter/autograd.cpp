// Starter track — write your code at the TODO marks; the tests of each exercise
// fail until you do. (Generated from chapters/10_frameworks/reference/autograd.cpp by scripts/variants.py.)
// Exercise 10.3 — the tape's backward pass: topological order and gradient accumulation.
//
// The graph is built while the forward runs (define-by-run, as in PyTorch): each op's result
// points to its Node (grad_fn), each Node to its inputs. backward must run a node only once every
// gradient of its output has arrived: after all the nodes that consume it. A reverse post-order
// of a depth-first walk from the loss gives exactly that order (Kahn's algorithm on dependency
// counts, what torch.autograd's engine does, gives another valid one). Running a node as soon as
// one gradient arrives — a recursive "backward of my inputs" — is the classic bug: a tensor used
// twice gets its node run twice, or with half of its gradient.
#include "ch10/autograd.hpp"

#include <algorithm>
#include <stdexcept>
#include <unordered_set>
#include <utility>

#include "cudalab/check.hpp"

namespace cudalab::ch10::ag {
namespace {

thread_local bool g_grad_enabled = true;

std::shared_ptr<float> make_buffer(Backend& be, std::size_t n) {
  Backend* b = &be;
  return std::shared_ptr<float>(be.allocate(n), [b](float* p) { b->release(p); });
}

const TensorImpl& checked(const std::shared_ptr<TensorImpl>& impl) {
  if (!impl) throw std::invalid_argument("'tensor': undefined Tensor (default-constructed)");
  return *impl;
}

}  // namespace

bool grad_enabled() {
  return g_grad_enabled;
}
NoGrad::NoGrad() : previous_(g_grad_enabled) {
  g_grad_enabled = false;
}
NoGrad::~NoGrad() {
  g_grad_enabled = previous_;
}

Tensor Tensor::from(Backend& be, std::size_t rows, std::size_t cols,
                    const std::vector<float>& values, bool requires_grad) {
  require(cols == 0 || rows <= values.max_size() / cols, "rows", "rows x cols overflows");
  require(values.size() == rows * cols, "values", "must hold rows x cols elements");
  auto impl = std::make_shared<TensorImpl>();
  impl->backend = &be;
  impl->rows = rows;
  impl->cols = cols;
  impl->value = make_buffer(be, rows * cols);
  if (!values.empty()) be.upload(impl->value.get(), values.data(), values.size());
  impl->requires_grad = requires_grad;
  return Tensor(std::move(impl));
}

Tensor Tensor::full(Backend& be, std::size_t rows, std::size_t cols, float value,
                    bool requires_grad) {
  return from(be, rows, cols, std::vector<float>(rows * cols, value), requires_grad);
}

std::size_t Tensor::rows() const {
  return checked(impl_).rows;
}
std::size_t Tensor::cols() const {
  return checked(impl_).cols;
}
bool Tensor::requires_grad() const {
  return checked(impl_).requires_grad;
}
Backend& Tensor::backend() const {
  return *checked(impl_).backend;
}
const float* Tensor::data() const {
  return checked(impl_).value.get();
}
float* Tensor::mutable_data() {
  return checked(impl_).value.get();
}
const std::shared_ptr<Node>& Tensor::grad_fn() const {
  return checked(impl_).grad_fn;
}
const float* Tensor::grad_data() const {
  return checked(impl_).grad.get();
}

std::vector<float> Tensor::values() const {
  std::vector<float> out(numel());
  if (!out.empty()) backend().download(out.data(), data(), out.size());
  return out;
}

std::vector<float> Tensor::grad() const {
  if (!grad_data()) return {};
  std::vector<float> out(numel());
  if (!out.empty()) backend().download(out.data(), grad_data(), out.size());
  return out;
}

void Tensor::zero_grad() {
  impl_->grad.reset();
}

void accumulate_grad(TensorImpl& t, const float* g) {
  const std::size_t n = t.rows * t.cols;
  const bool first = !t.grad;
  if (first) {
    t.grad = make_buffer(*t.backend, n);
    t.backend->fill(t.grad.get(), n, 0.0f);
  }
  // Writing the arriving gradient instead of adding it: a tensor used twice (x + x, a weight
  // shared by two layers, a residual connection) keeps only the last contribution. Nothing
  // crashes and the loss still falls, more slowly; AutogradCpu.TensorUsedTwiceAccumulates sees
  // x.grad = 1 where it must be 2.
  t.backend->axpy(1.0f, g, t.grad.get(), n);
}

std::vector<std::shared_ptr<Node>> topological_order(const Tensor& t) {
  std::vector<std::shared_ptr<Node>> order;
  // TODO(10.3): every Node reachable from t.grad_fn() (through node->inputs[i]->grad_fn), each
  //   once, ordered so that a node comes after every node that consumes its output: t's own node
  //   first, the nodes nearest the leaves last.
  //   Constraints: iterative (an explicit stack: a 10,000-op chain must not overflow the call
  //   stack); a node reached twice (a tensor used twice) is listed once.
  //   Goal: the AutogradCpu tests (`scripts/lab check 10.3`, CPU): x + x gives x.grad = 2, the
  //   MLP's gradients equal the double oracle's, a long chain works.
  (void)t;
  throw NotImplemented("ag::topological_order (exercise 10.3)");
  return order;
}

void backward(const Tensor& loss) {
  require(loss.defined(), "loss", "undefined Tensor");
  require(loss.rows() == 1 && loss.cols() == 1, "loss", "must be 1 x 1 (a scalar)");
  require(loss.requires_grad(), "loss", "does not require a gradient (computed under NoGrad?)");
  const auto order = topological_order(loss);
  Backend& be = loss.backend();
  {
    const std::shared_ptr<float> one = make_buffer(be, 1);
    be.fill(one.get(), 1, 1.0f);
    accumulate_grad(*loss.impl(), one.get());  // d loss / d loss
  }
  NoGrad no_grad;  // the backward pass itself records nothing
  for (const auto& node : order) {
    if (!node) continue;
    const auto out = node->output.lock();
    if (!out || !out->grad) continue;  // no gradient reached this node's output
    node->apply(out->grad.get());
    // An intermediate's gradient is dead once its node ran (PyTorch frees it too, unless
    // retain_grad()): only leaves keep theirs. The loss keeps its seed.
    if (out.get() != loss.impl().get()) out->grad.reset();
  }
}

}  // namespace cudalab::ch10::ag
