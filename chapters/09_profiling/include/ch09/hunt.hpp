// Chapter 9 — the bug hunt: ten small programs, each a kernel and the host code that runs it on a
// fixed input, then checks the answer against the CPU. In the starter track each has one bug; a
// compute-sanitizer tool (or, for one of them, a deterministic delay) finds it. Which tool finds
// which is the exercise: tests/ch09/CMakeLists.txt runs them (README, "The bug hunt").
#pragma once

#include <cstddef>
#include <span>
#include <string>
#include <vector>

namespace cudalab::ch09 {

struct HuntResult {
  bool correct = false;  // the answer matched the CPU's
  std::string detail;    // the first mismatch, or what was checked
};

HuntResult hunt_shift();          // out[i] = in[i - 1], out[0] = 0
HuntResult hunt_column_sums();    // sums of the columns of a rows x 32k matrix
HuntResult hunt_neighbor_diff();  // out[i] = in[i + 1] - in[i], out[n - 1] = 0
HuntResult hunt_block_lead();     // each element over the magnitude of its block's first element
HuntResult hunt_accumulate();     // the sum of k arrays, one launch per array
HuntResult hunt_normalize();      // each element over the largest magnitude
HuntResult hunt_quad_sums();      // sums of 4 consecutive floats, on a view one float in
HuntResult hunt_two_stage();      // out = 2 in + 1 in two kernels through a temporary
HuntResult hunt_readback();       // a slow kernel's output, copied to the host and read there
HuntResult hunt_graph_replay();   // a captured CUDA graph replayed over fresh inputs

struct HuntCase {
  const char* name;
  HuntResult (*run)();
};

// Every case, in the order of the README (reference/hunt.cu).
std::span<const HuntCase> hunt_cases();

// The first index where got and want differ by more than tol (|got - want| > tol, NaN included),
// as "i = 7: got 1.5, want 2" ; empty when they match. Sizes must agree.
std::string first_mismatch(const std::vector<float>& got, const std::vector<float>& want,
                           float tol = 0.0f);

}  // namespace cudalab::ch09
