// Exercise 7.2 — events as dependencies between streams: fork one input to two streams, join.
//
// A stream is a queue; two streams are two queues with no order between them. An event recorded in
// stream A marks a point in A's queue; cudaStreamWaitEvent(B, event) makes everything enqueued in B
// afterwards wait until A reaches that point — on the GPU, without the host waiting. That is how a
// DAG of work is spread over streams (and how stream capture turns it into a graph's edges).
#include "ch07/ch07.hpp"
#include "cudalab/check.hpp"
#include "cudalab/stream.hpp"

namespace cudalab::ch07 {
namespace {

__global__ void __launch_bounds__(kBlock)
    square_kernel(const float* __restrict__ x, float* __restrict__ a, std::size_t n) {
  const std::size_t i = std::size_t{blockIdx.x} * blockDim.x + threadIdx.x;
  if (i < n) a[i] = x[i] * x[i];
}
__global__ void __launch_bounds__(kBlock)
    affine_kernel(const float* __restrict__ x, float* __restrict__ b, std::size_t n) {
  const std::size_t i = std::size_t{blockIdx.x} * blockDim.x + threadIdx.x;
  if (i < n) b[i] = fmaf(2.0f, x[i], 1.0f);
}
__global__ void __launch_bounds__(kBlock)
    add_kernel(const float* __restrict__ a, const float* __restrict__ b, float* __restrict__ out,
               std::size_t n) {
  const std::size_t i = std::size_t{blockIdx.x} * blockDim.x + threadIdx.x;
  if (i < n) out[i] = a[i] + b[i];
}

unsigned grid_for(std::size_t n) {
  const std::size_t blocks = (n + kBlock - 1) / kBlock;
  require(blocks <= 0x7FFFFFFFu, "n", "needs more than 2^31 - 1 blocks");
  return static_cast<unsigned>(blocks);
}

// The three kernels, launched and checked (the exercise is the ordering, not the kernels).
void launch_square(const float* x, float* a, std::size_t n, cudaStream_t s) {
  square_kernel<<<grid_for(n), kBlock, 0, s>>>(x, a, n);
  CUDALAB_CHECK_LAUNCH();
}
void launch_affine(const float* x, float* b, std::size_t n, cudaStream_t s) {
  affine_kernel<<<grid_for(n), kBlock, 0, s>>>(x, b, n);
  CUDALAB_CHECK_LAUNCH();
}
void launch_add(const float* a, const float* b, float* out, std::size_t n, cudaStream_t s) {
  add_kernel<<<grid_for(n), kBlock, 0, s>>>(a, b, out, n);
  CUDALAB_CHECK_LAUNCH();
}

}  // namespace

void fork_join(const float* x, float* a, float* b, float* out, std::size_t n, cudaStream_t main,
               cudaStream_t side0, cudaStream_t side1) {
  require(main != nullptr, "main", "use a created stream (the legacy default stream serializes)");
  require(side0 != nullptr, "side0", "use a created stream");
  require(side1 != nullptr, "side1", "use a created stream");
  require(main != side0 && main != side1 && side0 != side1, "side0",
          "the three streams must be different (one stream cannot fork)");
  require_device_pointer(x, n, "x");
  require_device_pointer(a, n, "a");
  require_device_pointer(b, n, "b");
  require_device_pointer(out, n, "out");
  if (n == 0) return;
  // BEGIN EXERCISE 7.2
  // TODO(7.2): contract — a = x*x with launch_square on side0 and b = 2x+1 with launch_affine on
  //            side1, both starting only once everything the caller enqueued on `main` before the
  //            call is done (x is produced there); then out = a + b with launch_add on `main`,
  //            starting only once both side kernels are done, so that work the caller enqueues on
  //            `main` afterwards sees out.
  //            Constraints: no host wait (no synchronize of any kind, no cudaStreamQuery loop); the
  //            ordering is expressed on the GPU. The tests hold each stream in turn with a Gate and
  //            check that nothing starts early. Hints: scripts/lab hint 7.2
  // STARTER: (void)launch_square; (void)launch_affine; (void)launch_add;
  // STARTER: throw NotImplemented("Exercise 7.2: fork_join (chapters/07_streams_graphs/starter/events.cu)");
  // Events only order: no timestamps needed (cudaEventDisableTiming is cheaper to record).
  Event forked(cudaEventDisableTiming), done0(cudaEventDisableTiming),
      done1(cudaEventDisableTiming);
  forked.record(main);
  CUDALAB_CHECK(cudaStreamWaitEvent(side0, forked, 0));
  CUDALAB_CHECK(cudaStreamWaitEvent(side1, forked, 0));
  launch_square(x, a, n, side0);
  launch_affine(x, b, n, side1);
  done0.record(side0);
  done1.record(side1);
  CUDALAB_CHECK(cudaStreamWaitEvent(main, done0, 0));
  CUDALAB_CHECK(cudaStreamWaitEvent(main, done1, 0));
  launch_add(a, b, out, n, main);
  // END EXERCISE
}

void fork_join_serial(const float* x, float* a, float* b, float* out, std::size_t n,
                      cudaStream_t stream) {
  require_device_pointer(x, n, "x");
  require_device_pointer(a, n, "a");
  require_device_pointer(b, n, "b");
  require_device_pointer(out, n, "out");
  if (n == 0) return;
  launch_square(x, a, n, stream);
  launch_affine(x, b, n, stream);
  launch_add(a, b, out, n, stream);
}

}  // namespace cudalab::ch07
