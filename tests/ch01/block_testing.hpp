// Running the block on the GPU against the CPU oracle (chapter 1 tests).
#pragma once

#include <gtest/gtest.h>

#include <cstdint>
#include <string>
#include <vector>

#include "ch01/ch01.hpp"
#include "cudalab/stream.hpp"
#include "cudalab/testing.hpp"

namespace ch01_test {

// FP32 GEMMs of length 512 and 2048 against a double oracle.
inline constexpr cudalab::Tolerance kTol{.abs = 2e-3, .rel = 2e-3};

inline ::testing::AssertionResult forward_matches(cudalab::ch01::Block& block,
                                                  const cudalab::ch01::BlockWeights& w,
                                                  cudalab::ch01::Mode mode, int batch,
                                                  cudaStream_t stream, const std::string& what) {
  using namespace cudalab;
  const auto x = ch01::make_input(w.shape, batch, static_cast<std::uint64_t>(batch) + 3);
  auto dx = to_device(x);
  cudalab::testing::GuardedOutput<float> y(static_cast<std::size_t>(batch) * w.shape.d);
  block.forward(mode, dx.data(), y.data(), batch, stream);
  CUDALAB_CHECK(cudaStreamSynchronize(stream));
  const auto r =
      compare(y.result(), ch01::block_forward_cpu(w, x, batch), kTol,
              what + " (" + ch01::mode_name(mode) + ", batch " + std::to_string(batch) + ")");
  if (!r.ok()) return ::testing::AssertionFailure() << r.message;
  return y.guard_intact();
}

}  // namespace ch01_test
