// Exercise 8.3 — the ring all-reduce on devices: N ranks on N GPUs over P2P, or N ranks simulated
// on one GPU (same kernels, same streams and events), following ring_step and ring_chunk.
//
// One step of one rank is one kernel on the rank's stream: it reads the left neighbour's chunk
// (peer memory over NVLink or PCIe when the devices differ) and adds it into, or copies it over,
// the rank's own chunk. Reading is the pull model: the data crosses the link once, and no staging
// buffer is needed because, at any step, the chunk a rank reads is never the chunk its neighbour
// writes (ring_step's indices differ by one), so the only ordering a step needs is "my left
// neighbour finished its previous step" — one event per rank; plus, at the start, "my left
// neighbour's input is ready" and, at the end, "my right neighbour has stopped reading me".
#include <algorithm>
#include <stdexcept>
#include <string>
#include <vector>

#include "ch08/ch08.hpp"
#include "cudalab/check.hpp"
#include "cudalab/device_guard.hpp"
#include "cudalab/math.hpp"

namespace cudalab::ch08 {
namespace {

constexpr unsigned kBlock = 256;
constexpr unsigned kMaxBlocks = 1024;

__global__ void __launch_bounds__(kBlock)
    ring_step_kernel(float* __restrict__ dst, const float* __restrict__ src, std::size_t n,
                     bool reduce) {
  const std::size_t stride = std::size_t{gridDim.x} * blockDim.x;
  for (std::size_t i = std::size_t{blockIdx.x} * blockDim.x + threadIdx.x; i < n; i += stride)
    dst[i] = reduce ? dst[i] + src[i] : src[i];
}

void launch_step(float* dst, const float* src, std::size_t n, bool reduce, cudaStream_t stream) {
  if (n == 0) return;
  const auto blocks =
      static_cast<unsigned>(std::min<std::size_t>(ceil_div<std::size_t>(n, kBlock), kMaxBlocks));
  ring_step_kernel<<<blocks, kBlock, 0, stream>>>(dst, src, n, reduce);
  CUDALAB_CHECK_LAUNCH();
}

// One event per rank, created on the rank's device: `at[r]`.
struct RankEvents {
  explicit RankEvents(std::span<const int> devices) {
    for (int d : devices) {
      CUDALAB_CHECK(cudaSetDevice(d));
      cudaEvent_t e = nullptr;
      CUDALAB_CHECK(cudaEventCreateWithFlags(&e, cudaEventDisableTiming));
      at.push_back(e);
    }
  }
  ~RankEvents() {
    for (cudaEvent_t e : at) (void)cudaEventDestroy(e);
  }
  RankEvents(const RankEvents&) = delete;
  RankEvents& operator=(const RankEvents&) = delete;
  std::vector<cudaEvent_t> at;
};

}  // namespace

int device_count() {
  int n = 0;
  if (cudaGetDeviceCount(&n) != cudaSuccess) {
    (void)cudaGetLastError();
    return 0;
  }
  return n;
}

void enable_peer_access(std::span<const int> devices) {
  const DeviceGuard guard;
  for (int a : devices)
    for (int b : devices) {
      if (a == b) continue;
      int ok = 0;
      CUDALAB_CHECK(cudaDeviceCanAccessPeer(&ok, a, b));
      if (!ok)
        throw std::runtime_error("enable_peer_access: device " + std::to_string(a) +
                                 " cannot access device " + std::to_string(b) +
                                 " (no P2P path: see peer_matrix)");
      CUDALAB_CHECK(cudaSetDevice(a));
      const cudaError_t e = cudaDeviceEnablePeerAccess(b, 0);
      if (e == cudaErrorPeerAccessAlreadyEnabled) {
        (void)cudaGetLastError();  // clear the sticky-until-read error: enabling twice is fine
      } else {
        CUDALAB_CHECK(e);
      }
    }
}

void ring_allreduce(std::span<float* const> buffers, std::span<const int> devices,
                    std::size_t count, std::span<const cudaStream_t> streams) {
  require(!buffers.empty(), "buffers", "needs at least one rank");
  require(devices.size() == buffers.size(), "devices", "needs one device per rank");
  require(streams.size() == buffers.size(), "streams", "needs one stream per rank");
  const int n = static_cast<int>(buffers.size());
  const int available = device_count();
  for (int r = 0; r < n; ++r) {
    require(devices[r] >= 0 && devices[r] < available, "devices",
            "names a device that does not exist");
    require_device_pointer(buffers[r], count, "buffers");
  }
  if (n == 1 || count == 0) return;
  const DeviceGuard guard;
  const RankEvents done(devices);
  // BEGIN EXERCISE 8.3
  // TODO(8.3): contract — every buffers[r] (count floats on devices[r]) ends holding the
  // TODO(8.3): element-wise sum of all of them, with the work of rank r enqueued on streams[r]
  // TODO(8.3): only (the caller synchronizes). Ranks may share a device. Follow ring_step and
  // TODO(8.3): ring_chunk: step by step, each rank reads its left neighbour's chunk (launch_step:
  // TODO(8.3): add or copy, peer memory when the devices differ; launch on the rank's device).
  // TODO(8.3): Precondition: rank r's input is what streams[r] has produced when the call is made
  // TODO(8.3): (a neighbour reads it: order that); postcondition: work enqueued later on streams[r]
  // TODO(8.3): may overwrite buffers[r] safely (no neighbour still reads it).
  // TODO(8.3): constraints — no host synchronization inside (the host only enqueues), no staging
  // TODO(8.3): buffer, no copy of the whole buffer; a rank may not read a chunk before its left
  // TODO(8.3): neighbour has finished writing it, and must not wait on more than it needs (one
  // TODO(8.3): event per rank is enough: `done.at[r]`; which record does a wait see?).
  // TODO(8.3): correctness — equals the CPU sum for n = 1..8 ranks on one GPU and on every GPU
  // TODO(8.3): present. Goal (bench/ch08/ch08.toml): on 2 GPUs, busbw >= 0.8x NCCL's at 256 MiB.
  // STARTER: (void)launch_step; (void)done;
  // STARTER: throw NotImplemented("Exercise 8.3: ring_allreduce (chapters/08_multi_gpu/starter/ring.cu)");
  // Inputs ready: rank r's buffer is what streams[r] has produced so far, and the right neighbour
  // reads it from step 0 on: a record now, that the first step waits on.
  for (int r = 0; r < n; ++r) {
    CUDALAB_CHECK(cudaSetDevice(devices[r]));
    CUDALAB_CHECK(cudaEventRecord(done.at[r], streams[r]));
  }
  for (int s = 0; s < ring_steps(n); ++s) {
    // All the waits of a step first: each sees the left neighbour's latest record (step s - 1).
    // Waiting inside the launch loop would see some ranks' step-s records and chain the ring into
    // a line.
    for (int r = 0; r < n; ++r) {
      const int left = (r + n - 1) % n;
      CUDALAB_CHECK(cudaStreamWaitEvent(streams[r], done.at[left], 0));
    }
    for (int r = 0; r < n; ++r) {
      const int left = (r + n - 1) % n;
      const RingStep st = ring_step(n, r, s);
      const Chunk c = ring_chunk(count, n, st.recv_chunk);
      CUDALAB_CHECK(cudaSetDevice(devices[r]));
      launch_step(buffers[r] + c.offset, buffers[left] + c.offset, c.count, st.reduce, streams[r]);
      CUDALAB_CHECK(cudaEventRecord(done.at[r], streams[r]));
    }
  }
  // Outputs: the right neighbour reads rank r's buffer until its last step; what the caller
  // enqueues next on streams[r] (which may overwrite the buffer) waits for that.
  for (int r = 0; r < n; ++r)
    CUDALAB_CHECK(cudaStreamWaitEvent(streams[r], done.at[(r + 1) % n], 0));
  // END EXERCISE
}

}  // namespace cudalab::ch08
