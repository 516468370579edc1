// The lesson's DDP-like training step (no exercise). Parameters and gradients are one flat buffer
// per rank, [W1 (inputs x hidden) | b1 (hidden) | W2 (hidden) | b2 (1)], so that a bucket is a
// contiguous range: layer 2's gradients are ready first in the backward pass (bucket 0), layer 1's
// last (bucket 1). The loss is a mean over the GLOBAL batch, so each rank's gradient is its share
// of the global gradient and the all-reduce's sum is the gradient itself (no division after).
#include <algorithm>
#include <chrono>
#include <cmath>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

#include "ch08/ch08.hpp"
#include "ch08/ddp.hpp"
#include "cudalab/check.hpp"
#include "cudalab/cublas.hpp"
#include "cudalab/math.hpp"
#include "cudalab/memory.hpp"

namespace cudalab::ch08 {
namespace {

constexpr unsigned kBlock = 128;

unsigned blocks_for(std::size_t n) {
  return static_cast<unsigned>(std::min<std::size_t>(ceil_div<std::size_t>(n, kBlock), 65535));
}

// The two GEMMs and three GEMVs of a step are cuBLAS's (row-major buffers read as their
// column-major transposes); the kernels below are the element-wise glue between them.

// h[b][j] = relu(h[b][j] + b1[j]), in place over X W1 (n = rows * hid).
__global__ void __launch_bounds__(kBlock)
    bias_relu_kernel(float* __restrict__ h, const float* __restrict__ b1, std::size_t n, int hid) {
  for (std::size_t i = blockIdx.x * std::size_t{blockDim.x} + threadIdx.x; i < n;
       i += std::size_t{gridDim.x} * blockDim.x)
    h[i] = fmaxf(h[i] + b1[i % hid], 0.0f);
}

// With y[b] = H[b] . W2 from cuBLAS: dy[b] = (y[b] + b2 - t[b]) / global; loss[0] = sum over this
// rank's rows of (y + b2 - t)^2 / 2 / global, and gb2[0] = sum of dy (layer 2's bias gradient).
// One thread: a fixed order of additions, and a few thousand rows at most.
__global__ void __launch_bounds__(1)
    loss_kernel(const float* __restrict__ y, const float* __restrict__ t,
                const float* __restrict__ b2, float* __restrict__ dy, float* __restrict__ loss,
                float* __restrict__ gb2, int rows, float inv_global) {
  if (blockIdx.x != 0 || threadIdx.x != 0) return;
  float sum = 0.0f, grad = 0.0f;
  for (int b = 0; b < rows; ++b) {
    const float d = y[b] + b2[0] - t[b];
    dy[b] = d * inv_global;
    grad += dy[b];
    sum = fmaf(0.5f * d, d, sum);
  }
  *loss = sum * inv_global;
  *gb2 = grad;
}

// dh[b][j] = dy[b] W2[j] where h[b][j] > 0, else 0: in place over h (layer 2's gradient, which
// reads h, is enqueued before).
__global__ void __launch_bounds__(kBlock)
    relu_backward_kernel(float* __restrict__ h, const float* __restrict__ dy,
                         const float* __restrict__ w2, std::size_t n, int hid) {
  for (std::size_t i = blockIdx.x * std::size_t{blockDim.x} + threadIdx.x; i < n;
       i += std::size_t{gridDim.x} * blockDim.x)
    h[i] = h[i] > 0.0f ? dy[i / hid] * w2[i % hid] : 0.0f;
}

__global__ void __launch_bounds__(kBlock)
    sgd_kernel(float* __restrict__ p, const float* __restrict__ g, std::size_t n, float lr) {
  for (std::size_t i = blockIdx.x * std::size_t{blockDim.x} + threadIdx.x; i < n;
       i += std::size_t{gridDim.x} * blockDim.x)
    p[i] = fmaf(-lr, g[i], p[i]);
}

struct Rank {
  int device = 0;
  std::size_t rows = 0;
  DeviceBuffer<float> x, t, h, y, dy, p, g, loss, ones;
  std::optional<CublasHandle> blas;  // created on the rank's device, bound to its compute stream
  cudaStream_t compute = nullptr, comm = nullptr;
  cudaEvent_t grad2_ready = nullptr, grad1_ready = nullptr, synced = nullptr;
};

}  // namespace

std::vector<float> ddp_train(const DdpConfig& c, std::span<const int> devices, GradSync sync,
                             double* step_seconds) {
  check_ddp_config(c);
  require(!devices.empty(), "devices", "needs at least one rank");
  const int n = static_cast<int>(devices.size());
  require(n <= c.batch, "devices", "more ranks than rows in the global batch");
  const int available = device_count();
  for (int d : devices)
    require(d >= 0 && d < available, "devices", "names a device that does not exist");

  const int in = c.inputs, hid = c.hidden;
  const std::size_t params = std::size_t(in) * hid + hid + hid + 1;
  const std::size_t layer2 = std::size_t(hid) + 1, layer2_at = params - layer2;
  // The global data set and the initial parameters, on the host (the CPU oracle's too).
  const DdpData data = ddp_data(c);
  const std::vector<float>&X = data.x, &T = data.t, &P = data.p;

  int previous = 0;
  CUDALAB_CHECK(cudaGetDevice(&previous));
  std::vector<Rank> ranks(n);
  std::vector<float> losses;
  const auto cleanup = [&] {
    for (Rank& r : ranks) {
      (void)cudaSetDevice(r.device);
      r.blas.reset();
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
      k.loss = DeviceBuffer<float>(static_cast<std::size_t>(c.steps));  // one per step
      k.ones = to_device(std::vector<float>(rows.count, 1.0f));         // gb1 = dH^T ones
      CUDALAB_CHECK(cudaStreamCreateWithFlags(&k.compute, cudaStreamNonBlocking));
      k.blas.emplace();
      CUDALAB_CHECK_CUBLAS(cublasSetStream(*k.blas, k.compute));
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
    // Step timing (step_seconds): from the end of step 0 to the end of the last, every rank idle.
    const auto all_ranks_idle = [&] {
      for (Rank& k : ranks) {
        CUDALAB_CHECK(cudaSetDevice(k.device));
        CUDALAB_CHECK(cudaStreamSynchronize(k.compute));
        CUDALAB_CHECK(cudaStreamSynchronize(k.comm));
      }
      return std::chrono::steady_clock::now();
    };
    std::chrono::steady_clock::time_point timed_from{};
    if (step_seconds) *step_seconds = 0.0;
    for (int step = 0; step < c.steps; ++step) {
      if (step_seconds && step == 1) timed_from = all_ranks_idle();
      // Forward and the backward pass of layer 2 on every rank. Row-major X [rows][in],
      // W1 [in][hid], H [rows][hid] are, to cuBLAS (column-major), X^T, W1^T and H^T.
      for (Rank& k : ranks) {
        CUDALAB_CHECK(cudaSetDevice(k.device));
        const int rows = static_cast<int>(k.rows);
        const std::size_t cells = k.rows * std::size_t(hid);
        const float* w1 = k.p.data();
        const float* b1 = w1 + std::size_t(in) * hid;
        const float* w2 = b1 + hid;
        float* g2 = k.g.data() + layer2_at;  // [gW2 (hid) | gb2]
        const float one = 1.0f, zero = 0.0f;
        // H^T (hid x rows) = W1^T (hid x in) X^T (in x rows), then bias and ReLU.
        CUDALAB_CHECK_CUBLAS(cublasSgemm(*k.blas, CUBLAS_OP_N, CUBLAS_OP_N, hid, rows, in, &one, w1,
                                         hid, k.x.data(), in, &zero, k.h.data(), hid));
        bias_relu_kernel<<<blocks_for(cells), kBlock, 0, k.compute>>>(k.h.data(), b1, cells, hid);
        CUDALAB_CHECK_LAUNCH();
        // y (rows) = (H^T)^T W2.
        CUDALAB_CHECK_CUBLAS(cublasSgemv(*k.blas, CUBLAS_OP_T, hid, rows, &one, k.h.data(), hid, w2,
                                         1, &zero, k.y.data(), 1));
        loss_kernel<<<1, 1, 0, k.compute>>>(k.y.data(), k.t.data(), w2 + hid, k.dy.data(),
                                            k.loss.data() + step, g2 + hid, rows, inv_global);
        CUDALAB_CHECK_LAUNCH();
        // gW2 (hid) = H^T dy.
        CUDALAB_CHECK_CUBLAS(cublasSgemv(*k.blas, CUBLAS_OP_N, hid, rows, &one, k.h.data(), hid,
                                         k.dy.data(), 1, &zero, g2, 1));
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
        const int rows = static_cast<int>(k.rows);
        const std::size_t cells = k.rows * std::size_t(hid);
        const float* w2 = k.p.data() + std::size_t(in) * hid + hid;
        const float one = 1.0f, zero = 0.0f;
        relu_backward_kernel<<<blocks_for(cells), kBlock, 0, k.compute>>>(k.h.data(), k.dy.data(),
                                                                          w2, cells, hid);
        CUDALAB_CHECK_LAUNCH();
        // gW1 [in][hid], i.e. gW1^T (hid x in) = dH^T (hid x rows) X (rows x in); gb1 = dH^T 1.
        CUDALAB_CHECK_CUBLAS(cublasSgemm(*k.blas, CUBLAS_OP_N, CUBLAS_OP_T, hid, in, rows, &one,
                                         k.h.data(), hid, k.x.data(), in, &zero, k.g.data(), hid));
        CUDALAB_CHECK_CUBLAS(cublasSgemv(*k.blas, CUBLAS_OP_N, hid, rows, &one, k.h.data(), hid,
                                         k.ones.data(), 1, &zero,
                                         k.g.data() + std::size_t(in) * hid, 1));
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
      // Every rank takes the same step. The losses stay on the devices until the loop ends: a
      // copy to the host here would make every step wait for the GPUs (and the timing show it).
      for (Rank& k : ranks) {
        CUDALAB_CHECK(cudaSetDevice(k.device));
        sgd_kernel<<<blocks_for(params), kBlock, 0, k.compute>>>(k.p.data(), k.g.data(), params,
                                                                 c.lr);
        CUDALAB_CHECK_LAUNCH();
      }
    }
    if (step_seconds && c.steps >= 2)
      *step_seconds =
          std::chrono::duration<double>(all_ranks_idle() - timed_from).count() / (c.steps - 1);
    // The loss before each step, summed over ranks in rank order on the host; after this loop every
    // rank is idle (a rank's comm work is joined into its compute stream).
    losses.assign(static_cast<std::size_t>(c.steps), 0.0f);
    for (Rank& k : ranks) {
      CUDALAB_CHECK(cudaSetDevice(k.device));
      CUDALAB_CHECK(cudaStreamSynchronize(k.compute));
      const std::vector<float> part = k.loss.to_host();
      for (int step = 0; step < c.steps; ++step) losses[step] += part[step];
    }
    // Every replica must hold the same parameters.
    if (n > 1) {
      CUDALAB_CHECK(cudaSetDevice(ranks[0].device));
      const std::vector<float> p0 = ranks[0].p.to_host();
      for (int r = 1; r < n; ++r) {
        CUDALAB_CHECK(cudaSetDevice(ranks[r].device));
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
