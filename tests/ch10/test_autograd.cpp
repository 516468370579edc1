// Exercise 10.3 — the mini autograd: accumulation for a tensor used twice, topological order
// (a diamond, a 10,000-op chain), no-grad mode, gradients of a two-layer MLP against an analytic
// double-precision oracle, training to a loss bound; the GPU backend against the CPU one.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "ch10/autograd.hpp"
#include "ch10/bias_gelu_cpu.hpp"
#include "cudalab/random.hpp"
#include "cudalab/testing.hpp"

using namespace cudalab;
namespace ag = cudalab::ch10::ag;
using cudalab::testing::expect_throws_naming;

namespace {

// The MLP's loss and gradients by hand, in double: the oracle of the tape.
struct MlpGrads {
  double loss = 0;
  std::vector<double> w1, b1, w2, b2;
};

MlpGrads mlp_oracle(const std::vector<float>& x, const std::vector<float>& y, std::size_t n,
                    std::size_t in, std::size_t hid, std::size_t out, const std::vector<float>& w1,
                    const std::vector<float>& b1, const std::vector<float>& w2,
                    const std::vector<float>& b2) {
  MlpGrads g;
  g.w1.assign(in * hid, 0), g.b1.assign(hid, 0), g.w2.assign(hid * out, 0), g.b2.assign(out, 0);
  std::vector<double> z(hid), h(hid), p(out), dp(out), dh(hid);
  for (std::size_t s = 0; s < n; ++s) {
    for (std::size_t j = 0; j < hid; ++j) {
      double a = b1[j];
      for (std::size_t i = 0; i < in; ++i) a += double(x[s * in + i]) * w1[i * hid + j];
      z[j] = a;
      h[j] = ch10::cpu::gelu(a, false);
    }
    for (std::size_t k = 0; k < out; ++k) {
      double a = b2[k];
      for (std::size_t j = 0; j < hid; ++j) a += h[j] * w2[j * out + k];
      p[k] = a;
      const double d = a - y[s * out + k];
      g.loss += d * d / double(n * out);
      dp[k] = 2.0 * d / double(n * out);
    }
    for (std::size_t j = 0; j < hid; ++j) {
      double a = 0;
      for (std::size_t k = 0; k < out; ++k) {
        a += dp[k] * w2[j * out + k];
        g.w2[j * out + k] += h[j] * dp[k];
      }
      dh[j] = a * ch10::cpu::gelu_grad(z[j], false);
      g.b1[j] += dh[j];
      for (std::size_t i = 0; i < in; ++i) g.w1[i * hid + j] += double(x[s * in + i]) * dh[j];
    }
    for (std::size_t k = 0; k < out; ++k) g.b2[k] += dp[k];
  }
  return g;
}

void expect_close(const std::vector<float>& got, const std::vector<double>& want, double tol,
                  const std::string& what) {
  ASSERT_EQ(got.size(), want.size()) << what << ": no gradient (or the wrong shape)";
  double scale = 0;
  for (double w : want) scale = std::max(scale, std::fabs(w));
  for (std::size_t i = 0; i < got.size(); ++i)
    ASSERT_LE(std::fabs(got[i] - want[i]), tol * scale + 1e-7)
        << what << "[" << i << "] = " << got[i] << ", want " << want[i];
}

// Synthetic regression: inputs uniform in [-1, 1], targets from a fixed random "teacher" MLP.
struct Data {
  std::size_t n = 256, in = 8, out = 2;
  std::vector<float> x, y;
};

Data make_data(ag::Backend& be) {
  Data d;
  Rng rng(12345);
  d.x = rng.uniform<float>(d.n * d.in, -1.0f, 1.0f);
  ag::Mlp teacher(be, d.in, 16, d.out, 777);
  ag::NoGrad ng;
  d.y = teacher.forward(ag::Tensor::from(be, d.n, d.in, d.x)).values();
  for (auto& v : d.y) v *= 3.0f;  // targets of order 1
  return d;
}

void check_mlp_gradients(ag::Backend& be, double tol) {
  const Data d = make_data(be);
  ag::Mlp m(be, d.in, 32, d.out, 99);
  const ag::Tensor x = ag::Tensor::from(be, d.n, d.in, d.x),
                   y = ag::Tensor::from(be, d.n, d.out, d.y);
  const ag::Tensor loss = ag::mse_loss(m.forward(x), y);
  ag::backward(loss);
  const MlpGrads g = mlp_oracle(d.x, d.y, d.n, d.in, 32, d.out, m.w1.values(), m.b1.values(),
                                m.w2.values(), m.b2.values());
  EXPECT_NEAR(loss.values()[0], g.loss, 1e-5 * g.loss) << be.name();
  expect_close(m.w1.grad(), g.w1, tol, std::string(be.name()) + " dW1");
  expect_close(m.b1.grad(), g.b1, tol, std::string(be.name()) + " db1");
  expect_close(m.w2.grad(), g.w2, tol, std::string(be.name()) + " dW2");
  expect_close(m.b2.grad(), g.b2, tol, std::string(be.name()) + " db2");
}

// Trains for `steps` of SGD; returns (first loss, last loss).
std::pair<double, double> train(ag::Backend& be, int steps) {
  const Data d = make_data(be);
  ag::Mlp m(be, d.in, 32, d.out, 99);
  const ag::Tensor x = ag::Tensor::from(be, d.n, d.in, d.x),
                   y = ag::Tensor::from(be, d.n, d.out, d.y);
  double first = 0, last = 0;
  for (int s = 0; s < steps; ++s) {
    const ag::Tensor loss = ag::mse_loss(m.forward(x), y);
    ag::backward(loss);
    m.sgd_step(0.2f);
    last = loss.values()[0];
    if (s == 0) first = last;
  }
  return {first, last};
}

}  // namespace

TEST(AutogradCpu, TensorUsedTwiceAccumulates) {
  auto be = ag::cpu_backend();
  const ag::Tensor x = ag::Tensor::from(*be, 2, 3, {1, -2, 3, 0.5f, 7, -1}, true);
  ag::backward(ag::sum(ag::add(x, x)));  // d/dx sum(x + x) = 2
  EXPECT_EQ(x.grad(), std::vector<float>(6, 2.0f));
}

TEST(AutogradCpu, DiamondMatchesFiniteDifferences) {
  // y = gelu(x + b) is used twice: loss = sum(y + y W). Both paths reach x and b.
  auto be = ag::cpu_backend();
  Rng rng;
  const std::vector<float> xv = rng.uniform<float>(12, -1.5f, 1.5f);
  const std::vector<float> bv = rng.uniform<float>(4, -0.5f, 0.5f);
  const std::vector<float> wv = rng.uniform<float>(16, -1.0f, 1.0f);
  auto loss_of = [&](const std::vector<float>& xs, bool grad, ag::Tensor* xt = nullptr) {
    ag::Tensor x = ag::Tensor::from(*be, 3, 4, xs, grad);
    const ag::Tensor b = ag::Tensor::from(*be, 1, 4, bv), w = ag::Tensor::from(*be, 4, 4, wv);
    const ag::Tensor y = ag::bias_gelu(x, b);
    ag::Tensor loss = ag::sum(ag::add(y, ag::matmul(y, w)));
    if (xt) *xt = x;
    return loss;
  };
  ag::Tensor x;
  ag::backward(loss_of(xv, true, &x));
  const std::vector<float> g = x.grad();
  ASSERT_EQ(g.size(), 12u);
  for (std::size_t i = 0; i < 12; ++i) {
    std::vector<float> p = xv, m = xv;
    const float h = 1e-2f;
    p[i] += h, m[i] -= h;
    const double fd =
        (double(loss_of(p, false).values()[0]) - loss_of(m, false).values()[0]) / (2 * h);
    EXPECT_NEAR(g[i], fd, 2e-3 * (1 + std::fabs(fd))) << "dloss/dx[" << i << "]";
  }
}

TEST(AutogradCpu, TopologicalOrderListsEachNodeOnceConsumersFirst) {
  auto be = ag::cpu_backend();
  const ag::Tensor x = ag::Tensor::from(*be, 1, 2, {1, 2}, true);
  const ag::Tensor y = ag::add(x, x);
  const ag::Tensor z = ag::add(y, y);
  const ag::Tensor loss = ag::sum(ag::add(z, y));
  const auto order = ag::topological_order(loss);
  ASSERT_EQ(order.size(), 4u) << "sum, add(z, y), add(y, y), add(x, x): each once";
  std::set<const ag::Node*> distinct;
  for (const auto& n : order) distinct.insert(n.get());
  EXPECT_EQ(distinct.size(), 4u);
  EXPECT_EQ(order.front().get(), loss.grad_fn().get()) << "the loss's node runs first";
  EXPECT_EQ(order.back().get(), y.grad_fn().get()) << "add(x, x) runs last (z and the sum use y)";
  ag::backward(loss);
  EXPECT_EQ(x.grad(), std::vector<float>(2, 6.0f));  // loss = sum(3 y) = sum(6 x)
}

TEST(AutogradCpu, LongChainDoesNotOverflowTheStack) {
  auto be = ag::cpu_backend();
  const ag::Tensor x = ag::Tensor::from(*be, 1, 1, {0.5f}, true);
  ag::Tensor t = x;
  for (int i = 0; i < 10000; ++i) t = ag::add(t, x);
  const ag::Tensor loss = ag::sum(t);
  EXPECT_EQ(ag::topological_order(loss).size(), 10001u);
  ag::backward(loss);
  EXPECT_EQ(x.grad(), std::vector<float>{10001.0f});
}

TEST(AutogradCpu, GradientsAccumulateAcrossBackwardCallsUntilZeroed) {
  auto be = ag::cpu_backend();
  const ag::Tensor x = ag::Tensor::from(*be, 1, 3, {1, 2, 3}, true);
  ag::backward(ag::sum(x));
  ag::backward(ag::sum(x));
  EXPECT_EQ(x.grad(), std::vector<float>(3, 2.0f));
  ag::Tensor xm = x;
  xm.zero_grad();
  EXPECT_TRUE(x.grad().empty());
}

TEST(AutogradCpu, NoGradRecordsNothing) {
  auto be = ag::cpu_backend();
  const ag::Tensor x = ag::Tensor::from(*be, 2, 2, {1, 2, 3, 4}, true);
  {
    ag::NoGrad ng;
    EXPECT_FALSE(ag::grad_enabled());
    const ag::Tensor y = ag::sum(ag::add(x, x));
    EXPECT_FALSE(y.requires_grad());
    EXPECT_EQ(y.grad_fn(), nullptr);
    EXPECT_TRUE(ag::topological_order(y).empty());
    expect_throws_naming([&] { ag::backward(y); }, "loss");
  }
  EXPECT_TRUE(ag::grad_enabled());
  EXPECT_TRUE(ag::sum(x).requires_grad());
  // Inputs that need no gradient give results that need none, recording on or off.
  const ag::Tensor c = ag::Tensor::from(*be, 2, 2, {1, 1, 1, 1});
  EXPECT_FALSE(ag::add(c, c).requires_grad());
}

TEST(AutogradCpu, RefusesBadShapes) {
  auto be = ag::cpu_backend();
  const ag::Tensor a = ag::Tensor::from(*be, 2, 3, std::vector<float>(6, 1.0f), true);
  const ag::Tensor b = ag::Tensor::from(*be, 2, 3, std::vector<float>(6, 1.0f));
  expect_throws_naming([&] { ag::matmul(a, b); }, "b");
  expect_throws_naming([&] { ag::backward(ag::add(a, b)); }, "loss");
  expect_throws_naming([&] { ag::Tensor::from(*be, 2, 2, {1, 2, 3}); }, "values");
  expect_throws_naming([&] { ag::bias_gelu(a, b); }, "bias");
}

TEST(AutogradCpu, MlpGradientsMatchTheAnalyticOracle) {
  auto be = ag::cpu_backend();
  check_mlp_gradients(*be, 1e-5);
}

TEST(AutogradCpu, MlpTrainsToTheLossBound) {
  auto be = ag::cpu_backend();
  const auto [first, last] = train(*be, 300);
  // The teacher is representable by the student: SGD gets the loss far below its start.
  EXPECT_LT(last, 0.05 * first) << "first loss " << first << ", after 300 steps " << last;
}

TEST(AutogradGpu, MlpGradientsMatchTheAnalyticOracle) {
  CUDALAB_REQUIRE_GPU();
  auto be = ag::gpu_backend();
  check_mlp_gradients(*be, 1e-4);  // fp32 sums on the GPU (the CPU backend sums in double)
}

TEST(AutogradGpu, MlpTrainsLikeTheCpuBackend) {
  CUDALAB_REQUIRE_GPU();
  auto gpu = ag::gpu_backend();
  auto cpu = ag::cpu_backend();
  const auto [gf, gl] = train(*gpu, 300);
  const auto [cf, cl] = train(*cpu, 300);
  EXPECT_NEAR(gf, cf, 1e-5 * cf);
  EXPECT_LT(gl, 0.05 * gf) << "first loss " << gf << ", after 300 steps " << gl;
  EXPECT_NEAR(gl, cl, 0.05 * cl) << "the GPU's training curve left the CPU's";
}

TEST(AutogradGpu, TensorUsedTwiceAccumulates) {
  CUDALAB_REQUIRE_GPU();
  auto be = ag::gpu_backend();
  const ag::Tensor x = ag::Tensor::from(*be, 33, 65, std::vector<float>(33 * 65, 1.5f), true);
  ag::backward(ag::sum(ag::add(x, x)));
  EXPECT_EQ(x.grad(), std::vector<float>(33 * 65, 2.0f));
}
