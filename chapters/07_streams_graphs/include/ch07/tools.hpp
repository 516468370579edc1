// Chapter 7: the lesson's tools: a gate that holds a stream, a spin kernel, stream priorities,
// allocation in a loop.
// (ch07.hpp includes every topic of the chapter; its header says the conventions.)
#pragma once

#include <cuda_runtime_api.h>

#include <cstddef>
#include <cstdint>

namespace cudalab::ch07 {

// ---------------------------------------------------------------------------------------------
// Tools of the lesson (reference/tools.cu, worked, used by tests and benchmarks).

// A kernel that holds a stream until the host opens it: everything enqueued behind it waits. Tests
// use it to prove structure without timing (work on other streams finishes while this one is
// held; a function that returns while a stream is held did not wait on the host). `timeout_s` only
// breaks a deadlock: a held gate that times out records it (timed_out()).
class Gate {
 public:
  Gate();
  ~Gate();
  Gate(const Gate&) = delete;
  Gate& operator=(const Gate&) = delete;
  void hold(cudaStream_t stream, double timeout_s = 10.0);  // enqueue the gate kernel
  void open() noexcept;                                     // let it (and what follows) run
  bool timed_out() const noexcept;  // the gate gave up waiting (a host wait was stuck behind it)
  bool released() const noexcept;   // the gate kernel has finished (opened or timed out)

 private:
  int* flags_ =
      nullptr;  // mapped pinned memory: [0] open, [1] status (0 waiting, 1 opened, 2 timed out)
  int* dev_flags_ = nullptr;
};

// `blocks` blocks of 32 threads, each spinning for `ns` nanoseconds of the GPU's global timer: a
// kernel of known duration for the priority and concurrency demos (blocks = 0 launches nothing).
void spin(std::uint64_t ns, unsigned blocks, cudaStream_t stream = nullptr);

// Greatest and least priority of this device (lower number = higher priority; cudaStreamCreate's
// default is the least).
struct PriorityRange {
  int least = 0, greatest = 0;
};
PriorityRange priority_range();

// Allocation in a loop: `iterations` times allocate `bytes`, fill them with a kernel, free them.
// kMalloc: cudaMalloc/cudaFree (cudaFree synchronizes the device); kMallocAsync: cudaMallocAsync/
// cudaFreeAsync on `stream`, served by the device's default memory pool (its release threshold is
// raised so that freed memory stays cached). Throws std::invalid_argument for iterations < 0.
enum class AllocMode { kMalloc, kMallocAsync };
void alloc_loop(AllocMode mode, std::size_t bytes, int iterations, cudaStream_t stream);

}  // namespace cudalab::ch07
