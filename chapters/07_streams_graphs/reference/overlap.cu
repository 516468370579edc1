// Exercise 7.1 — the overlap lab: H2D, kernel, D2H of a batch, cut into chunks over several streams
// so that the copy engines and the SMs work at the same time.
//
// Serial: |--- H2D ---|--- kernel ---|--- D2H ---|            time = h + k + d
// Chunked over 3+ streams (4 chunks):
//   copy in   |h0|h1|h2|h3|
//   SMs          |k0|k1|k2|k3|
//   copy out        |d0|d1|d2|d3|                           time = (h + k + d)/4 + 3 max(h, k, d)/4
// An H200 has separate copy engines for each direction, so H2D of chunk c+1, the kernel of chunk c
// and D2H of chunk c-1 really run at once. Two conditions: the chunks sit in different streams (one
// stream is a queue: its operations never overlap each other), and the host memory is pinned (a
// pageable cudaMemcpyAsync is staged by the host and returns late: the "async" copy serializes).
#include <cstdlib>
#include <utility>

#include "ch07/ch07.hpp"
#include "cudalab/check.hpp"
#include "cudalab/device.hpp"
#include "cudalab/math.hpp"
#include "cudalab/nvtx.hpp"

namespace cudalab::ch07 {
namespace {

__global__ void __launch_bounds__(kBlock)
    process_kernel(const float* __restrict__ x, float* __restrict__ y, std::size_t n, int iters) {
  const std::size_t stride = std::size_t{gridDim.x} * blockDim.x;
  for (std::size_t i = std::size_t{blockIdx.x} * blockDim.x + threadIdx.x; i < n; i += stride) {
    float v = x[i];
    for (int k = 0; k < iters; ++k) v = fmaf(v, kScale, kShift);
    y[i] = v;
  }
}

unsigned process_blocks(std::size_t n) {
  const int sms = current_sm_count();
  const std::size_t needed = ceil_div<std::size_t>(n, kBlock);
  const std::size_t cap = static_cast<std::size_t>(sms) * 8;  // a grid-stride loop covers the rest
  return static_cast<unsigned>(needed < cap ? needed : cap);
}

void check_buffers(const OverlapBuffers& b, int iters) {
  require(iters >= 0, "iters", "must be >= 0");
  require(b.host_in.size() == b.n && b.host_out.size() == b.n && b.dev_in.size() == b.n &&
              b.dev_out.size() == b.n,
          "b", "every buffer must hold b.n floats (build it with OverlapBuffers(n))");
}

}  // namespace

void process(const float* x, float* y, std::size_t n, int iters, cudaStream_t stream) {
  require(iters >= 0, "iters", "must be >= 0");
  require_device_pointer(x, n, "x");
  require_device_pointer(y, n, "y");
  if (n == 0) return;
  process_kernel<<<process_blocks(n), kBlock, 0, stream>>>(x, y, n, iters);
  CUDALAB_CHECK_LAUNCH();
}

HostArray::HostArray(std::size_t n, HostMemory memory)
    : n_(n), pinned_(memory == HostMemory::kPinned) {
  if (n_ == 0) return;
  if (pinned_) {
    CUDALAB_CHECK(cudaMallocHost(reinterpret_cast<void**>(&p_), n_ * sizeof(float)));
  } else {
    p_ = static_cast<float*>(std::malloc(n_ * sizeof(float)));
    if (!p_) throw std::bad_alloc();
  }
}
HostArray::~HostArray() {
  reset();
}
HostArray::HostArray(HostArray&& o) noexcept
    : p_(std::exchange(o.p_, nullptr)),
      n_(std::exchange(o.n_, 0)),
      pinned_(std::exchange(o.pinned_, false)) {}
HostArray& HostArray::operator=(HostArray&& o) noexcept {
  if (this != &o) {
    reset();
    p_ = std::exchange(o.p_, nullptr);
    n_ = std::exchange(o.n_, 0);
    pinned_ = std::exchange(o.pinned_, false);
  }
  return *this;
}
void HostArray::reset() noexcept {
  if (p_) {
    if (pinned_)
      cudaFreeHost(p_);
    else
      std::free(p_);
  }
  p_ = nullptr;
  n_ = 0;
}

OverlapBuffers::OverlapBuffers(std::size_t n_elements, HostMemory memory) : n(n_elements) {
  // BEGIN PITFALL pageable_staging EXERCISES 7.1
  // The host side of an asynchronous copy must be pinned. With pageable memory (malloc,
  // std::vector) the program still computes the right answer, but cudaMemcpyAsync is not
  // asynchronous any more: the driver copies through its own pinned bounce buffer, a pageable H2D
  // first waits for the stream, a pageable D2H returns only when the copy is done. The host then
  // enqueues chunk c+1 only after chunk c moved, and the chunked pipeline runs no faster than the
  // serial one (bench_ch07 BM_overlap_pageable shows it). Caught by the tests that hold a stream
  // with a Gate (run_chunked must return while the first stream is held) and by the check that the
  // buffers are page-locked (cudaPointerGetAttributes: cudaMemoryTypeHost).
  const HostMemory host = memory;
  // BUG: const HostMemory host = HostMemory::kPageable; (void)memory;  // "a std::vector will do"
  // END PITFALL
  host_in = HostArray(n, host);
  host_out = HostArray(n, host);
  dev_in = DeviceBuffer<float>(n);
  dev_out = DeviceBuffer<float>(n);
}

void run_serial(OverlapBuffers& b, int iters, cudaStream_t stream) {
  NvtxRange range("ch07 serial pipeline");  // the enqueue on the host timeline (chapter 9's trace)
  check_buffers(b, iters);
  if (b.n == 0) return;
  const std::size_t bytes = b.n * sizeof(float);
  CUDALAB_CHECK(
      cudaMemcpyAsync(b.dev_in.data(), b.host_in.data(), bytes, cudaMemcpyHostToDevice, stream));
  process(b.dev_in.data(), b.dev_out.data(), b.n, iters, stream);
  CUDALAB_CHECK(
      cudaMemcpyAsync(b.host_out.data(), b.dev_out.data(), bytes, cudaMemcpyDeviceToHost, stream));
}

void run_chunked(OverlapBuffers& b, int iters, int chunks, std::span<const cudaStream_t> streams) {
  NvtxRange range("ch07 chunked pipeline");  // the enqueue on the host timeline (chapter 9's trace)
  check_buffers(b, iters);
  require(chunks >= 1, "chunks", "at least one chunk");
  require(!streams.empty(), "streams", "at least one stream");
  for (cudaStream_t s : streams)
    require(s != nullptr, "streams",
            "the legacy default stream (nullptr) waits for and blocks every blocking stream: use "
            "created streams");
  if (b.n == 0) return;
  // BEGIN EXERCISE 7.1
  // TODO(7.1): contract — the result of run_serial (host_out = process(host_in, iters)), computed
  //            in `chunks` nearly equal chunks (the first n % chunks chunks one element longer;
  //            more chunks than elements: the extra chunks are empty), chunk c entirely on the
  //            stream whose index is c modulo the number of streams: its host-to-device copy, its
  //            kernel (process()), its device-to-host copy. Chunks use disjoint ranges of the four
  //            buffers.
  //            Constraints: no host wait of any kind (no synchronize, no blocking copy): the
  //            function returns once everything is enqueued, and the tests hold streams[0] while
  //            the other streams must finish their chunks. No other stream than the given ones.
  //            Goal (bench_ch07 BM_overlap, chunked rows): >= 90% of overlap_speedup_model() for
  //            balanced stages on an H200. Hints: scripts/lab hint 7.1
  // STARTER: (void)iters; (void)chunks;
  // STARTER: throw NotImplemented("Exercise 7.1: run_chunked (chapters/07_streams_graphs/starter/overlap.cu)");
  const std::size_t c_count = static_cast<std::size_t>(chunks);
  const std::size_t base = b.n / c_count, extra = b.n % c_count;
  std::size_t begin = 0;
  for (std::size_t c = 0; c < c_count; ++c) {
    const std::size_t len = base + (c < extra ? 1 : 0);
    if (len == 0) break;  // more chunks than elements: the rest are empty
    const cudaStream_t s = streams[c % streams.size()];
    const std::size_t bytes = len * sizeof(float);
    CUDALAB_CHECK(cudaMemcpyAsync(b.dev_in.data() + begin, b.host_in.data() + begin, bytes,
                                  cudaMemcpyHostToDevice, s));
    process(b.dev_in.data() + begin, b.dev_out.data() + begin, len, iters, s);
    CUDALAB_CHECK(cudaMemcpyAsync(b.host_out.data() + begin, b.dev_out.data() + begin, bytes,
                                  cudaMemcpyDeviceToHost, s));
    begin += len;
  }
  // END EXERCISE
}

}  // namespace cudalab::ch07
