// CPU oracles and models of chapter 7 (shared by every track).
#include <algorithm>
#include <cmath>
#include <numeric>

#include "ch07/ch07.hpp"
#include "cudalab/check.hpp"

namespace cudalab::ch07 {

float process_oracle(float x, int iters) {
  for (int k = 0; k < iters; ++k) x = std::fma(x, kScale, kShift);
  return x;
}

// Centred on x -> x: a replayed chain neither explodes nor vanishes (benchmarks replay it a lot).
float chain_scale(int k) {
  return 1.0f + static_cast<float>(k % 7 - 3) / 1024.0f;
}
float chain_shift(int k) {
  return static_cast<float>(k % 5 - 2) / 256.0f;
}

float chain_oracle(float x, int length, int replays) {
  for (int r = 0; r < replays; ++r)
    for (int k = 0; k < length; ++k) x = std::fma(x, chain_scale(k), chain_shift(k));
  return x;
}

namespace {
double checked_sum(std::span<const double> stage_ms, int chunks) {
  require(!stage_ms.empty(), "stage_ms", "a pipeline needs at least one stage");
  require(chunks >= 1, "chunks", "at least one chunk");
  double sum = 0;
  for (double s : stage_ms) {
    require(std::isfinite(s) && s >= 0, "stage_ms", "every stage time must be finite and >= 0");
    sum += s;
  }
  require(sum > 0, "stage_ms", "at least one stage must take time");
  return sum;
}
}  // namespace

double pipelined_time_model(std::span<const double> stage_ms, int chunks) {
  const double sum = checked_sum(stage_ms, chunks);
  const double largest = *std::max_element(stage_ms.begin(), stage_ms.end());
  // Chunk c leaves the last stage after every stage of chunk 0 (fill: sum / chunks) and one
  // bottleneck slot per later chunk (largest / chunks each).
  return (sum + (chunks - 1) * largest) / chunks;
}

double overlap_speedup_model(std::span<const double> stage_ms, int chunks) {
  const double sum = checked_sum(stage_ms, chunks);
  return sum / pipelined_time_model(stage_ms, chunks);
}

}  // namespace cudalab::ch07
