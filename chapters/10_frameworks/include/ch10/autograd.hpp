// Chapter 10 — a mini autograd in C++: what torch.autograd does, small enough to read.
//
// A Tensor is a float matrix (rows x cols, row-major, dense) living on a Backend (the CPU, or
// the GPU through the lab's kernels). Every op on tensors that require a gradient records a Node
// on the tape: its inputs and a closure that, given the gradient of its output, adds the
// gradients of its inputs. backward(loss) orders the nodes reachable from the loss topologically
// (each node after every node that uses its output) and runs the closures in that order, each
// exactly once; a tensor used twice receives the sum of both gradients (accumulation). Inside a
// NoGrad scope ops record nothing (inference, the optimizer's update).
//
//   auto be = ag::cpu_backend();                       // or ag::gpu_backend()
//   ag::Tensor w = ag::Tensor::from(*be, 4, 3, values, /*requires_grad=*/true);
//   ag::Tensor loss = ag::mse_loss(ag::matmul(x, w), target);
//   ag::backward(loss);                                // w.grad() now holds dloss/dw
#pragma once

#include <cstddef>
#include <functional>
#include <memory>
#include <string>
#include <vector>

namespace cudalab::ch10::ag {

// Raw float math on buffers the backend owns. Row-major matrices; sizes in elements.
class Backend {
 public:
  virtual ~Backend() = default;
  virtual const char* name() const = 0;
  virtual float* allocate(std::size_t n) = 0;  // uninitialized; n = 0 gives nullptr
  virtual void release(float* p) noexcept = 0;
  virtual void upload(float* dst, const float* host, std::size_t n) = 0;
  virtual void download(float* host, const float* src, std::size_t n) = 0;
  virtual void fill(float* p, std::size_t n, float value) = 0;
  // C (m x n) = op(A) op(B) + beta C, op(A) m x k (A stored k x m when ta), op(B) k x n.
  virtual void gemm(bool ta, bool tb, std::size_t m, std::size_t n, std::size_t k, const float* a,
                    const float* b, float beta, float* c) = 0;
  // y = x + bias (bias: one row of cols), y = gelu(x + bias), and their gradients.
  virtual void add_bias(const float* x, const float* bias, float* y, std::size_t rows,
                        std::size_t cols) = 0;
  virtual void bias_gelu(const float* x, const float* bias, float* y, std::size_t rows,
                         std::size_t cols) = 0;
  // dx = dy gelu'(x + bias); dbias = the column sums of dx (both written, not accumulated).
  virtual void bias_gelu_backward(const float* dy, const float* x, const float* bias, float* dx,
                                  float* dbias, std::size_t rows, std::size_t cols) = 0;
  // out[c] = sum over rows of x[r, c] (written).
  virtual void column_sum(const float* x, float* out, std::size_t rows, std::size_t cols) = 0;
  virtual void axpy(float alpha, const float* x, float* y, std::size_t n) = 0;  // y += alpha x
  // out = a + alpha b (elementwise)
  virtual void add(const float* a, const float* b, float alpha, float* out, std::size_t n) = 0;
  virtual double sum(const float* x, std::size_t n) = 0;  // waits for the result
  virtual void synchronize() = 0;
};

std::unique_ptr<Backend> cpu_backend();
// Throws std::runtime_error with the reason when no GPU is usable.
std::unique_ptr<Backend> gpu_backend();

struct TensorImpl;
struct Node;

class Tensor {
 public:
  Tensor() = default;
  // A rows x cols tensor holding `values` (rows * cols of them).
  static Tensor from(Backend& be, std::size_t rows, std::size_t cols,
                     const std::vector<float>& values, bool requires_grad = false);
  static Tensor full(Backend& be, std::size_t rows, std::size_t cols, float value,
                     bool requires_grad = false);

  bool defined() const noexcept { return impl_ != nullptr; }
  std::size_t rows() const;
  std::size_t cols() const;
  std::size_t numel() const { return rows() * cols(); }
  bool requires_grad() const;
  Backend& backend() const;
  const float* data() const;  // backend memory
  float* mutable_data();      // for in-place updates under NoGrad (the optimizer)
  std::vector<float> values() const;
  // The accumulated gradient (same shape), or an empty vector when none was computed.
  std::vector<float> grad() const;
  const float* grad_data() const;  // nullptr when none
  void zero_grad();
  // The node that produced this tensor (nullptr for a leaf or an untracked result).
  const std::shared_ptr<Node>& grad_fn() const;

  // For the ops (autograd_ops.cpp) and the tape.
  explicit Tensor(std::shared_ptr<TensorImpl> impl) : impl_(std::move(impl)) {}
  const std::shared_ptr<TensorImpl>& impl() const noexcept { return impl_; }

 private:
  std::shared_ptr<TensorImpl> impl_;
};

struct TensorImpl {
  Backend* backend = nullptr;
  std::size_t rows = 0, cols = 0;
  std::shared_ptr<float> value;  // released through the backend
  std::shared_ptr<float> grad;   // allocated (zeroed) by the first gradient that arrives
  bool requires_grad = false;
  std::shared_ptr<Node> grad_fn;
};

// One recorded op: its inputs and how to turn the gradient of its output into theirs.
struct Node {
  std::string name;
  std::vector<std::shared_ptr<TensorImpl>> inputs;
  // Called once by backward with the gradient of the node's output (the output's shape); adds
  // each input's gradient with accumulate_grad.
  std::function<void(const float* grad_out)> apply;
  std::weak_ptr<TensorImpl> output;
};

// Adds g (the tensor's shape) to t's gradient, allocating it (zeroed) on first use.
void accumulate_grad(TensorImpl& t, const float* g);

// Gradient recording is on unless a NoGrad is alive on this thread.
bool grad_enabled();
class NoGrad {
 public:
  NoGrad();
  ~NoGrad();
  NoGrad(const NoGrad&) = delete;
  NoGrad& operator=(const NoGrad&) = delete;

 private:
  bool previous_;
};

// The nodes reachable from t's grad_fn in the order backward runs them (each after every node
// that consumes its output); empty for a leaf.
std::vector<std::shared_ptr<Node>> topological_order(const Tensor& t);
// loss must be 1 x 1. Seeds d loss / d loss = 1, then runs every node once in topological order.
// Leaves that require a gradient accumulate into grad() (call zero_grad between steps).
void backward(const Tensor& loss);

// The ops. Results require a gradient when an input does (and grad_enabled()).
Tensor matmul(const Tensor& a, const Tensor& b);            // (m x k) (k x n)
Tensor add(const Tensor& a, const Tensor& b);               // same shapes
Tensor add_bias(const Tensor& x, const Tensor& bias);       // bias: 1 x cols
Tensor bias_gelu(const Tensor& x, const Tensor& bias);      // gelu(x + bias), fused
Tensor sum(const Tensor& x);                                // 1 x 1
Tensor mse_loss(const Tensor& pred, const Tensor& target);  // mean (pred - target)^2, 1 x 1

// A two-layer MLP, out = (gelu(x W1 + b1)) W2 + b2, and plain SGD.
struct Mlp {
  Tensor w1, b1, w2, b2;
  Mlp(Backend& be, std::size_t in, std::size_t hidden, std::size_t out, unsigned seed);
  Tensor forward(const Tensor& x) const;
  std::vector<Tensor*> parameters();
  void sgd_step(float lr);  // p -= lr grad(p) under NoGrad, then zero_grad
};

}  // namespace cudalab::ch10::ag
