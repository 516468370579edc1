// Chapter 7 — streams, events and graphs: what runs at the same time, what waits for what, and what
// a launch costs.
//
// Device functions take device pointers, sizes and streams, like CUB. Any size works (0 included);
// bad arguments throw std::invalid_argument naming the argument; every launch and every CUDA call
// is checked (cudalab::CudaError).
#pragma once

#include <cuda_runtime_api.h>

#include <cstddef>
#include <cstdint>
#include <span>
#include <vector>

#include "cudalab/memory.hpp"

namespace cudalab::ch07 {

inline constexpr unsigned kBlock = 256;

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

// ---------------------------------------------------------------------------------------------
// Exercise 7.2 — events for cross-stream dependencies (fork / join).
// x is produced on `main` by work the caller enqueued before the call. Computes, without any host
// wait:  a = x * x on side[0], b = 2 x + 1 on side[1] (each starting once x is ready on main),
// then out = a + b on main (once both are done). Everything enqueued after the call on `main`
// sees `out`. Throws std::invalid_argument for null streams or pointers.
void fork_join(const float* x, float* a, float* b, float* out, std::size_t n, cudaStream_t main,
               cudaStream_t side0, cudaStream_t side1);
// The same three kernels one after another in `stream` (the baseline bench_ch07 compares with).
void fork_join_serial(const float* x, float* a, float* b, float* out, std::size_t n,
                      cudaStream_t stream);

// ---------------------------------------------------------------------------------------------
// A chain of `length` tiny kernels on x[0, n): kernel k computes x = fmaf(x, scale[k], shift[k])
// with scale[k] = 1 + (k % 7 - 3) / 1024, shift[k] = (k % 5 - 2) / 256 (chain_oracle, cpu/).
// Plain launches cost the host ~3 µs each; a CUDA graph submits the whole chain in one call.
float chain_scale(int k);
float chain_shift(int k);
float chain_oracle(float x, int length, int replays = 1);

class KernelChain {
 public:
  // Does not launch anything; the graph is captured on first use. Throws std::invalid_argument for
  // length < 1 or a null x with n > 0.
  KernelChain(float* x, std::size_t n, int length);
  ~KernelChain();
  KernelChain(const KernelChain&) = delete;
  KernelChain& operator=(const KernelChain&) = delete;

  // `length` plain launches on `stream`.
  void launch_plain(cudaStream_t stream);
  // Exercise 7.3 — the same chain as one CUDA graph: captured from the plain launches on first use
  // (stream capture), instantiated once, then replayed by one cudaGraphLaunch per call.
  void launch_graph(cudaStream_t stream);
  // Exercise 7.4 — point the chain at another array of the same size without capturing or
  // instantiating again: update the instantiated graph's kernel parameters in place. Throws
  // std::invalid_argument for a null x with n > 0. (Before the graph exists it only sets x.)
  void set_data(float* x);

  std::size_t graph_kernel_nodes() const;  // kernel nodes of the captured graph (0 before)
  int instantiations() const noexcept { return instantiations_; }

 private:
  void capture(cudaStream_t stream);  // stream capture of launch_plain + instantiate
  float* x_;
  std::size_t n_;
  int length_;
  cudaGraph_t graph_ = nullptr;
  cudaGraphExec_t exec_ = nullptr;
  int instantiations_ = 0;
};

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

// ---------------------------------------------------------------------------------------------
// The batch-inference pipeline (reference/inference.cu, worked example).
// A small MLP classifier: in -> hidden (ReLU) -> hidden (ReLU) -> classes, FP32, weights made by
// the code (mlp_weights: deterministic, scaled 1/sqrt(fan_in)).
struct MlpShape {
  int in = 256, hidden = 512, classes = 10;
};
struct MlpWeights {
  MlpShape shape;
  std::vector<float> w1, b1, w2, b2, w3, b3;  // row-major [out][in]
};
MlpWeights mlp_weights(MlpShape shape = {}, std::uint64_t seed = 7);  // cpu/
// Logits [batch][classes] of x [batch][in] (double accumulation).
std::vector<float> mlp_forward_cpu(const MlpWeights& w, std::span<const float> x,
                                   int batch);  // cpu/
// Input of batch `index` (deterministic; what the producer thread makes).
std::vector<float> make_batch(const MlpShape& shape, int batch, std::uint64_t index);  // cpu/

class Mlp {
 public:
  Mlp(const MlpWeights& w, int max_batch);
  const MlpShape& shape() const noexcept { return shape_; }
  int max_batch() const noexcept { return max_batch_; }
  // logits [batch][classes] = forward(x [batch][in]); 1 <= batch <= max_batch. Three fused
  // GEMM + bias (+ ReLU) kernels; scratch activations are owned by this object (one forward at a
  // time per Mlp).
  void forward(const float* x, float* logits, int batch, cudaStream_t stream) const;

 private:
  MlpShape shape_;
  int max_batch_;
  DeviceBuffer<float> w1_, b1_, w2_, b2_, w3_, b3_;
  mutable DeviceBuffer<float> h1_, h2_;
};

struct ServeOptions {
  int batch = 16;     // samples per batch
  int batches = 64;   // batches the producer makes
  int slots = 3;      // pinned staging slots = streams in flight (triple buffering)
  bool graph = true;  // steady state as one CUDA graph per slot (H2D + forward + D2H)
  bool keep_logits = true;
};
struct ServeResult {
  std::vector<double> latency_us;  // per batch: producer hand-off -> results on the host
  double seconds = 0;              // first hand-off -> last result
  std::vector<float> logits;       // batches x batch x classes (when keep_logits)
  int batch = 0;
  int streams_used = 0;
  double samples_per_second() const;
  double percentile_us(double p) const;  // p in [0, 100], nearest rank
};
// Batch i's input is make_batch(shape, batch, i % kDistinctBatches), made once before the clock
// starts (the producer copies it: it measures the pipeline, not the input generator).
inline constexpr int kDistinctBatches = 8;
// A host producer thread fills pinned slots with batch i's input; the caller's thread enqueues each
// ready slot on its stream (H2D, forward, D2H, then cudaLaunchHostFunc to record completion and
// free the slot). NVTX ranges name every step when nvtx3 is available.
ServeResult serve(const MlpWeights& w, const ServeOptions& options);

}  // namespace cudalab::ch07
