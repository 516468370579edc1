// The block on the CPU: deterministic weights and inputs, and the oracle forward in double.
#include <algorithm>
#include <cmath>
#include <cstdint>

#include "ch01/ch01.hpp"
#include "cudalab/check.hpp"

namespace cudalab::ch01 {
namespace {

std::uint64_t mix(std::uint64_t z) {  // splitmix64
  z += 0x9E3779B97F4A7C15ull;
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  return z ^ (z >> 31);
}
float unit(std::uint64_t stream, std::uint64_t i) {  // [-1, 1), 24 random bits
  const std::uint64_t r = mix(mix(stream) ^ (i * 0xD1B54A32D192ED03ull));
  return static_cast<float>(static_cast<std::int64_t>(r >> 40) - (1 << 23)) /
         static_cast<float>(1 << 23);
}
std::vector<float> fill(std::size_t n, std::uint64_t stream, float scale, float offset = 0.0f) {
  std::vector<float> v(n);
  for (std::size_t i = 0; i < n; ++i) v[i] = offset + scale * unit(stream, i);
  return v;
}
void check_shape(const BlockShape& s) {
  require(s.d >= 1, "shape.d", "must be >= 1");
  require(s.hidden >= 1, "shape.hidden", "must be >= 1");
}
double gelu_d(double v) {
  return 0.5 * v * (1.0 + std::tanh(0.7978845608028654 * (v + 0.044715 * v * v * v)));
}

}  // namespace

BlockWeights block_weights(BlockShape s, std::uint64_t seed) {
  check_shape(s);
  BlockWeights w;
  w.shape = s;
  const auto d = static_cast<std::size_t>(s.d), h = static_cast<std::size_t>(s.hidden);
  w.gamma = fill(d, seed * 8 + 1, 0.1f, 1.0f);
  w.beta = fill(d, seed * 8 + 2, 0.1f);
  w.w1 = fill(h * d, seed * 8 + 3, 1.0f / std::sqrt(static_cast<float>(s.d)));
  w.b1 = fill(h, seed * 8 + 4, 0.1f);
  w.w2 = fill(d * h, seed * 8 + 5, 1.0f / std::sqrt(static_cast<float>(s.hidden)));
  w.b2 = fill(d, seed * 8 + 6, 0.1f);
  return w;
}

std::vector<float> make_input(const BlockShape& s, int batch, std::uint64_t seed) {
  check_shape(s);
  require(batch >= 0, "batch", "must be >= 0");
  return fill(static_cast<std::size_t>(batch) * s.d, 0x1A7E7ull + seed, 2.0f, 0.5f);
}

std::vector<float> block_forward_cpu(const BlockWeights& w, std::span<const float> x, int batch) {
  const BlockShape& s = w.shape;
  check_shape(s);
  require(batch >= 0, "batch", "must be >= 0");
  require(x.size() == static_cast<std::size_t>(batch) * s.d, "x",
          "must hold batch * shape.d floats");
  const auto d = static_cast<std::size_t>(s.d), hid = static_cast<std::size_t>(s.hidden);
  std::vector<float> y(x.size());
  std::vector<double> ln(d), h(hid);
  for (std::size_t b = 0; b < static_cast<std::size_t>(batch); ++b) {
    const float* xr = x.data() + b * d;
    double mean = 0, var = 0;
    for (std::size_t i = 0; i < d; ++i) mean += xr[i];
    mean /= static_cast<double>(d);
    for (std::size_t i = 0; i < d; ++i) var += (xr[i] - mean) * (xr[i] - mean);
    var /= static_cast<double>(d);
    const double inv = 1.0 / std::sqrt(var + kLayerNormEps);
    for (std::size_t i = 0; i < d; ++i) ln[i] = (xr[i] - mean) * inv * w.gamma[i] + w.beta[i];
    for (std::size_t o = 0; o < hid; ++o) {
      double acc = w.b1[o];
      for (std::size_t i = 0; i < d; ++i) acc += ln[i] * w.w1[o * d + i];
      h[o] = gelu_d(acc);
    }
    for (std::size_t o = 0; o < d; ++o) {
      double acc = w.b2[o];
      for (std::size_t i = 0; i < hid; ++i) acc += h[i] * w.w2[o * hid + i];
      y[b * d + o] = static_cast<float>(xr[o] + acc);
    }
  }
  return y;
}

const char* mode_name(Mode mode) {
  switch (mode) {
    case Mode::kEagerAlloc:
      return "eager+alloc";
    case Mode::kEager:
      return "eager";
    case Mode::kFused:
      return "fused";
    case Mode::kGraph:
      return "graph";
  }
  return "?";
}

}  // namespace cudalab::ch01
