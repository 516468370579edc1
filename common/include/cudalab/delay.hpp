// Delay injection and memory contention for ordering tests.
//
// A missing wait between streams (an event not recorded, a stream that does not wait on it, a
// graph launched on the wrong stream) passes every test on an idle GPU: the producer happens to
// finish before the consumer starts. An ordering test makes the race lose every time: it enqueues
// delay_stream() on the producer's stream before the producer writes (before its event is
// recorded), so a consumer that does not wait starts long before the data is there and reads what
// the test left in the buffer (poison), not what the producer wrote. The delay is measured on the
// GPU's global timer, so it does not depend on clocks or on the kernel's speed.
//
// Launch every kernel of the race once before the delay (a warm-up with nothing in flight): with
// lazy module loading (CUDA's default, CUDA_MODULE_LOADING=LAZY), the first launch of a kernel
// loads its module and may synchronize the context, so a kernel launched for the first time
// behind the delay blocks the host until the delay is over, and the consumer is enqueued only
// after the producer has finished: the race is not lost, the missing wait does not show.
//
// Contention keeps the memory system busy while a kernel runs (atomics and loads over a scratch
// buffer from other SMs): the memory-model cases (a block publishing a partial and a flag, a
// decoupled look-back) see their stores and loads reordered and delayed far more often than on an
// idle GPU, where a missing fence rarely shows.
#pragma once

#include <cuda_runtime_api.h>

#include <cstddef>

#include "cudalab/memory.hpp"

namespace cudalab {

// Enqueues on `stream` one block of 32 threads spinning for `microseconds` of the GPU's global
// timer: everything enqueued behind it on `stream` starts at least that much later. Throws
// std::invalid_argument for microseconds outside [0, 10 s]. 0 enqueues nothing.
void delay_stream(cudaStream_t stream, double microseconds);

// The usual delay of an ordering test: long enough that a consumer that does not wait is done
// before the producer starts (a test kernel runs in microseconds), short enough for a fast test.
inline constexpr double kOrderingDelayUs = 20'000;

class Contention {
 public:
  // A scratch buffer of `words` 32-bit words (the contending kernels' target): a few MB, so the
  // traffic spreads over every L2 slice. Throws std::invalid_argument for words = 0.
  explicit Contention(std::size_t words = std::size_t{1} << 20);
  // Enqueues on `stream` `blocks` blocks of 128 threads that, for `microseconds` of the global
  // timer, add to and read back words of the scratch buffer in a pseudo-random order. Run it on
  // a stream other than the kernel under test's, with fewer blocks than the GPU can hold beside
  // it (it must not keep the kernel under test from starting). Throws std::invalid_argument for
  // blocks = 0 or microseconds outside (0, 10 s].
  void run(cudaStream_t stream, double microseconds, unsigned blocks);

 private:
  DeviceBuffer<unsigned> scratch_;
};

}  // namespace cudalab
