// Chapter 10 — the mini autograd's GPU backend: every op a kernel of the lab's (the fused
// bias + GELU of 10.1/10.2 included) on one stream, memory from the stream-ordered pool
// (cudaMallocAsync, chapter 7) so that a tensor's allocation is not a cudaMalloc: what PyTorch's
// caching allocator buys it. The GEMM is a 16 x 16 shared-memory tiled kernel (chapter 4's
// technique, with both transposes), enough for the small MLP of the tests and the per-op overhead
// benchmark; chapter 6 has the fast ones.
#include <algorithm>
#include <memory>
#include <stdexcept>
#include <string>

#include "ch10/autograd.hpp"
#include "ch10/bias_gelu.hpp"
#include "cudalab/block_reduce.cuh"
#include "cudalab/check.hpp"
#include "cudalab/device.hpp"
#include "cudalab/math.hpp"

namespace cudalab::ch10::ag {
namespace {

constexpr unsigned kTile = 16;  // GEMM tile: kTile x kTile threads, one output each
constexpr unsigned kBlock = 256;
static_assert(kTile * kTile == kBlock);
constexpr unsigned kMaxGrid = 65535;

__global__ void __launch_bounds__(kBlock)
    gemm_kernel(bool ta, bool tb, std::size_t m, std::size_t n, std::size_t k,
                const float* __restrict__ a, const float* __restrict__ b, float beta,
                float* __restrict__ c) {
  __shared__ float as[kTile][kTile + 1];  // (row of C, k): +1 column, no bank conflicts
  __shared__ float bs[kTile][kTile + 1];  // (k, column of C)
  const std::size_t row = std::size_t{blockIdx.y} * kTile + threadIdx.y;
  const std::size_t col = std::size_t{blockIdx.x} * kTile + threadIdx.x;
  float acc = 0.0f;
  for (std::size_t k0 = 0; k0 < k; k0 += kTile) {
    const std::size_t ka = k0 + threadIdx.x, kb = k0 + threadIdx.y;
    as[threadIdx.y][threadIdx.x] =
        row < m && ka < k ? (ta ? a[ka * m + row] : a[row * k + ka]) : 0.0f;
    bs[threadIdx.y][threadIdx.x] =
        kb < k && col < n ? (tb ? b[col * k + kb] : b[kb * n + col]) : 0.0f;
    __syncthreads();  // the tiles are loaded before any thread reads them
    for (unsigned p = 0; p < kTile; ++p) acc += as[threadIdx.y][p] * bs[p][threadIdx.x];
    __syncthreads();  // every read of this tile is done before the next load overwrites it
  }
  if (row < m && col < n) c[row * n + col] = acc + (beta == 0.0f ? 0.0f : beta * c[row * n + col]);
}

__global__ void __launch_bounds__(kBlock)
    add_bias_kernel(const float* x, const float* __restrict__ bias, float* y, std::size_t rows,
                    std::size_t cols) {
  const std::size_t n = rows * cols, stride = std::size_t{gridDim.x} * kBlock;
  for (std::size_t i = std::size_t{blockIdx.x} * kBlock + threadIdx.x; i < n; i += stride)
    y[i] = x[i] + bias[i % cols];
}

__global__ void __launch_bounds__(kBlock)
    column_sum_kernel(const float* __restrict__ x, float* __restrict__ out, std::size_t rows,
                      std::size_t cols) {
  const std::size_t c = std::size_t{blockIdx.x} * kBlock + threadIdx.x;
  if (c >= cols) return;
  float s = 0.0f;
  for (std::size_t r = 0; r < rows; ++r) s += x[r * cols + c];  // coalesced across threads
  out[c] = s;
}

__global__ void __launch_bounds__(kBlock)
    axpy_kernel(float alpha, const float* x, float* y, std::size_t n) {
  const std::size_t stride = std::size_t{gridDim.x} * kBlock;
  for (std::size_t i = std::size_t{blockIdx.x} * kBlock + threadIdx.x; i < n; i += stride)
    y[i] += alpha * x[i];
}

__global__ void __launch_bounds__(kBlock)
    add_kernel(const float* a, const float* b, float alpha, float* out, std::size_t n) {
  const std::size_t stride = std::size_t{gridDim.x} * kBlock;
  for (std::size_t i = std::size_t{blockIdx.x} * kBlock + threadIdx.x; i < n; i += stride)
    out[i] = a[i] + alpha * b[i];
}

__global__ void __launch_bounds__(kBlock) fill_kernel(float* p, std::size_t n, float v) {
  const std::size_t stride = std::size_t{gridDim.x} * kBlock;
  for (std::size_t i = std::size_t{blockIdx.x} * kBlock + threadIdx.x; i < n; i += stride) p[i] = v;
}

// One block: the whole sum (the tensors of the autograd are small; a loss is a scalar).
__global__ void __launch_bounds__(kBlock)
    sum_kernel(const float* __restrict__ x, std::size_t n, float* __restrict__ out) {
  __shared__ float shared[kBlock / 32];
  float s = 0.0f;
  for (std::size_t i = threadIdx.x; i < n; i += kBlock) s += x[i];
  s = block_sum(s, shared);
  if (threadIdx.x == 0) *out = s;
}

unsigned grid_for(std::size_t n) {
  return static_cast<unsigned>(
      std::max<std::size_t>(1, std::min<std::size_t>(ceil_div<std::size_t>(n, kBlock), 4096)));
}

class GpuBackend final : public Backend {
 public:
  GpuBackend() {
    if (!has_gpu()) throw std::runtime_error("ag::gpu_backend: no GPU (" + no_gpu_reason() + ")");
    CUDALAB_CHECK(cudaStreamCreateWithFlags(&stream_, cudaStreamNonBlocking));
  }
  ~GpuBackend() override {
    if (workspace_) cudaFreeAsync(workspace_, stream_);
    if (scalar_) cudaFreeAsync(scalar_, stream_);
    cudaStreamSynchronize(stream_);
    cudaStreamDestroy(stream_);
  }
  GpuBackend(const GpuBackend&) = delete;
  GpuBackend& operator=(const GpuBackend&) = delete;

  const char* name() const override { return "gpu"; }
  float* allocate(std::size_t n) override {
    if (n == 0) return nullptr;
    void* p = nullptr;
    CUDALAB_CHECK(cudaMallocAsync(&p, n * sizeof(float), stream_));
    return static_cast<float*>(p);
  }
  void release(float* p) noexcept override {
    if (p) cudaFreeAsync(p, stream_);  // a destructor path: no throw
  }
  void upload(float* dst, const float* host, std::size_t n) override {
    if (n == 0) return;
    CUDALAB_CHECK(cudaMemcpyAsync(dst, host, n * sizeof(float), cudaMemcpyHostToDevice, stream_));
    CUDALAB_CHECK(cudaStreamSynchronize(stream_));  // `host` may go away after the call
  }
  void download(float* host, const float* src, std::size_t n) override {
    if (n == 0) return;
    CUDALAB_CHECK(cudaMemcpyAsync(host, src, n * sizeof(float), cudaMemcpyDeviceToHost, stream_));
    CUDALAB_CHECK(cudaStreamSynchronize(stream_));
  }
  void fill(float* p, std::size_t n, float v) override {
    if (n == 0) return;
    fill_kernel<<<grid_for(n), kBlock, 0, stream_>>>(p, n, v);
    CUDALAB_CHECK_LAUNCH();
  }
  void gemm(bool ta, bool tb, std::size_t m, std::size_t n, std::size_t k, const float* a,
            const float* b, float beta, float* c) override {
    if (m == 0 || n == 0) return;
    const std::size_t gx = ceil_div<std::size_t>(n, kTile), gy = ceil_div<std::size_t>(m, kTile);
    require(gx <= 0x7FFFFFFF && gy <= kMaxGrid, "m", "GEMM too large for the backend's grid");
    gemm_kernel<<<dim3(static_cast<unsigned>(gx), static_cast<unsigned>(gy)), dim3(kTile, kTile), 0,
                  stream_>>>(ta, tb, m, n, k, a, b, beta, c);
    CUDALAB_CHECK_LAUNCH();
  }
  void add_bias(const float* x, const float* bias, float* y, std::size_t rows,
                std::size_t cols) override {
    if (rows * cols == 0) return;
    add_bias_kernel<<<grid_for(rows * cols), kBlock, 0, stream_>>>(x, bias, y, rows, cols);
    CUDALAB_CHECK_LAUNCH();
  }
  void bias_gelu(const float* x, const float* bias, float* y, std::size_t rows,
                 std::size_t cols) override {
    bias_gelu_forward<float>(x, cols, bias, y, cols, rows, cols, Gelu::kErf, stream_);
  }
  void bias_gelu_backward(const float* dy, const float* x, const float* bias, float* dx,
                          float* dbias, std::size_t rows, std::size_t cols) override {
    const std::size_t need = bias_gelu_backward_workspace_bytes(cols);
    if (need > workspace_bytes_) {
      if (workspace_) CUDALAB_CHECK(cudaFreeAsync(workspace_, stream_));
      workspace_ = nullptr;
      CUDALAB_CHECK(cudaMallocAsync(&workspace_, need, stream_));
      workspace_bytes_ = need;
    }
    ch10::bias_gelu_backward<float>(dy, cols, x, cols, bias, dx, cols, dbias, rows, cols,
                                    workspace_, workspace_bytes_, Gelu::kErf, stream_);
  }
  void column_sum(const float* x, float* out, std::size_t rows, std::size_t cols) override {
    if (cols == 0) return;
    column_sum_kernel<<<static_cast<unsigned>(ceil_div<std::size_t>(cols, kBlock)), kBlock, 0,
                        stream_>>>(x, out, rows, cols);
    CUDALAB_CHECK_LAUNCH();
  }
  void axpy(float alpha, const float* x, float* y, std::size_t n) override {
    if (n == 0) return;
    axpy_kernel<<<grid_for(n), kBlock, 0, stream_>>>(alpha, x, y, n);
    CUDALAB_CHECK_LAUNCH();
  }
  void add(const float* a, const float* b, float alpha, float* out, std::size_t n) override {
    if (n == 0) return;
    add_kernel<<<grid_for(n), kBlock, 0, stream_>>>(a, b, alpha, out, n);
    CUDALAB_CHECK_LAUNCH();
  }
  double sum(const float* x, std::size_t n) override {
    if (!scalar_) CUDALAB_CHECK(cudaMallocAsync(&scalar_, sizeof(float), stream_));
    sum_kernel<<<1, kBlock, 0, stream_>>>(x, n, scalar_);
    CUDALAB_CHECK_LAUNCH();
    float h = 0.0f;
    download(&h, scalar_, 1);  // the host needs the value: a sync, as .item() is in PyTorch
    return h;
  }
  void synchronize() override { CUDALAB_CHECK(cudaStreamSynchronize(stream_)); }

 private:
  cudaStream_t stream_ = nullptr;
  void* workspace_ = nullptr;
  std::size_t workspace_bytes_ = 0;
  float* scalar_ = nullptr;
};

}  // namespace

std::unique_ptr<Backend> gpu_backend() {
  return std::make_unique<GpuBackend>();
}

}  // namespace cudalab::ch10::ag
