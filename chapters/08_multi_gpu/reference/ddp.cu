// The lesson's DDP-like training step (no exercise). Parameters and gradients are one flat buffer
// per rank, [W1 (inputs x hidden) | b1 (hidden) | W2 (hidden) | b2 (1)], so that a bucket is a
// contiguous range: layer 2's gradients are ready first in the backward pass (bucket 0), layer 1's
// last (bucket 1). The loss is a mean over the GLOBAL batch, so each rank's gradient is its share
// of the global gradient and the all-reduce's sum is the gradient itself (no division after).
#include <cmath>
#include <stdexcept>
#include <string>
#include <vector>

#include "ch08/ch08.hpp"
#include "ch08/ddp.hpp"
#include "cudalab/check.hpp"
#include "cudalab/math.hpp"
#include "cudalab/memory.hpp"

namespace cudalab::ch08 {
namespace {

constexpr unsigned kBlock = 128;

unsigned blocks_for(std::size_t n) {
  return static_cast<unsigned>(ceil_div<std::size_t>(n, kBlock));
}

// h[b][j] = relu(sum_i x[b][i] W1[i][j] + b1[j]); y[b] = sum_j h[b][j] W2[j] + b2 (one thread per
// b).
__global__ void forward_kernel(const float* __restrict__ x, const float* __restrict__ p,
                               float* __restrict__ h, float* __restrict__ y, int rows, int in,
                               int hid) {
  const int b = blockIdx.x * blockDim.x + threadIdx.x;
  if (b >= rows) return;
  const float* w1 = p;
  const float* b1 = w1 + in * hid;
  const float* w2 = b1 + hid;
  float out = w2[hid];
  for (int j = 0; j < hid; ++j) {
    float a = b1[j];
    for (int i = 0; i < in; ++i) a = fmaf(x[b * in + i], w1[i * hid + j], a);
    const float r = fmaxf(a, 0.0f);
    h[b * hid + j] = r;
    out = fmaf(r, w2[j], out);
  }
  y[b] = out;
}

// dy[b] = (y[b] - t[b]) / global; loss[0] = sum over this rank's rows of (y - t)^2 / 2 / global
// (one thread: a few hundred rows, and a fixed order of additions).
__global__ void loss_kernel(const float* __restrict__ y, const float* __restrict__ t,
                            float* __restrict__ dy, float* __restrict__ loss, int rows,
                            float inv_global) {
  if (blockIdx.x != 0 || threadIdx.x != 0) return;
  float sum = 0.0f;
  for (int b = 0; b < rows; ++b) {
    const float d = y[b] - t[b];
    dy[b] = d * inv_global;
    sum = fmaf(0.5f * d, d, sum);
  }
  *loss = sum * inv_global;
}

// Layer 2: gW2[j] = sum_b h[b][j] dy[b] (threads j < hid), gb2 = sum_b dy[b] (thread hid).
__global__ void grad2_kernel(const float* __restrict__ h, const float* __restrict__ dy,
                             float* __restrict__ g2, int rows, int hid) {
  const int j = blockIdx.x * blockDim.x + threadIdx.x;
  if (j > hid) return;
  float s = 0.0f;
  for (int b = 0; b < rows; ++b) s = fmaf(j < hid ? h[b * hid + j] : 1.0f, dy[b], s);
  g2[j] = s;
}

// Layer 1: dh[b][j] = dy[b] W2[j] [h > 0]; gW1[i][j] = sum_b x[b][i] dh[b][j] (threads i*hid + j),
// gb1[j] = sum_b dh[b][j] (threads in*hid + j).
__global__ void grad1_kernel(const float* __restrict__ x, const float* __restrict__ h,
                             const float* __restrict__ dy, const float* __restrict__ w2,
                             float* __restrict__ g1, int rows, int in, int hid) {
  const int t = blockIdx.x * blockDim.x + threadIdx.x;
  if (t >= (in + 1) * hid) return;
  const int i = t / hid, j = t % hid;
  float s = 0.0f;
  for (int b = 0; b < rows; ++b) {
    const float dh = h[b * hid + j] > 0.0f ? dy[b] * w2[j] : 0.0f;
    s = fmaf(i < in ? x[b * in + i] : 1.0f, dh, s);
  }
  g1[t] = s;
}

__global__ void sgd_kernel(float* __restrict__ p, const float* __restrict__ g, int n, float lr) {
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) p[i] = fmaf(-lr, g[i], p[i]);
}

// Deterministic synthetic data and initial parameters (a fixed hash, the same for every run).
float hash_unit(unsigned a, unsigned b, unsigned seed) {
  unsigned v = a * 2654435761u ^ (b + 0x9e3779b9u + (seed << 6) + (seed >> 2));
  v ^= v >> 16;
  v *= 0x85ebca6bu;
  v ^= v >> 13;
  v *= 0xc2b2ae35u;
  v ^= v >> 16;
  return static_cast<float>(v) / 4294967296.0f * 2.0f - 1.0f;  // [-1, 1)
}

struct Rank {
  int device = 0;
  std::size_t rows = 0;
  DeviceBuffer<float> x, t, h, y, dy, p, g, loss;
  cudaStream_t compute = nullptr, comm = nullptr;
  cudaEvent_t grad2_ready = nullptr, grad1_ready = nullptr, synced = nullptr;
};

}  // namespace

std::vector<float> ddp_train(const DdpConfig& c, std::span<const int> devices, GradSync sync) {
  require(c.inputs >= 1 && c.hidden >= 1, "config", "inputs and hidden must be >= 1");
  require(c.batch >= 1, "config", "batch must be >= 1");
  require(c.steps >= 0, "config", "steps must be >= 0");
  require(std::isfinite(c.lr), "config", "lr must be finite");
  require(!devices.empty(), "devices", "needs at least one rank");
  const int n = static_cast<int>(devices.size());
  require(n <= c.batch, "devices", "more ranks than rows in the global batch");
  const int available = device_count();
  for (int d : devices)
    require(d >= 0 && d < available, "devices", "names a device that does not exist");

  const int in = c.inputs, hid = c.hidden;
  const std::size_t params = std::size_t(in) * hid + hid + hid + 1;
  const std::size_t layer2 = std::size_t(hid) + 1, layer2_at = params - layer2;
  // The global data set and the initial parameters, on the host.
  std::vector<float> X(std::size_t(c.batch) * in), T(c.batch), P(params);
  for (int b = 0; b < c.batch; ++b) {
    float target = 0.0f;
    for (int i = 0; i < in; ++i) {
      X[std::size_t(b) * in + i] = hash_unit(b, i, c.seed);
      target += (i % 2 ? 0.5f : -0.25f) * X[std::size_t(b) * in + i];
    }
    T[b] = std::tanh(target);
  }
  const float scale1 = 1.0f / std::sqrt(static_cast<float>(in)),
              scale2 = 1.0f / std::sqrt(static_cast<float>(hid));
  for (std::size_t k = 0; k < params; ++k)
    P[k] = hash_unit(static_cast<unsigned>(k), 7777u, c.seed) * (k < layer2_at ? scale1 : scale2);

  int previous = 0;
  CUDALAB_CHECK(cudaGetDevice(&previous));
  std::vector<Rank> ranks(n);
  std::vector<float> losses;
  const auto cleanup = [&] {
    for (Rank& r : ranks) {
      (void)cudaSetDevice(r.device);
      if (r.compute) (void)cudaStreamSynchronize(r.compute), (void)cudaStreamDestroy(r.compute);
      if (r.comm) (void)cudaStreamSynchronize(r.comm), (void)cudaStreamDestroy(r.comm);
      for (cudaEvent_t e : {r.grad2_ready, r.grad1_ready, r.synced})
        if (e) (void)cudaEventDestroy(e);
    }
    (void)cudaSetDevice(previous);
  };
  try {
    for (int r = 0; r < n; ++r) {
      Rank& k = ranks[r];
      k.device = devices[r];
      CUDALAB_CHECK(cudaSetDevice(k.device));
      const Chunk rows = ring_chunk(static_cast<std::size_t>(c.batch), n, r);
      k.rows = rows.count;
      k.x =
          DeviceBuffer<float>(std::span<const float>(X.data() + rows.offset * in, rows.count * in));
      k.t = DeviceBuffer<float>(std::span<const float>(T.data() + rows.offset, rows.count));
      k.h = DeviceBuffer<float>(rows.count * hid);
      k.y = DeviceBuffer<float>(rows.count);
      k.dy = DeviceBuffer<float>(rows.count);
      k.p = DeviceBuffer<float>(std::span<const float>(P));
      k.g = DeviceBuffer<float>(params);
      k.loss = DeviceBuffer<float>(1);
      CUDALAB_CHECK(cudaStreamCreateWithFlags(&k.compute, cudaStreamNonBlocking));
      CUDALAB_CHECK(cudaStreamCreateWithFlags(&k.comm, cudaStreamNonBlocking));
      CUDALAB_CHECK(cudaEventCreateWithFlags(&k.grad2_ready, cudaEventDisableTiming));
      CUDALAB_CHECK(cudaEventCreateWithFlags(&k.grad1_ready, cudaEventDisableTiming));
      CUDALAB_CHECK(cudaEventCreateWithFlags(&k.synced, cudaEventDisableTiming));
    }
    const float inv_global = 1.0f / static_cast<float>(c.batch);
    std::vector<float*> grads(n), grads2(n);
    std::vector<cudaStream_t> compute(n), comm(n);
    for (int r = 0; r < n; ++r) {
      grads[r] = ranks[r].g.data();
      grads2[r] = ranks[r].g.data() + layer2_at;
      compute[r] = ranks[r].compute;
      comm[r] = ranks[r].comm;
    }
    for (int step = 0; step < c.steps; ++step) {
      // Forward and the backward pass of layer 2 on every rank.
      for (Rank& k : ranks) {
        CUDALAB_CHECK(cudaSetDevice(k.device));
        const float* p = k.p.data();
        forward_kernel<<<blocks_for(k.rows), kBlock, 0, k.compute>>>(
            k.x.data(), p, k.h.data(), k.y.data(), static_cast<int>(k.rows), in, hid);
        CUDALAB_CHECK_LAUNCH();
        loss_kernel<<<1, 1, 0, k.compute>>>(k.y.data(), k.t.data(), k.dy.data(), k.loss.data(),
                                            static_cast<int>(k.rows), inv_global);
        CUDALAB_CHECK_LAUNCH();
        grad2_kernel<<<blocks_for(layer2), kBlock, 0, k.compute>>>(
            k.h.data(), k.dy.data(), k.g.data() + layer2_at, static_cast<int>(k.rows), hid);
        CUDALAB_CHECK_LAUNCH();
        CUDALAB_CHECK(cudaEventRecord(k.grad2_ready, k.compute));
      }
      // Bucketed: layer 2's gradients go round the ring on the comm streams now...
      if (sync == GradSync::kBucketed && n > 1) {
        for (Rank& k : ranks) CUDALAB_CHECK(cudaStreamWaitEvent(k.comm, k.grad2_ready, 0));
        ring_allreduce(grads2, devices, layer2, comm);
      }
      // ...while layer 1's backward pass runs on the compute streams.
      for (Rank& k : ranks) {
        CUDALAB_CHECK(cudaSetDevice(k.device));
        grad1_kernel<<<blocks_for(std::size_t(in + 1) * hid), kBlock, 0, k.compute>>>(
            k.x.data(), k.h.data(), k.dy.data(), k.p.data() + std::size_t(in) * hid + hid,
            k.g.data(), static_cast<int>(k.rows), in, hid);
        CUDALAB_CHECK_LAUNCH();
        CUDALAB_CHECK(cudaEventRecord(k.grad1_ready, k.compute));
      }
      if (n > 1) {
        if (sync == GradSync::kBucketed) {
          for (Rank& k : ranks) CUDALAB_CHECK(cudaStreamWaitEvent(k.comm, k.grad1_ready, 0));
          ring_allreduce(grads, devices, layer2_at, comm);
          for (Rank& k : ranks) {
            CUDALAB_CHECK(cudaSetDevice(k.device));
            CUDALAB_CHECK(cudaEventRecord(k.synced, k.comm));
            CUDALAB_CHECK(cudaStreamWaitEvent(k.compute, k.synced, 0));
          }
        } else {
          ring_allreduce(grads, devices, params, compute);
        }
      }
      // The loss of this step (before the update), summed over ranks on the host.
      float loss = 0.0f;
      for (Rank& k : ranks) {
        CUDALAB_CHECK(cudaSetDevice(k.device));
        float part = 0.0f;
        CUDALAB_CHECK(cudaMemcpyAsync(&part, k.loss.data(), sizeof(float), cudaMemcpyDeviceToHost,
                                      k.compute));
        CUDALAB_CHECK(cudaStreamSynchronize(k.compute));
        loss += part;
        sgd_kernel<<<blocks_for(params), kBlock, 0, k.compute>>>(k.p.data(), k.g.data(),
                                                                 static_cast<int>(params), c.lr);
        CUDALAB_CHECK_LAUNCH();
      }
      losses.push_back(loss);
    }
    // Every replica must hold the same parameters.
    if (n > 1) {
      CUDALAB_CHECK(cudaSetDevice(ranks[0].device));
      CUDALAB_CHECK(cudaStreamSynchronize(ranks[0].compute));
      const std::vector<float> p0 = ranks[0].p.to_host();
      for (int r = 1; r < n; ++r) {
        CUDALAB_CHECK(cudaSetDevice(ranks[r].device));
        CUDALAB_CHECK(cudaStreamSynchronize(ranks[r].compute));
        if (ranks[r].p.to_host() != p0)
          throw std::logic_error("ddp_train: the replicas of rank 0 and rank " + std::to_string(r) +
                                 " differ");
      }
    }
  } catch (...) {
    cleanup();
    throw;
  }
  cleanup();
  return losses;
}

}  // namespace cudalab::ch08
