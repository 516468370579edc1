// Chapter 10: the mini autograd's CPU backend (plain loops; the reference the GPU backend is
// tested against, and the one the CPU tests train with).
#include <cstring>
#include <memory>
#include <new>

#include "ch10/autograd.hpp"
#include "ch10/bias_gelu_cpu.hpp"

namespace cudalab::ch10::ag {
namespace {

class CpuBackend final : public Backend {
 public:
  const char* name() const override { return "cpu"; }
  float* allocate(std::size_t n) override { return n == 0 ? nullptr : new float[n]; }
  void release(float* p) noexcept override { delete[] p; }
  void upload(float* dst, const float* host, std::size_t n) override {
    if (n) std::memcpy(dst, host, n * sizeof(float));
  }
  void download(float* host, const float* src, std::size_t n) override {
    if (n) std::memcpy(host, src, n * sizeof(float));
  }
  void fill(float* p, std::size_t n, float v) override {
    for (std::size_t i = 0; i < n; ++i) p[i] = v;
  }
  void gemm(bool ta, bool tb, std::size_t m, std::size_t n, std::size_t k, const float* a,
            const float* b, float beta, float* c) override {
    for (std::size_t i = 0; i < m; ++i)
      for (std::size_t j = 0; j < n; ++j) {
        double s = 0.0;  // a double sum: the CPU side is the accurate one
        for (std::size_t p = 0; p < k; ++p) {
          const float av = ta ? a[p * m + i] : a[i * k + p];
          const float bv = tb ? b[j * k + p] : b[p * n + j];
          s += static_cast<double>(av) * bv;
        }
        c[i * n + j] = static_cast<float>(s + (beta == 0.0f ? 0.0 : beta * c[i * n + j]));
      }
  }
  void add_bias(const float* x, const float* bias, float* y, std::size_t rows,
                std::size_t cols) override {
    for (std::size_t r = 0; r < rows; ++r)
      for (std::size_t c = 0; c < cols; ++c) y[r * cols + c] = x[r * cols + c] + bias[c];
  }
  void bias_gelu(const float* x, const float* bias, float* y, std::size_t rows,
                 std::size_t cols) override {
    cpu::bias_gelu_forward(x, cols, bias, y, cols, rows, cols, false);
  }
  void bias_gelu_backward(const float* dy, const float* x, const float* bias, float* dx,
                          float* dbias, std::size_t rows, std::size_t cols) override {
    cpu::bias_gelu_backward(dy, cols, x, cols, bias, dx, cols, dbias, rows, cols, false);
  }
  void column_sum(const float* x, float* out, std::size_t rows, std::size_t cols) override {
    for (std::size_t c = 0; c < cols; ++c) {
      double s = 0.0;
      for (std::size_t r = 0; r < rows; ++r) s += x[r * cols + c];
      out[c] = static_cast<float>(s);
    }
  }
  void axpy(float alpha, const float* x, float* y, std::size_t n) override {
    for (std::size_t i = 0; i < n; ++i) y[i] += alpha * x[i];
  }
  void add(const float* a, const float* b, float alpha, float* out, std::size_t n) override {
    for (std::size_t i = 0; i < n; ++i) out[i] = a[i] + alpha * b[i];
  }
  double sum(const float* x, std::size_t n) override {
    double s = 0.0;
    for (std::size_t i = 0; i < n; ++i) s += x[i];
    return s;
  }
  void synchronize() override {}
};

}  // namespace

std::unique_ptr<Backend> cpu_backend() {
  return std::make_unique<CpuBackend>();
}

}  // namespace cudalab::ch10::ag
