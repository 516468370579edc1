// Chapter 12 — production: the memory budget of a serving replica (exercise 12.1), allocation
// that degrades instead of dying when the GPU is full (exercise 12.2), the CUDA allocators the OOM
// drill drives to failure, and the busy kernel the observability demos run.
//
// The KV-cache arithmetic is chapter 11's (ch11::kv_budget): this chapter calls it and adds what
// a real process also holds. Bad arguments throw std::invalid_argument naming the argument.
#pragma once

#include <cuda_runtime_api.h>

#include <cstddef>
#include <cstdint>
#include <stdexcept>
#include <string>
#include <vector>

#include "ch11/host.hpp"

namespace cudalab::ch12 {

// ---------------------------------------------------------------------------------------------
// Exercise 12.1 — the memory budget of one serving replica on one GPU.
//
//   gpu_bytes >= weights + cuda_context + workspace + reserve + activations(prefill_tokens)
//                + batch * (kv_per_sequence + activations(1 token))
//
// weights and kv_per_sequence are chapter 11's (per GPU under tensor parallelism); cuda_context is
// what the driver takes before the first allocation (hundreds of MiB: measured by the drill);
// workspace the libraries' scratch (cuBLAS, attention split-K); reserve = fragmentation_reserve *
// gpu_bytes, which the caching allocators cannot hand out (rounding, split blocks).
struct BudgetInputs {
  ch11::ModelConfig model;
  ch11::Deployment deployment;       // gpu_bytes: the GPU's total memory; reserved_fraction unused
  std::uint64_t context_tokens = 0;  // per sequence: prompt + output
  std::uint64_t activation_bytes_per_token = 0;  // live activations per token of a forward pass
  std::uint64_t prefill_tokens = 0;  // tokens of one prefill chunk in flight beside the decodes
  std::uint64_t cuda_context_bytes = 0;
  std::uint64_t workspace_bytes = 0;
  double fragmentation_reserve = 0.05;  // in [0, 1)
};

struct MemoryBudget {
  std::uint64_t gpu_bytes = 0;
  std::uint64_t weights = 0;  // per GPU
  std::uint64_t cuda_context = 0;
  std::uint64_t workspace = 0;
  std::uint64_t reserve = 0;
  std::uint64_t prefill_activations = 0;
  std::uint64_t fixed = 0;  // the sum of the five above
  std::uint64_t kv_per_sequence = 0;
  std::uint64_t per_sequence = 0;  // kv_per_sequence + one decode token's activations
  std::uint64_t max_batch = 0;     // the largest batch that fits (0 when the fixed part does not)
  // Bytes the replica holds at `batch` sequences (fixed + batch * per_sequence - reserve: the
  // reserve is left free, not allocated).
  std::uint64_t allocated_at(std::uint64_t batch) const;
};

// Throws std::invalid_argument naming 'context_tokens' when 0, 'fragmentation_reserve' outside
// [0, 1), and what ch11::kv_budget names for the model and the deployment.
MemoryBudget memory_budget(const BudgetInputs& in);

// Live activation bytes per token of a decoder forward pass at a storage precision: the residual
// stream, the normalized input, q/k/v, the attention output (4 hidden-sized vectors), the SwiGLU
// gate and up projections (2 intermediate-sized) and the fp32 logits of the vocabulary.
std::uint64_t activation_bytes_per_token(const ch11::ModelConfig& m, std::uint64_t intermediate,
                                         std::uint64_t vocab, ch11::Precision p);

// The serving defaults of the tools (apps/mem_budget.cpp, apps/oom_drill.cpp): the model by name
// (llama3-8b, llama3-70b, mistral-7b; 'model' named when unknown) with its published
// intermediate size and vocabulary, a 2048-token prefill chunk, 600 MiB of CUDA context, 256 MiB
// of workspace and a 5 % fragmentation reserve.
struct ServedModel {
  ch11::ModelConfig config;
  std::uint64_t intermediate = 0;
  std::uint64_t vocab = 0;
};
ServedModel model_by_name(const std::string& model);
ch11::Precision precision_by_name(const std::string& precision);  // fp32 fp16 bf16 fp8 int8
BudgetInputs serving_inputs(const ServedModel& m, std::uint64_t gpu_bytes,
                            std::uint64_t context_tokens);
// The budget as one JSON object (bytes), for the tools.
std::string budget_json(const MemoryBudget& b);

// GPUs by name, for the tools' --gpu argument: total memory as cudaMemGetInfo reports it.
// Throws std::invalid_argument naming 'gpu' for an unknown name (the message lists the known ones).
std::uint64_t gpu_memory_bytes(const std::string& gpu);
std::vector<std::string> known_gpus();

// ---------------------------------------------------------------------------------------------
// Exercise 12.2 — allocating a batch that degrades instead of dying.

// What allocate_batch drives: cudaMalloc, a stream-ordered pool, or a fake (the CPU tests).
class Allocator {
 public:
  virtual ~Allocator() = default;
  // nullptr when the memory is not there (never throws for out-of-memory).
  virtual void* allocate(std::size_t bytes) = 0;
  virtual void deallocate(void* p) noexcept = 0;
  // Returns cached but unused memory to the device (cudaMemPoolTrimTo(pool, 0)); a no-op for an
  // allocator that caches nothing.
  virtual void trim() noexcept = 0;
};

struct BatchRequest {
  std::uint64_t batch = 0;         // sequences wanted
  std::uint64_t min_batch = 1;     // below this the request fails
  std::size_t bytes_per_item = 0;  // one block per sequence (its KV pages)
  std::size_t fixed_bytes = 0;     // one block for the whole batch (activations, workspace)
};

// The blocks of a batch that fit; frees them when it goes out of scope (move-only).
class BatchAllocation {
 public:
  BatchAllocation() = default;
  BatchAllocation(Allocator& a, std::vector<void*> blocks, std::uint64_t batch, int attempts,
                  bool trimmed);
  BatchAllocation(BatchAllocation&& o) noexcept;
  BatchAllocation& operator=(BatchAllocation&& o) noexcept;
  BatchAllocation(const BatchAllocation&) = delete;
  BatchAllocation& operator=(const BatchAllocation&) = delete;
  ~BatchAllocation();

  std::uint64_t batch() const noexcept { return batch_; }  // the batch that fit
  int attempts() const noexcept { return attempts_; }      // allocation rounds it took
  bool trimmed() const noexcept { return trimmed_; }       // whether a trim was needed
  const std::vector<void*>& blocks() const noexcept { return blocks_; }  // fixed block first
  void release() noexcept;

 private:
  Allocator* alloc_ = nullptr;
  std::vector<void*> blocks_;
  std::uint64_t batch_ = 0;
  int attempts_ = 0;
  bool trimmed_ = false;
};

// Thrown when not even min_batch fits; nothing is held when it is thrown.
class OutOfMemory : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// The policy: try the batch (the fixed block, then one block per sequence). When a block does not
// fit, free every block of this attempt, trim the allocator once (cached memory may be what is
// missing) and retry the same batch; after that, halve the batch (never below min_batch) and
// retry. Throws std::invalid_argument naming 'request' when batch < min_batch or min_batch == 0,
// OutOfMemory when min_batch does not fit.
BatchAllocation allocate_batch(Allocator& alloc, const BatchRequest& request);

// ---------------------------------------------------------------------------------------------
// The CUDA allocators of the drill (reference/cuda_allocators.cpp).

// cudaMalloc / cudaFree: caches nothing.
class CudaMallocAllocator final : public Allocator {
 public:
  void* allocate(std::size_t bytes) override;
  void deallocate(void* p) noexcept override;
  void trim() noexcept override {}
};

// cudaMallocFromPoolAsync from a pool of its own whose release threshold keeps freed memory
// cached (what a caching allocator does): after a failed attempt, the freed blocks stay reserved
// by the pool, invisible to cudaMalloc and to cudaMemGetInfo, until trim(). max_bytes > 0 caps the
// pool (cudaMemPoolProps::maxSize): past it the driver answers cudaErrorMemoryAllocation, a real
// OOM that does not exhaust a device other processes share.
class PoolAllocator final : public Allocator {
 public:
  explicit PoolAllocator(int device = 0, std::size_t max_bytes = 0);
  ~PoolAllocator() override;
  PoolAllocator(const PoolAllocator&) = delete;
  PoolAllocator& operator=(const PoolAllocator&) = delete;
  void* allocate(std::size_t bytes) override;
  void deallocate(void* p) noexcept override;
  void trim() noexcept override;
  std::uint64_t reserved_bytes() const;  // cudaMemPoolAttrReservedMemCurrent
  std::uint64_t used_bytes() const;      // cudaMemPoolAttrUsedMemCurrent

 private:
  cudaMemPool_t pool_{};
  cudaStream_t stream_{};
};

// cudaMemGetInfo's free bytes on the current device.
std::size_t device_free_bytes();

// ---------------------------------------------------------------------------------------------
// The busy kernel (reference/busy.cu): `blocks` blocks of `threads` threads spin on FMAs for
// `milliseconds` of GPU time (the clock of SM 0's first block decides). One block keeps NVML's
// "GPU utilization" at 100 % while 1 SM of 132 works: the utilization trap.
void busy(unsigned blocks, unsigned threads, double milliseconds, float* sink,
          cudaStream_t stream = 0);

}  // namespace cudalab::ch12
