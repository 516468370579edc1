// Starter track — write your code at the TODO marks; the tests of each exercise
// fail until you do. (Generated from chapters/01_serving_latency/reference/block.cu by scripts/variants.py.)
// The FFN block three ways. Eager: one kernel per op, as a framework dispatches it — LayerNorm,
// GEMM, bias add, GELU, GEMM, bias add, residual add — with a host round trip after each op (the
// Python interpreter waiting on a result, a .item(), a shape check) and, in kEagerAlloc, a
// cudaMalloc/cudaFree per intermediate (a framework without a caching allocator). Fused: the bias,
// GELU and residual ride in the GEMMs' epilogues: 3 kernels, and the elementwise ops stop reading
// and writing the activations from DRAM. The graph path (graph_cache.cu) replays the fused forward.
#include "ch01/ch01.hpp"
#include "cudalab/block_reduce.cuh"
#include "cudalab/check.hpp"
#include "cudalab/nvtx.hpp"

namespace cudalab::ch01 {
namespace {

constexpr const char* kEagerOps[7] = {"LayerNorm", "GEMM 1", "bias 1",  "GELU",
                                      "GEMM 2",    "bias 2", "residual"};

constexpr int kRowThreads = 256;  // LayerNorm: one block per row
constexpr int kEw = 256;          // elementwise kernels

// Pointer checks: cudaPointerGetAttributes is a driver query we keep out of stream captures (a
// call the driver refuses while capturing would invalidate the capture), so a capturing stream
// gets the null check only; the pointers were checked when the graph's first forward was validated.
void require_pointer(const void* p, std::size_t n, const char* name, cudaStream_t s) {
  cudaStreamCaptureStatus status = cudaStreamCaptureStatusNone;
  if (s != nullptr) CUDALAB_CHECK(cudaStreamIsCapturing(s, &status));
  if (status == cudaStreamCaptureStatusNone) {
    require_device_pointer(p, n, name);
  } else {
    require(n == 0 || p != nullptr, name, "null pointer with elements to process");
  }
}

__global__ void __launch_bounds__(kRowThreads)
    layernorm_kernel(const float* __restrict__ x, const float* __restrict__ gamma,
                     const float* __restrict__ beta, float* __restrict__ y, int d) {
  __shared__ float shared[kRowThreads / 32];
  const float* xr = x + static_cast<std::size_t>(blockIdx.x) * d;
  float* yr = y + static_cast<std::size_t>(blockIdx.x) * d;
  float s = 0.0f;
  for (int i = threadIdx.x; i < d; i += blockDim.x) s += xr[i];
  const float mean = block_sum(s, shared) / static_cast<float>(d);
  float v = 0.0f;
  for (int i = threadIdx.x; i < d; i += blockDim.x) v += (xr[i] - mean) * (xr[i] - mean);
  const float inv = rsqrtf(block_sum(v, shared) / static_cast<float>(d) + kLayerNormEps);
  for (int i = threadIdx.x; i < d; i += blockDim.x)
    yr[i] = (xr[i] - mean) * inv * gamma[i] + beta[i];
}

enum class Epilogue { kNone, kBiasGelu, kBiasResidual };

// Exercise 1.1: the epilogue, the one store of each output element (its contract is below).
template <Epilogue E>
__device__ __forceinline__ void store(float acc, const float* __restrict__ bias,
                                      const float* __restrict__ res, float* __restrict__ C,
                                      std::size_t at, int o) {
  // TODO(1.1): contract — each output element is stored once: kNone stores the accumulated sum
  //            as it is; kBiasGelu stores the GELU (ch01.hpp's tanh form) of the sum plus the
  //            output column's bias entry; kBiasResidual stores the sum plus that bias entry plus
  //            the residual element of the same (row, column). The epilogue is resolved at compile
  //            time: the kNone instantiation reads neither pointer (the eager path passes null).
  //            Constraints: one store per output element, no extra pass over C (that extra pass is
  //            exactly what the eager path pays three times). Goal (bench/ch01/ch01.toml):
  //            BM_block/fused/batch:1 >= 2.8x faster than BM_block/eager/batch:1 (scripts/lab
  //            check 1.1); aim: the fused kernel time below the eager one at every batch. Hints:
  //            scripts/lab hint 1.1
  (void)bias; (void)res; (void)o;
  C[at] = acc;
}

// C[b][o] = epilogue(sum_i A[b][i] W[o][i]) for b < batch, o < out. Serving batches are small
// (1-64 rows) and the weights are the bytes: at batch 1 each GEMM is a matrix-vector product that
// should run at the speed of reading W once. Reading W once is not enough: the loads must also be
// in flight together. A block owns kCols output columns and kRows batch rows (grid.y covers the
// batch); kSplit warps share each column, warp p reading W's row o at p * 32 + lane, then every
// 32 * kSplit floats (coalesced, 512 bytes per step for the column's kSplit warps), and keeping
// kRows partial sums. A butterfly of shuffles adds a warp's lanes, shared memory adds the kSplit
// warps, and lane r of the column's first warp stores row r (the epilogue, exercise 1.1). A's
// rows (a few KiB) stay in cache; W's row is read once per kRows batch rows.
// The previous version (one warp per column looping over the batch, 4 columns a block) left 128
// blocks of 4 warps for the second GEMM (512 outputs): each warp walked its 2048-float row in 64
// dependent steps, and at batch 64 eight times over: latency-bound (the fused forward at batch 64
// took several times its batch-1 time). Before it, a 16 x 16 shared-tile kernel
// was latency-bound at batch 1 (32 to 128 dependent tile steps, two barriers each).
constexpr int kRows = 8;   // batch rows per block (grid.y = ceil(batch / kRows))
constexpr int kSplit = 4;  // warps per output column, each a quarter of the input row
constexpr int kCols = 2;   // output columns per block
constexpr int kGemmThreads = kCols * kSplit * 32;
template <Epilogue E>
__global__ void __launch_bounds__(kGemmThreads)
    gemm_kernel(const float* __restrict__ A, const float* __restrict__ W,
                const float* __restrict__ bias, const float* __restrict__ res,
                float* __restrict__ C, int batch, int in, int out) {
  __shared__ float partial[kCols][kSplit][kRows];
  const int lane = threadIdx.x & 31, warp = static_cast<int>(threadIdx.x >> 5);
  const int col = warp / kSplit, part = warp % kSplit;
  const int o = blockIdx.x * kCols + col;
  const int b0 = static_cast<int>(blockIdx.y) * kRows;
  const int rows = min(kRows, batch - b0);
  float acc[kRows] = {};
  if (o < out) {  // the same for the whole warp: full warps in the shuffles
    const float* w = W + static_cast<std::size_t>(o) * in;
    const float* a = A + static_cast<std::size_t>(b0) * in;
#pragma unroll 4
    for (int i = part * 32 + lane; i < in; i += 32 * kSplit) {
      const float wi = w[i];
#pragma unroll
      for (int r = 0; r < kRows; ++r)
        if (r < rows) acc[r] = fmaf(a[static_cast<std::size_t>(r) * in + i], wi, acc[r]);
    }
#pragma unroll
    for (int r = 0; r < kRows; ++r)
      for (int off = 16; off > 0; off >>= 1) acc[r] += __shfl_xor_sync(0xffffffffu, acc[r], off);
  }
  if (lane == 0) {
#pragma unroll
    for (int r = 0; r < kRows; ++r) partial[col][part][r] = acc[r];
  }
  __syncthreads();
  if (part == 0 && o < out && lane < rows) {
    float sum = 0.0f;
#pragma unroll
    for (int p = 0; p < kSplit; ++p) sum += partial[col][p][lane];
    store<E>(sum, bias, res, C, static_cast<std::size_t>(b0 + lane) * out + o, o);
  }
}

__global__ void __launch_bounds__(kEw)
    bias_add_kernel(float* __restrict__ y, const float* __restrict__ bias, std::size_t n, int out) {
  const std::size_t i = std::size_t{blockIdx.x} * blockDim.x + threadIdx.x;
  if (i < n) y[i] += bias[i % static_cast<std::size_t>(out)];
}
__global__ void __launch_bounds__(kEw) gelu_kernel(float* __restrict__ y, std::size_t n) {
  const std::size_t i = std::size_t{blockIdx.x} * blockDim.x + threadIdx.x;
  if (i < n) y[i] = gelu(y[i]);
}
__global__ void __launch_bounds__(kEw)
    residual_add_kernel(const float* __restrict__ x, const float* __restrict__ t,
                        float* __restrict__ y, std::size_t n) {
  const std::size_t i = std::size_t{blockIdx.x} * blockDim.x + threadIdx.x;
  if (i < n) y[i] = x[i] + t[i];
}

unsigned ew_blocks(std::size_t n) {
  return static_cast<unsigned>((n + kEw - 1) / kEw);
}

template <Epilogue E>
void gemm(const float* A, const float* W, const float* bias, const float* res, float* C, int batch,
          int in, int out, cudaStream_t s) {
  const dim3 grid(static_cast<unsigned>((out + kCols - 1) / kCols),
                  static_cast<unsigned>((batch + kRows - 1) / kRows));
  gemm_kernel<E><<<grid, kGemmThreads, 0, s>>>(A, W, bias, res, C, batch, in, out);
  CUDALAB_CHECK_LAUNCH_ASYNC();  // these launches may be captured into a graph
}

}  // namespace

Block::Block(const BlockWeights& w, int max_batch) : shape_(w.shape), max_batch_(max_batch) {
  require(max_batch >= 1 && max_batch <= 65535 * kRows, "max_batch",
          "must be in [1, 524280] (the GEMMs' grid.y covers the batch in rows of 8)");
  const auto d = static_cast<std::size_t>(shape_.d), h = static_cast<std::size_t>(shape_.hidden);
  require(shape_.d >= 1 && shape_.hidden >= 1, "w", "shape.d and shape.hidden must be >= 1");
  require(w.gamma.size() == d && w.beta.size() == d && w.w1.size() == h * d && w.b1.size() == h &&
              w.w2.size() == d * h && w.b2.size() == d,
          "w", "weight sizes do not match w.shape (make them with block_weights)");
  gamma_ = to_device(w.gamma);
  beta_ = to_device(w.beta);
  w1_ = to_device(w.w1);
  b1_ = to_device(w.b1);
  w2_ = to_device(w.w2);
  b2_ = to_device(w.b2);
  const auto m = static_cast<std::size_t>(max_batch);
  ln_ = DeviceBuffer<float>(m * d);
  h_ = DeviceBuffer<float>(m * h);
  o_ = DeviceBuffer<float>(m * d);
  // The uploads above are cudaMemcpy from pageable memory on the legacy default stream: such a
  // copy may return once the data sits in the driver's staging buffer, before its DMA has landed,
  // and a forward on a non-blocking stream is not ordered after the legacy stream. Wait for them
  // here, once, so that no forward can read weights still in flight.
  CUDALAB_CHECK(cudaStreamSynchronize(cudaStreamLegacy));
}

Block::~Block() {
  for (auto& [key, exec] : graphs_) cudaGraphExecDestroy(exec);
}

int Block::steps(Mode mode) const {
  return mode == Mode::kEager || mode == Mode::kEagerAlloc ? 7 : 3;
}
int Block::host_syncs(Mode mode) const {
  return mode == Mode::kEager || mode == Mode::kEagerAlloc ? 7 : 0;
}

void Block::run_step(Mode mode, int step, const float* x, float* y, int batch, cudaStream_t s) {
  require(step >= 0 && step < steps(mode), "step", "must be in [0, steps(mode))");
  require(batch >= 1 && batch <= max_batch_, "batch", "must be in [1, max_batch]");
  const int d = shape_.d, hid = shape_.hidden;
  require_pointer(x, static_cast<std::size_t>(batch) * d, "x", s);
  require_pointer(y, static_cast<std::size_t>(batch) * d, "y", s);
  const std::size_t nd = static_cast<std::size_t>(batch) * d,
                    nh = static_cast<std::size_t>(batch) * hid;
  if (mode == Mode::kEager || mode == Mode::kEagerAlloc) {
    switch (step) {
      case 0:
        layernorm_kernel<<<static_cast<unsigned>(batch), kRowThreads, 0, s>>>(
            x, gamma_.data(), beta_.data(), ln_.data(), d);
        break;
      case 1:
        gemm<Epilogue::kNone>(ln_.data(), w1_.data(), nullptr, nullptr, h_.data(), batch, d, hid,
                              s);
        break;
      case 2:
        bias_add_kernel<<<ew_blocks(nh), kEw, 0, s>>>(h_.data(), b1_.data(), nh, hid);
        break;
      case 3:
        gelu_kernel<<<ew_blocks(nh), kEw, 0, s>>>(h_.data(), nh);
        break;
      case 4:
        gemm<Epilogue::kNone>(h_.data(), w2_.data(), nullptr, nullptr, o_.data(), batch, hid, d, s);
        break;
      case 5:
        bias_add_kernel<<<ew_blocks(nd), kEw, 0, s>>>(o_.data(), b2_.data(), nd, d);
        break;
      default:
        residual_add_kernel<<<ew_blocks(nd), kEw, 0, s>>>(x, o_.data(), y, nd);
        break;
    }
  } else {
    switch (step) {
      case 0:
        layernorm_kernel<<<static_cast<unsigned>(batch), kRowThreads, 0, s>>>(
            x, gamma_.data(), beta_.data(), ln_.data(), d);
        break;
      case 1:
        gemm<Epilogue::kBiasGelu>(ln_.data(), w1_.data(), b1_.data(), nullptr, h_.data(), batch, d,
                                  hid, s);
        break;
      default:
        gemm<Epilogue::kBiasResidual>(h_.data(), w2_.data(), b2_.data(), x, y, batch, hid, d, s);
        break;
    }
  }
  CUDALAB_CHECK_LAUNCH_ASYNC();  // these launches may be captured into a graph
}

void Block::forward(Mode mode, const float* x, float* y, int batch, cudaStream_t stream) {
  require(mode == Mode::kEagerAlloc || mode == Mode::kEager || mode == Mode::kFused ||
              mode == Mode::kGraph,
          "mode", "unknown mode");
  require(batch >= 1 && batch <= max_batch_, "batch", "must be in [1, max_batch]");
  require_device_pointer(x, static_cast<std::size_t>(batch) * shape_.d, "x");
  require_device_pointer(y, static_cast<std::size_t>(batch) * shape_.d, "y");
  NvtxRange range(mode_name(mode));
  if (mode == Mode::kGraph) {
    require(stream != nullptr, "stream",
            "the legacy default stream cannot be captured: use a created stream");
    forward_graph(x, y, batch, stream);
    return;
  }
  if (mode == Mode::kFused) {
    for (int k = 0; k < 3; ++k) run_step(mode, k, x, y, batch, stream);
    return;
  }
  if (mode == Mode::kEager) {
    for (int k = 0; k < 7; ++k) {
      NvtxRange op(kEagerOps[k]);
      run_step(mode, k, x, y, batch, stream);
      CUDALAB_CHECK(cudaStreamSynchronize(stream));  // the framework looks at the result
    }
    return;
  }
  // kEagerAlloc: the same ops, each intermediate allocated before the op that writes it and freed
  // after its last reader. The kernels write the Block's buffers (same kernel time as kEager); the
  // allocations are real and sized like the intermediates, so their cost is what is measured.
  const std::size_t nd = static_cast<std::size_t>(batch) * shape_.d,
                    nh = static_cast<std::size_t>(batch) * shape_.hidden;
  auto alloc = [](std::size_t n) {
    void* p = nullptr;
    CUDALAB_CHECK(cudaMalloc(&p, n * sizeof(float)));
    return p;
  };
  void* ln = alloc(nd);
  run_step(mode, 0, x, y, batch, stream);
  CUDALAB_CHECK(cudaStreamSynchronize(stream));
  void* h = alloc(nh);
  run_step(mode, 1, x, y, batch, stream);
  CUDALAB_CHECK(cudaStreamSynchronize(stream));
  CUDALAB_CHECK(cudaFree(ln));
  for (int k = 2; k <= 3; ++k) {
    run_step(mode, k, x, y, batch, stream);
    CUDALAB_CHECK(cudaStreamSynchronize(stream));
  }
  void* o = alloc(nd);
  run_step(mode, 4, x, y, batch, stream);
  CUDALAB_CHECK(cudaStreamSynchronize(stream));
  CUDALAB_CHECK(cudaFree(h));
  for (int k = 5; k <= 6; ++k) {
    run_step(mode, k, x, y, batch, stream);
    CUDALAB_CHECK(cudaStreamSynchronize(stream));
  }
  CUDALAB_CHECK(cudaFree(o));
}

}  // namespace cudalab::ch01
