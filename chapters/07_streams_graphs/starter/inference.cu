// Starter track — write your code at the TODO marks; the tests of each exercise
// fail until you do. (Generated from chapters/07_streams_graphs/reference/inference.cu by scripts/variants.py.)
// The batch-inference pipeline (worked example): a small MLP classifier served from a producer
// thread through pinned slots, each slot its own stream, transfers overlapped with compute, and the
// steady state replayed as one CUDA graph per slot.
//
//   producer thread:  wait for a free slot -> copy batch i into its pinned input -> hand it over
//   serving thread:   take a ready slot -> enqueue on the slot's stream: H2D, 3 kernels, D2H (one
//                     graph launch) -> cudaLaunchHostFunc(done)
//   done (driver thread, when the stream gets there): timestamp, copy the logits out, free the slot
// With 3 slots, batch i+1's H2D runs while batch i computes and batch i-1's D2H drains (Nsight
// Systems shows it: see the chapter README, "Taking a trace").
#include <algorithm>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <cstring>
#include <deque>
#include <memory>
#include <mutex>
#include <thread>

#include "ch07/ch07.hpp"
#include "cudalab/check.hpp"
#include "cudalab/nvtx.hpp"
#include "cudalab/stream.hpp"

namespace cudalab::ch07 {
namespace {

constexpr int kTile = 16;

// y[b][o] = act(sum_i x[b][i] w[o][i] + bias[o]): a tiled GEMM with the bias and the ReLU fused in
// its epilogue (one kernel per layer; chapter 1 measures what three kernels per layer cost).
__global__ void __launch_bounds__(kTile* kTile)
    linear_kernel(const float* __restrict__ x, const float* __restrict__ w,
                  const float* __restrict__ bias, float* __restrict__ y, int batch, int in, int out,
                  bool relu) {
  __shared__ float xs[kTile][kTile + 1];
  __shared__ float ws[kTile][kTile + 1];
  const int tx = threadIdx.x, ty = threadIdx.y;
  const int b = blockIdx.y * kTile + ty;       // row of x and y
  const int o_load = blockIdx.x * kTile + ty;  // row of w this thread loads
  const int o = blockIdx.x * kTile + tx;       // column of y this thread computes
  float acc = 0.0f;
  for (int k0 = 0; k0 < in; k0 += kTile) {
    xs[ty][tx] = (b < batch && k0 + tx < in) ? x[static_cast<std::size_t>(b) * in + k0 + tx] : 0.0f;
    ws[ty][tx] =
        (o_load < out && k0 + tx < in) ? w[static_cast<std::size_t>(o_load) * in + k0 + tx] : 0.0f;
    __syncthreads();
#pragma unroll
    for (int k = 0; k < kTile; ++k) acc = fmaf(xs[ty][k], ws[tx][k], acc);
    __syncthreads();
  }
  if (b < batch && o < out) {
    const float v = acc + bias[o];
    y[static_cast<std::size_t>(b) * out + o] = relu ? fmaxf(v, 0.0f) : v;
  }
}

void linear(const float* x, const float* w, const float* bias, float* y, int batch, int in, int out,
            bool relu, cudaStream_t stream) {
  const dim3 block(kTile, kTile);
  const dim3 grid(static_cast<unsigned>((out + kTile - 1) / kTile),
                  static_cast<unsigned>((batch + kTile - 1) / kTile));
  linear_kernel<<<grid, block, 0, stream>>>(x, w, bias, y, batch, in, out, relu);
  CUDALAB_CHECK_LAUNCH_ASYNC();  // may run under stream capture
}

DeviceBuffer<float> upload(const std::vector<float>& v) {
  return to_device(v);
}

using Clock = std::chrono::steady_clock;

}  // namespace

Mlp::Mlp(const MlpWeights& w, int max_batch) : shape_(w.shape), max_batch_(max_batch) {
  require(max_batch >= 1 && max_batch <= 65535 * kTile, "max_batch",
          "must be in [1, 1048560] (a grid has at most 65535 rows of 16-row tiles)");
  const MlpShape& s = shape_;
  require(s.in >= 1 && s.hidden >= 1 && s.classes >= 1, "w", "every layer size must be >= 1");
  require(w.w1.size() == static_cast<std::size_t>(s.hidden) * s.in &&
              w.b1.size() == static_cast<std::size_t>(s.hidden) &&
              w.w2.size() == static_cast<std::size_t>(s.hidden) * s.hidden &&
              w.b2.size() == static_cast<std::size_t>(s.hidden) &&
              w.w3.size() == static_cast<std::size_t>(s.classes) * s.hidden &&
              w.b3.size() == static_cast<std::size_t>(s.classes),
          "w", "weight sizes do not match w.shape (make them with mlp_weights)");
  w1_ = upload(w.w1);
  b1_ = upload(w.b1);
  w2_ = upload(w.w2);
  b2_ = upload(w.b2);
  w3_ = upload(w.w3);
  b3_ = upload(w.b3);
  h1_ = DeviceBuffer<float>(static_cast<std::size_t>(max_batch) * s.hidden);
  h2_ = DeviceBuffer<float>(static_cast<std::size_t>(max_batch) * s.hidden);
  // The uploads above are cudaMemcpy from pageable memory on the legacy default stream: such a
  // copy may return once the data sits in the driver's staging buffer, before its DMA has landed,
  // and a forward on a non-blocking stream is not ordered after the legacy stream. Wait for them
  // here, once, so that no forward can read weights still in flight.
  CUDALAB_CHECK(cudaStreamSynchronize(cudaStreamLegacy));
}

void Mlp::forward(const float* x, float* logits, int batch, cudaStream_t stream) const {
  require(batch >= 1 && batch <= max_batch_, "batch", "must be in [1, max_batch]");
  // cudaPointerGetAttributes stays out of stream captures (serve() captures this forward): a
  // capturing stream gets the null checks only.
  cudaStreamCaptureStatus status = cudaStreamCaptureStatusNone;
  if (stream != nullptr) CUDALAB_CHECK(cudaStreamIsCapturing(stream, &status));
  if (status == cudaStreamCaptureStatusNone) {
    require_device_pointer(x, static_cast<std::size_t>(batch) * shape_.in, "x");
    require_device_pointer(logits, static_cast<std::size_t>(batch) * shape_.classes, "logits");
  } else {
    require(x != nullptr, "x", "null pointer");
    require(logits != nullptr, "logits", "null pointer");
  }
  const MlpShape& s = shape_;
  linear(x, w1_.data(), b1_.data(), h1_.data(), batch, s.in, s.hidden, true, stream);
  linear(h1_.data(), w2_.data(), b2_.data(), h2_.data(), batch, s.hidden, s.hidden, true, stream);
  linear(h2_.data(), w3_.data(), b3_.data(), logits, batch, s.hidden, s.classes, false, stream);
}

namespace {

struct Shared;

struct Slot {
  Shared* shared = nullptr;
  int index = 0;     // which slot
  int batch_id = 0;  // batch in flight (set before the enqueue, read by done())
  std::unique_ptr<Mlp> mlp;
  PinnedBuffer<float> in, out;
  DeviceBuffer<float> din, dout;
  Stream stream;
  cudaGraph_t graph = nullptr;
  cudaGraphExec_t exec = nullptr;
  ~Slot() {
    if (exec) cudaGraphExecDestroy(exec);
    if (graph) cudaGraphDestroy(graph);
  }
  // H2D, forward, D2H on this slot's stream.
  void enqueue_steps(int batch, const MlpShape& s) {
    CUDALAB_CHECK(cudaMemcpyAsync(din.data(), in.data(),
                                  static_cast<std::size_t>(batch) * s.in * sizeof(float),
                                  cudaMemcpyHostToDevice, stream));
    mlp->forward(din.data(), dout.data(), batch, stream);
    CUDALAB_CHECK(cudaMemcpyAsync(out.data(), dout.data(),
                                  static_cast<std::size_t>(batch) * s.classes * sizeof(float),
                                  cudaMemcpyDeviceToHost, stream));
  }
};

struct Shared {
  std::mutex m;
  std::condition_variable cv;
  std::deque<int> free_slots;
  std::deque<std::pair<int, int>> ready;  // (batch id, slot)
  bool stop = false;
  std::vector<Clock::time_point> handoff, done;
  std::vector<float>* logits = nullptr;
  int batch = 0, classes = 0;
};

// Runs on a driver thread when the stream reaches it: no CUDA call allowed here.
void CUDART_CB on_done(void* user) {
  auto* slot = static_cast<Slot*>(user);
  Shared& sh = *slot->shared;
  const auto now = Clock::now();
  const std::size_t per = static_cast<std::size_t>(sh.batch) * sh.classes;
  if (sh.logits)
    std::memcpy(sh.logits->data() + per * slot->batch_id, slot->out.data(), per * sizeof(float));
  {
    std::lock_guard lock(sh.m);
    sh.done[slot->batch_id] = now;
    sh.free_slots.push_back(slot->index);
  }
  sh.cv.notify_all();
}

}  // namespace

ServeResult serve(const MlpWeights& w, const ServeOptions& o) {
  require(o.batch >= 1, "options.batch", "must be >= 1");
  require(o.batches >= 0, "options.batches", "must be >= 0");
  require(o.slots >= 1 && o.slots <= 32, "options.slots", "must be in [1, 32]");
  const MlpShape& s = w.shape;
  ServeResult r;
  r.batch = o.batch;
  r.streams_used = o.slots;
  if (o.batches == 0) return r;

  std::vector<std::vector<float>> inputs;  // made before the clock starts
  for (int i = 0; i < std::min(o.batches, kDistinctBatches); ++i)
    inputs.push_back(make_batch(s, o.batch, static_cast<std::uint64_t>(i)));

  Shared sh;
  sh.batch = o.batch;
  sh.classes = s.classes;
  sh.handoff.resize(static_cast<std::size_t>(o.batches));
  sh.done.resize(static_cast<std::size_t>(o.batches));
  if (o.keep_logits)
    r.logits.assign(static_cast<std::size_t>(o.batches) * o.batch * s.classes, 0.0f);
  sh.logits = o.keep_logits ? &r.logits : nullptr;

  std::vector<std::unique_ptr<Slot>> slots;
  for (int k = 0; k < o.slots; ++k) {
    auto slot = std::make_unique<Slot>();
    slot->shared = &sh;
    slot->index = k;
    slot->mlp = std::make_unique<Mlp>(w, o.batch);
    slot->in = PinnedBuffer<float>(static_cast<std::size_t>(o.batch) * s.in);
    slot->out = PinnedBuffer<float>(static_cast<std::size_t>(o.batch) * s.classes);
    slot->din = DeviceBuffer<float>(static_cast<std::size_t>(o.batch) * s.in);
    slot->dout = DeviceBuffer<float>(static_cast<std::size_t>(o.batch) * s.classes);
    if (o.graph) {  // the steady state, captured once per slot (its buffers are fixed)
      NvtxRange range("capture slot graph");
      CUDALAB_CHECK(cudaStreamBeginCapture(slot->stream, cudaStreamCaptureModeThreadLocal));
      try {
        slot->enqueue_steps(o.batch, s);
      } catch (...) {
        cudaGraph_t broken = nullptr;
        cudaStreamEndCapture(slot->stream, &broken);
        if (broken) cudaGraphDestroy(broken);
        throw;
      }
      CUDALAB_CHECK(cudaStreamEndCapture(slot->stream, &slot->graph));
      CUDALAB_CHECK(cudaGraphInstantiate(&slot->exec, slot->graph, 0));
      CUDALAB_CHECK(cudaGraphUpload(slot->exec, slot->stream));
    }
    sh.free_slots.push_back(k);
    slots.push_back(std::move(slot));
  }
  CUDALAB_CHECK(cudaDeviceSynchronize());

  std::thread producer([&] {
    for (int i = 0; i < o.batches; ++i) {
      int k = 0;
      {
        std::unique_lock lock(sh.m);
        sh.cv.wait(lock, [&] { return sh.stop || !sh.free_slots.empty(); });
        if (sh.stop) return;
        k = sh.free_slots.front();
        sh.free_slots.pop_front();
      }
      {
        NvtxRange range("produce batch");
        const auto& in = inputs[static_cast<std::size_t>(i % kDistinctBatches)];
        std::memcpy(slots[static_cast<std::size_t>(k)]->in.data(), in.data(),
                    in.size() * sizeof(float));
      }
      {
        std::lock_guard lock(sh.m);
        sh.handoff[static_cast<std::size_t>(i)] = Clock::now();
        sh.ready.emplace_back(i, k);
      }
      sh.cv.notify_all();
    }
  });

  try {
    for (int served = 0; served < o.batches; ++served) {
      std::pair<int, int> job;
      {
        std::unique_lock lock(sh.m);
        sh.cv.wait(lock, [&] { return !sh.ready.empty(); });
        job = sh.ready.front();
        sh.ready.pop_front();
      }
      NvtxRange range("enqueue batch");
      Slot& slot = *slots[static_cast<std::size_t>(job.second)];
      slot.batch_id = job.first;
      if (o.graph) {
        CUDALAB_CHECK(cudaGraphLaunch(slot.exec, slot.stream));
      } else {
        slot.enqueue_steps(o.batch, s);
      }
      CUDALAB_CHECK(cudaLaunchHostFunc(slot.stream, on_done, &slot));
    }
    for (auto& slot : slots) slot->stream.synchronize();
  } catch (...) {
    {
      std::lock_guard lock(sh.m);
      sh.stop = true;
    }
    sh.cv.notify_all();
    producer.join();
    for (auto& slot : slots) cudaStreamSynchronize(slot->stream);
    throw;
  }
  producer.join();

  r.latency_us.reserve(static_cast<std::size_t>(o.batches));
  for (int i = 0; i < o.batches; ++i)
    r.latency_us.push_back(
        std::chrono::duration<double, std::micro>(sh.done[static_cast<std::size_t>(i)] -
                                                  sh.handoff[static_cast<std::size_t>(i)])
            .count());
  r.seconds = std::chrono::duration<double>(*std::max_element(sh.done.begin(), sh.done.end()) -
                                            sh.handoff.front())
                  .count();
  return r;
}

}  // namespace cudalab::ch07
