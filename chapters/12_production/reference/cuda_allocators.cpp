// The CUDA allocators the OOM drill drives to failure (ch12.hpp): cudaMalloc, and a stream-ordered
// pool that keeps what is freed (the behaviour of every caching allocator: PyTorch's, vLLM's
// block pool) until it is trimmed.
#include <cuda_runtime_api.h>

#include <cstddef>
#include <cstdint>

#include "ch12/ch12.hpp"
#include "cudalab/check.hpp"

namespace cudalab::ch12 {
namespace {

// An out-of-memory answer is an ordinary result here (nullptr), any other error is a bug. The
// failed call leaves the error as the thread's last error: read it so that the next launch check
// does not report it.
void* null_on_oom(cudaError_t e, void* p) {
  if (e == cudaSuccess) return p;
  (void)cudaGetLastError();
  if (e == cudaErrorMemoryAllocation) return nullptr;
  CUDALAB_CHECK(e);  // throws, naming the error
  return nullptr;
}

}  // namespace

void* CudaMallocAllocator::allocate(std::size_t bytes) {
  void* p = nullptr;
  // The call first, then p: in null_on_oom(cudaMalloc(&p, bytes), p) the order in which the two
  // arguments are evaluated is unspecified, and g++ reads p (still nullptr) before the call, so
  // every success read as an OOM and leaked its block.
  const cudaError_t e = cudaMalloc(&p, bytes);
  return null_on_oom(e, p);
}

void CudaMallocAllocator::deallocate(void* p) noexcept {
  (void)cudaFree(p);
}

PoolAllocator::PoolAllocator(int device, std::size_t max_bytes) {
  cudaMemPoolProps props{};
  props.allocType = cudaMemAllocationTypePinned;
  props.handleTypes = cudaMemHandleTypeNone;
  props.location.type = cudaMemLocationTypeDevice;
  props.location.id = device;
  props.maxSize = max_bytes;  // 0: the system's default (no cap of ours)
  CUDALAB_CHECK(cudaMemPoolCreate(&pool_, &props));
  // Keep everything freed (the default threshold 0 would return memory at each synchronization).
  std::uint64_t keep = UINT64_MAX;
  CUDALAB_CHECK(cudaMemPoolSetAttribute(pool_, cudaMemPoolAttrReleaseThreshold, &keep));
  CUDALAB_CHECK(cudaStreamCreateWithFlags(&stream_, cudaStreamNonBlocking));
}

PoolAllocator::~PoolAllocator() {
  (void)cudaStreamSynchronize(stream_);
  (void)cudaMemPoolTrimTo(pool_, 0);
  (void)cudaStreamDestroy(stream_);
  (void)cudaMemPoolDestroy(pool_);
}

void* PoolAllocator::allocate(std::size_t bytes) {
  void* p = nullptr;
  const cudaError_t e = cudaMallocFromPoolAsync(&p, bytes, pool_, stream_);
  if (e == cudaSuccess) CUDALAB_CHECK(cudaStreamSynchronize(stream_));
  return null_on_oom(e, p);
}

void PoolAllocator::deallocate(void* p) noexcept {
  (void)cudaFreeAsync(p, stream_);
  (void)cudaStreamSynchronize(stream_);
}

void PoolAllocator::trim() noexcept {
  (void)cudaStreamSynchronize(stream_);
  (void)cudaMemPoolTrimTo(pool_, 0);
}

std::uint64_t PoolAllocator::reserved_bytes() const {
  std::uint64_t v = 0;
  CUDALAB_CHECK(cudaMemPoolGetAttribute(pool_, cudaMemPoolAttrReservedMemCurrent, &v));
  return v;
}

std::uint64_t PoolAllocator::used_bytes() const {
  std::uint64_t v = 0;
  CUDALAB_CHECK(cudaMemPoolGetAttribute(pool_, cudaMemPoolAttrUsedMemCurrent, &v));
  return v;
}

std::size_t device_free_bytes() {
  std::size_t free = 0, total = 0;
  CUDALAB_CHECK(cudaMemGetInfo(&free, &total));
  return free;
}

}  // namespace cudalab::ch12
