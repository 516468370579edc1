// Chapter 7: the overlap lab: the stage kernel, the pipeline's time model, pinned host memory, and
// the serial and chunked pipelines (exercise 7.1).
// (ch07.hpp includes every topic of the chapter; its header says the conventions.)
#pragma once

#include <cuda_runtime_api.h>

#include <cstddef>
#include <span>

#include "cudalab/memory.hpp"

namespace cudalab::ch07 {

// ---------------------------------------------------------------------------------------------
// The stage kernel of the overlap lab: y[i] = x[i] after `iters` steps of x = fmaf(x, kScale,
// kShift). One fused multiply-add is correctly rounded on the CPU (std::fma) as on the GPU, so the
// oracle is exact; `iters` sets the kernel's share of the pipeline (iters = 0 is a copy).
inline constexpr float kScale = 0.999f, kShift = 0.001f;
float process_oracle(float x, int iters);  // cpu/
void process(const float* x, float* y, std::size_t n, int iters, cudaStream_t stream = nullptr);

// ---------------------------------------------------------------------------------------------
// The model of a chunked pipeline (cpu/overlap_model.cpp). `stage_ms` are the times of each stage
// (H2D, kernel, D2H, ...) for the WHOLE batch run alone, each stage on its own engine (copy engine
// in, SMs, copy engine out). Cut into `chunks` equal chunks, a stage takes stage/chunks per chunk,
// and with enough streams the chunks flow like a production line (identical jobs in a flow shop):
//   T(chunks) = sum(stage)/chunks + (chunks - 1) * max(stage)/chunks     (fill + steady + drain)
// so the speedup over the serial sum(stage) is chunks * sum / (sum + (chunks - 1) * max), which
// tends to sum / max (3x for three balanced stages) as chunks grows. Throws std::invalid_argument
// for no stage, a negative or non-finite stage, an all-zero pipeline or chunks < 1.
double pipelined_time_model(std::span<const double> stage_ms, int chunks);
double overlap_speedup_model(std::span<const double> stage_ms, int chunks);

// ---------------------------------------------------------------------------------------------
// Host memory for transfers: pinned (page-locked, cudaMallocHost: the copy engines read it
// directly, cudaMemcpyAsync returns at once) or pageable (malloc: the driver stages it through a
// pinned bounce buffer, and cudaMemcpyAsync waits on the host — it silently serializes).
enum class HostMemory { kPinned, kPageable };

class HostArray {
 public:
  HostArray() = default;
  HostArray(std::size_t n, HostMemory memory);
  ~HostArray();
  HostArray(HostArray&& o) noexcept;
  HostArray& operator=(HostArray&& o) noexcept;
  HostArray(const HostArray&) = delete;
  HostArray& operator=(const HostArray&) = delete;

  float* data() noexcept { return p_; }
  const float* data() const noexcept { return p_; }
  std::size_t size() const noexcept { return n_; }
  std::span<float> span() noexcept { return {p_, n_}; }
  bool pinned() const noexcept { return pinned_; }

 private:
  void reset() noexcept;
  float* p_ = nullptr;
  std::size_t n_ = 0;
  bool pinned_ = false;
};

// The overlap lab's buffers: host input and output, device input and output, n floats each.
// The default is the right choice for asynchronous copies (reference/overlap.cu says why).
struct OverlapBuffers {
  explicit OverlapBuffers(std::size_t n, HostMemory memory = HostMemory::kPinned);
  std::size_t n = 0;
  HostArray host_in, host_out;
  DeviceBuffer<float> dev_in, dev_out;
};

// The serial pipeline on one stream: H2D of all of host_in, process(), D2H into host_out.
// Asynchronous: returns once enqueued (with pinned buffers).
void run_serial(OverlapBuffers& b, int iters, cudaStream_t stream);

// Exercise 7.1 — the same result, cut into `chunks` nearly equal chunks (the first n % chunks
// chunks one element longer), chunk c enqueued on streams[c % streams.size()]: its H2D, its
// kernel, its D2H. Asynchronous (no host wait): returns once everything is enqueued.
// Throws std::invalid_argument for chunks < 1, no stream, or a null stream (the legacy default
// stream would serialize the others).
void run_chunked(OverlapBuffers& b, int iters, int chunks, std::span<const cudaStream_t> streams);

}  // namespace cudalab::ch07
