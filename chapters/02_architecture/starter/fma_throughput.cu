// Starter track — write your code at the TODO marks; the tests of each exercise
// fail until you do. (Generated from chapters/02_architecture/reference/fma_throughput.cu by scripts/variants.py.)
// Exercise 2.1 — FMA throughput: the CUDA-core rows of the sheet (FP32, FP64), measured.
//
// What it computes: each thread keeps ILP independent accumulators x_j = (t % 1024) + j and
// applies x_j = fma(x_j, a, b) `iterations` times to each, then writes sum_j x_j (exact with
// a = b = 1: integers below 2^24). No memory traffic inside the loop: the FMA pipes alone.
// Launch shape: blocks x threads (a multiple of 32, at most kMaxThreads); the benchmark sizes
// the grid to a given number of resident warps per SM.
//
// Why ILP: an FMA's result is ready ~4 cycles after issue on Ampere/Hopper. A scheduler that has
// one warp with one chain issues an FMA every 4 cycles: 1/4 of its lanes' peak. Four independent
// chains per warp (or four warps per scheduler) keep it issuing every cycle: Little's law again,
// with instructions in flight instead of bytes. The benchmark rows sweep ILP x resident warps
// (the "warps hide latency" heatmap); the clock-adjusted peak is SMs x 2 x lanes x SM clock.
// Loop overhead (the counter, the branch) takes issue slots too: the inner loop is unrolled so
// that it costs a few percent.
#include "ch02/ch02.hpp"
#include "cudalab/check.hpp"

namespace cudalab::ch02 {
namespace {

constexpr int kMaxThreads = 1024;  // drives __launch_bounds__ and the argument check
constexpr int kUnroll = 16;        // iterations per loop trip: overhead ~3 / (16 ILP) issue slots

template <class T, int ILP>
__global__ void __launch_bounds__(kMaxThreads)
    fma_kernel(T* __restrict__ out, int iterations, T a, T b) {
  const std::size_t t = blockIdx.x * static_cast<std::size_t>(blockDim.x) + threadIdx.x;
  // TODO(2.1): the FMA loop that reaches >= 90% of the clock-adjusted peak at 4 warps per SM.
  //   Contract: ILP accumulators x_j = T(t % 1024) + T(j), j < ILP; `iterations` times, for every
  //     j, x_j = fma(x_j, a, b); then out[t] = x_0 + x_1 + ... + x_{ILP-1}.
  //   Constraints: the ILP chains must be independent (no x_j reads another x_k inside the loop);
  //     a and b stay kernel arguments (a constant lets the compiler fold the loop away); keep the
  //     loop overhead small (#pragma unroll kUnroll on the iteration loop, full unroll over j).
  //   Goal: BM_fma_f32/ilp:8/warps:4 >= 1.05x cuBLAS SGEMM (bench/ch02/ch02.toml), i.e. ~90% of the
  //     peak the card prints. One chain (ILP = 1) is correct and reaches ~1/4 at 4 warps/SM.
  out[t] = T(0) * kUnroll;  // replace with the ILP loop
}

void check_shape(const void* out, int blocks, int threads, int ilp, int iterations) {
  require(out != nullptr, "out", "must not be null");
  require(blocks >= 1, "blocks", "must be >= 1");
  require(threads >= 32 && threads <= kMaxThreads && threads % 32 == 0, "threads",
          "must be a multiple of 32 in [32, 1024]");
  require(ilp == 1 || ilp == 2 || ilp == 4 || ilp == 8, "ilp", "must be 1, 2, 4 or 8");
  require(iterations >= 1 && iterations <= (1 << 20), "iterations",
          "must be in [1, 2^20] (the result stays an exact integer below 2^24)");
}

template <class T>
void launch(T* out, int blocks, int threads, int ilp, int iterations, T a, T b,
            cudaStream_t stream) {
  check_shape(out, blocks, threads, ilp, iterations);
  switch (ilp) {
    case 1:
      fma_kernel<T, 1><<<blocks, threads, 0, stream>>>(out, iterations, a, b);
      break;
    case 2:
      fma_kernel<T, 2><<<blocks, threads, 0, stream>>>(out, iterations, a, b);
      break;
    case 4:
      fma_kernel<T, 4><<<blocks, threads, 0, stream>>>(out, iterations, a, b);
      break;
    default:
      fma_kernel<T, 8><<<blocks, threads, 0, stream>>>(out, iterations, a, b);
      break;
  }
  CUDALAB_CHECK_LAUNCH();
}

}  // namespace

void fma_throughput_f32(float* out, int blocks, int threads, int ilp, int iterations, float a,
                        float b, cudaStream_t stream) {
  launch(out, blocks, threads, ilp, iterations, a, b, stream);
}

void fma_throughput_f64(double* out, int blocks, int threads, int ilp, int iterations, double a,
                        double b, cudaStream_t stream) {
  launch(out, blocks, threads, ilp, iterations, a, b, stream);
}

namespace {
template <class T>
const void* fma_kernel_of(int ilp) {
  switch (ilp) {
    case 1:
      return reinterpret_cast<const void*>(fma_kernel<T, 1>);
    case 2:
      return reinterpret_cast<const void*>(fma_kernel<T, 2>);
    case 4:
      return reinterpret_cast<const void*>(fma_kernel<T, 4>);
    default:
      return reinterpret_cast<const void*>(fma_kernel<T, 8>);
  }
}
}  // namespace

int fma_resident_warps(bool fp64, int ilp, int threads) {
  require(ilp == 1 || ilp == 2 || ilp == 4 || ilp == 8, "ilp", "must be 1, 2, 4 or 8");
  require(threads >= 32 && threads <= kMaxThreads, "threads", "must be in [32, 1024]");
  int blocks = 0;
  CUDALAB_CHECK(cudaOccupancyMaxActiveBlocksPerMultiprocessor(
      &blocks, fp64 ? fma_kernel_of<double>(ilp) : fma_kernel_of<float>(ilp), threads, 0));
  return blocks * ((threads + 31) / 32);
}

double fma_expected(std::size_t t, int ilp, int iterations) {
  // sum_j ((t % 1024) + j + iterations): each x_j gains b = 1 per iteration.
  return static_cast<double>(ilp) * static_cast<double>(t % 1024) + ilp * (ilp - 1) / 2.0 +
         static_cast<double>(ilp) * iterations;
}

double fma_flops(int blocks, int threads, int ilp, int iterations) {
  // The lesson: an FMA is 2 FLOP, counted once. Counting 4 (a multiply and an add "per operand")
  // doubles every TFLOP/s: the card's 102% guard fails the rows on a GPU, and
  // FmaFlops.TwoFlopPerFma fails on the CPU. Fix: 2.0.
  return 2.0 * blocks * threads * static_cast<double>(ilp) * iterations;  // 2 FLOP per FMA
}

}  // namespace cudalab::ch02
