// Chapter 5 benchmarks, divergence (exercise 5.7): a branchy transform of 2^26 floats.
//   ./build/gpu/bench/bench_ch05 --benchmark_filter='divergence'
//
// Rows (bench::run_vs times the two alternately in every iteration; vs_base = base time / row
// time; the goals that read them live in bench/ch05/ch05.toml):
//   BM_divergence/<divergent|warp_uniform> compute-bound; warp_uniform beside divergent (~2x)
// Checked once before timing (bench::verify) against a host oracle.
#include "ch05/divergence.hpp"

#include <cmath>
#include <string>
#include <vector>

#include "ch05_bench.hpp"
#include "cudalab/bench.hpp"
#include "cudalab/device_fill.hpp"
#include "cudalab/memory.hpp"

using namespace cudalab;
using namespace cudalab::bench_ch05;

namespace {

float host_path(float y, bool a) {
  for (int s = 0; s < ch05::kDivergenceSteps; ++s)
    y = a ? std::fma(ch05::kPathAScale, y, ch05::kPathAShift)
          : std::fma(ch05::kPathBScale, y, ch05::kPathBShift);
  return y;
}

void bm_divergence(benchmark::State& state, ch05::DivergenceVariant v) {
  auto in = uniform_device_buffer(kMoreN, 31, -10.0f, 10.0f);
  DeviceBuffer<float> out(kMoreN), base_out(kMoreN);
  auto run = [&](ch05::DivergenceVariant variant, float* o, cudaStream_t s) {
    ch05::branchy_transform(in.data(), o, kMoreN, variant, s);
  };
  if (!bench::verify(state, std::string("divergence/") + ch05::to_string(v), [&] {
        run(v, out.data(), nullptr);
        const std::vector<float> x = in.to_host();
        std::vector<float> want(kMoreN);
        for (std::size_t i = 0; i < kMoreN; ++i) want[i] = host_path(x[i], i % 2 == 0);
        return bench::mismatch(out.to_host(), want, {.abs = 1e-5, .rel = 1e-5},
                               "branchy_transform 2^26");
      }))
    return;
  // Useful FLOPs: one FMA (2 FLOPs) per step on one path per element; the divergent version
  // spends issue slots on the masked path too, which is what its lower TFLOP/s shows.
  const bench::Work w{.bytes = 8.0 * kMoreN, .flops = 2.0 * ch05::kDivergenceSteps * kMoreN};
  auto work = [&](cudaStream_t s) { run(v, out.data(), s); };
  if (v == ch05::DivergenceVariant::kDivergent)
    bench::run(state, work, w);
  else
    bench::run_vs(
        state, work,
        [&](cudaStream_t s) { run(ch05::DivergenceVariant::kDivergent, base_out.data(), s); }, w);
}

using bench::add;  // cudalab/bench.hpp

[[maybe_unused]] const bool kRegistered = [] {
  for (const auto v : {ch05::DivergenceVariant::kDivergent, ch05::DivergenceVariant::kWarpUniform})
    add(std::string("BM_divergence/") + ch05::to_string(v),
        [v](benchmark::State& s) { bm_divergence(s, v); });
  return true;
}();

}  // namespace
