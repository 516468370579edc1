// Chapter 7 — streams, events and graphs: what runs at the same time, what waits for what, and what
// a launch costs.
//
// Device functions take device pointers, sizes and streams, like CUB. Any size works (0 included);
// bad arguments throw std::invalid_argument naming the argument; every launch and every CUDA call
// is checked (cudalab::CudaError).
#pragma once

// One header per topic (each can be included alone); this one includes them all, with the
// block size the chapter's kernels use.
#include "ch07/events.hpp"
#include "ch07/graph.hpp"
#include "ch07/inference.hpp"
#include "ch07/overlap.hpp"
#include "ch07/tools.hpp"

namespace cudalab::ch07 {

inline constexpr unsigned kBlock = 256;

}  // namespace cudalab::ch07
