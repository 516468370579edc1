// The DDP lesson's data and its CPU oracle: the synthetic data set and initial parameters every
// run starts from (ddp_data, used by ddp_train too), and the same training in double on the whole
// batch (ddp_train_cpu), which the GPU run of one rank must follow.
#include <algorithm>
#include <cmath>
#include <cstddef>
#include <vector>

#include "ch08/ddp.hpp"
#include "cudalab/check.hpp"

namespace cudalab::ch08 {
namespace {

// A fixed hash to [-1, 1): the same data on every run and every machine.
float hash_unit(unsigned a, unsigned b, unsigned seed) {
  unsigned v = a * 2654435761u ^ (b + 0x9e3779b9u + (seed << 6) + (seed >> 2));
  v ^= v >> 16;
  v *= 0x85ebca6bu;
  v ^= v >> 13;
  v *= 0xc2b2ae35u;
  v ^= v >> 16;
  return static_cast<float>(v) / 4294967296.0f * 2.0f - 1.0f;
}

}  // namespace

void check_ddp_config(const DdpConfig& c) {
  require(c.inputs >= 1 && c.hidden >= 1, "config", "inputs and hidden must be >= 1");
  require(c.batch >= 1, "config", "batch must be >= 1");
  require(c.steps >= 0, "config", "steps must be >= 0");
  require(std::isfinite(c.lr), "config", "lr must be finite");
}

DdpData ddp_data(const DdpConfig& c) {
  check_ddp_config(c);
  const int in = c.inputs, hid = c.hidden;
  const std::size_t params = std::size_t(in) * hid + hid + hid + 1, layer2_at = params - hid - 1;
  DdpData d;
  d.x.resize(std::size_t(c.batch) * in);
  d.t.resize(c.batch);
  d.p.resize(params);
  for (int b = 0; b < c.batch; ++b) {
    float target = 0.0f;
    for (int i = 0; i < in; ++i) {
      d.x[std::size_t(b) * in + i] = hash_unit(b, i, c.seed);
      target += (i % 2 ? 0.5f : -0.25f) * d.x[std::size_t(b) * in + i];
    }
    d.t[b] = std::tanh(target);
  }
  const float scale1 = 1.0f / std::sqrt(static_cast<float>(in)),
              scale2 = 1.0f / std::sqrt(static_cast<float>(hid));
  for (std::size_t k = 0; k < params; ++k)
    d.p[k] = hash_unit(static_cast<unsigned>(k), 7777u, c.seed) * (k < layer2_at ? scale1 : scale2);
  return d;
}

std::vector<double> ddp_train_cpu(const DdpConfig& c) {
  const DdpData d = ddp_data(c);
  const int in = c.inputs, hid = c.hidden, batch = c.batch;
  const std::size_t w2_at = std::size_t(in) * hid + hid;
  std::vector<double> p(d.p.begin(), d.p.end()), g(p.size()), h(static_cast<std::size_t>(hid)),
      dh(static_cast<std::size_t>(hid));
  std::vector<double> losses;
  for (int step = 0; step < c.steps; ++step) {
    std::fill(g.begin(), g.end(), 0.0);
    double loss = 0;
    for (int b = 0; b < batch; ++b) {
      const float* x = d.x.data() + std::size_t(b) * in;
      double y = p[w2_at + hid];
      for (int j = 0; j < hid; ++j) {
        double a = p[std::size_t(in) * hid + j];
        for (int i = 0; i < in; ++i) a += double{x[i]} * p[std::size_t(i) * hid + j];
        h[j] = a > 0 ? a : 0;
        y += h[j] * p[w2_at + j];
      }
      const double diff = y - d.t[b], dy = diff / batch;
      loss += 0.5 * diff * diff / batch;
      for (int j = 0; j < hid; ++j) {
        g[w2_at + j] += h[j] * dy;
        dh[j] = h[j] > 0 ? dy * p[w2_at + j] : 0;
        g[std::size_t(in) * hid + j] += dh[j];
        for (int i = 0; i < in; ++i) g[std::size_t(i) * hid + j] += double{x[i]} * dh[j];
      }
      g[w2_at + hid] += dy;
    }
    losses.push_back(loss);
    for (std::size_t k = 0; k < p.size(); ++k) p[k] -= double{c.lr} * g[k];
  }
  return losses;
}

}  // namespace cudalab::ch08
