// Chapter 10 benchmarks, the mini autograd: its per-op overhead (the host time of one recorded op,
// the CPU and GPU backends) and one MLP training step (rows: bias_gelu.cpp's header).
#include "ch10/autograd.hpp"

#include <chrono>
#include <exception>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "cudalab/bench.hpp"
#include "cudalab/random.hpp"

using namespace cudalab;

namespace {

// The autograd backend of a row, or nullptr after marking the row skipped with the reason.
std::unique_ptr<ch10::ag::Backend> backend_or_skip(benchmark::State& state, bool gpu) {
  try {
    return gpu ? ch10::ag::gpu_backend() : ch10::ag::cpu_backend();
  } catch (const std::exception& e) {
    state.SkipWithError(e.what());
    return nullptr;
  }
}

// The host cost of one recorded op: kOps adds of 1 x 1 tensors (the GPU's work is one tiny
// kernel each, so the time is the dispatch: shape checks, allocation, the node, the launch),
// with recording on (grad) or off (nograd). Wall clock, the stream synchronized at the end.
constexpr int kOps = 1000;

void BM_autograd_op(benchmark::State& state, bool gpu, bool grad) {
  const std::unique_ptr<ch10::ag::Backend> be = backend_or_skip(state, gpu);
  if (!be) return;
  const ch10::ag::Tensor x = ch10::ag::Tensor::from(*be, 1, 1, {1.0f}, true);
  for (auto _ : state) {
    const auto t0 = std::chrono::steady_clock::now();
    {
      std::optional<ch10::ag::NoGrad> ng;
      if (!grad) ng.emplace();
      ch10::ag::Tensor t = x;
      for (int i = 0; i < kOps; ++i) t = ch10::ag::add(t, x);
      be->synchronize();
    }
    const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    state.SetIterationTime(s);
    state.counters["us_per_op"] = 1e6 * s / kOps;
  }
}

// One SGD step of the two-layer MLP (256 x 8 -> 32 -> 2): forward, backward, update.
void BM_autograd_mlp_step(benchmark::State& state, bool gpu) {
  const std::unique_ptr<ch10::ag::Backend> be = backend_or_skip(state, gpu);
  if (!be) return;
  Rng rng(5);
  const ch10::ag::Tensor x = ch10::ag::Tensor::from(*be, 256, 8, rng.uniform<float>(2048, -1, 1));
  const ch10::ag::Tensor y = ch10::ag::Tensor::from(*be, 256, 2, rng.uniform<float>(512, -1, 1));
  ch10::ag::Mlp m(*be, 8, 32, 2, 9);
  for (auto _ : state) {
    const auto t0 = std::chrono::steady_clock::now();
    ch10::ag::backward(ch10::ag::mse_loss(m.forward(x), y));
    m.sgd_step(0.1f);
    be->synchronize();
    state.SetIterationTime(
        std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());
  }
}

[[maybe_unused]] const bool kRegistered = [] {
  for (const bool gpu : {false, true})
    for (const bool grad : {true, false})
      bench::add(
          std::string("BM_autograd_op/") + (gpu ? "gpu" : "cpu") + (grad ? "/grad" : "/nograd"),
          [gpu, grad](benchmark::State& s) { BM_autograd_op(s, gpu, grad); });
  for (const bool gpu : {false, true})
    bench::add(std::string("BM_autograd_mlp_step/") + (gpu ? "gpu" : "cpu"),
               [gpu](benchmark::State& s) { BM_autograd_mlp_step(s, gpu); });
  return true;
}();

}  // namespace
