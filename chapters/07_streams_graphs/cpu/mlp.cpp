// The batch-inference pipeline's model on the CPU: deterministic weights and inputs (no file to
// ship: the same numbers on every machine) and the oracle forward in double.
#include <algorithm>
#include <cmath>
#include <cstdint>

#include "ch07/ch07.hpp"
#include "cudalab/check.hpp"

namespace cudalab::ch07 {
namespace {

// splitmix64: a counter-based generator, so value i of stream s does not depend on the others.
std::uint64_t mix(std::uint64_t z) {
  z += 0x9E3779B97F4A7C15ull;
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  return z ^ (z >> 31);
}
// Uniform in [-1, 1), exactly representable (24 random bits).
float unit(std::uint64_t stream, std::uint64_t i) {
  const std::uint64_t r = mix(mix(stream) ^ (i * 0xD1B54A32D192ED03ull));
  return static_cast<float>(static_cast<std::int64_t>(r >> 40) - (1 << 23)) /
         static_cast<float>(1 << 23);
}

std::vector<float> fill(std::size_t n, std::uint64_t stream, float scale) {
  std::vector<float> v(n);
  for (std::size_t i = 0; i < n; ++i) v[i] = scale * unit(stream, i);
  return v;
}

void check_shape(const MlpShape& s) {
  require(s.in >= 1, "shape.in", "must be >= 1");
  require(s.hidden >= 1, "shape.hidden", "must be >= 1");
  require(s.classes >= 1, "shape.classes", "must be >= 1");
}

// y[b][o] = act(sum_i x[b][i] w[o][i] + bias[o]) in double.
std::vector<double> layer(const std::vector<double>& x, int batch, int in,
                          const std::vector<float>& w, const std::vector<float>& bias, int out,
                          bool relu) {
  std::vector<double> y(static_cast<std::size_t>(batch) * out);
  for (int b = 0; b < batch; ++b)
    for (int o = 0; o < out; ++o) {
      double acc = bias[o];
      for (int i = 0; i < in; ++i)
        acc += x[static_cast<std::size_t>(b) * in + i] * w[static_cast<std::size_t>(o) * in + i];
      y[static_cast<std::size_t>(b) * out + o] = relu ? std::max(acc, 0.0) : acc;
    }
  return y;
}

}  // namespace

MlpWeights mlp_weights(MlpShape s, std::uint64_t seed) {
  check_shape(s);
  MlpWeights w;
  w.shape = s;
  const auto in = static_cast<std::size_t>(s.in), hid = static_cast<std::size_t>(s.hidden),
             cls = static_cast<std::size_t>(s.classes);
  w.w1 = fill(hid * in, seed * 8 + 1, 1.0f / std::sqrt(static_cast<float>(s.in)));
  w.b1 = fill(hid, seed * 8 + 2, 0.1f);
  w.w2 = fill(hid * hid, seed * 8 + 3, 1.0f / std::sqrt(static_cast<float>(s.hidden)));
  w.b2 = fill(hid, seed * 8 + 4, 0.1f);
  w.w3 = fill(cls * hid, seed * 8 + 5, 1.0f / std::sqrt(static_cast<float>(s.hidden)));
  w.b3 = fill(cls, seed * 8 + 6, 0.1f);
  return w;
}

std::vector<float> make_batch(const MlpShape& s, int batch, std::uint64_t index) {
  check_shape(s);
  require(batch >= 0, "batch", "must be >= 0");
  return fill(static_cast<std::size_t>(batch) * s.in, 0xBA7C4ull + index, 1.0f);
}

std::vector<float> mlp_forward_cpu(const MlpWeights& w, std::span<const float> x, int batch) {
  const MlpShape& s = w.shape;
  check_shape(s);
  require(batch >= 0, "batch", "must be >= 0");
  require(x.size() == static_cast<std::size_t>(batch) * s.in, "x",
          "must hold batch * shape.in floats");
  std::vector<double> h(x.begin(), x.end());
  h = layer(h, batch, s.in, w.w1, w.b1, s.hidden, true);
  h = layer(h, batch, s.hidden, w.w2, w.b2, s.hidden, true);
  h = layer(h, batch, s.hidden, w.w3, w.b3, s.classes, false);
  return std::vector<float>(h.begin(), h.end());
}

double ServeResult::samples_per_second() const {
  return seconds > 0 ? static_cast<double>(latency_us.size()) * batch / seconds : 0;
}

double ServeResult::percentile_us(double p) const {
  require(p >= 0 && p <= 100, "p", "a percentile is in [0, 100]");
  require(!latency_us.empty(), "latency_us", "no batch was served");
  std::vector<double> v = latency_us;
  std::sort(v.begin(), v.end());
  // Nearest rank: the smallest value with at least p% of the values at or below it.
  const auto rank = static_cast<std::size_t>(std::ceil(p / 100.0 * static_cast<double>(v.size())));
  return v[rank == 0 ? 0 : rank - 1];
}

}  // namespace cudalab::ch07
