// Chapter 3 benchmarks: every first kernel's GB/s beside a cudaMemcpy device-to-device that moves
// the same bytes, timed alternately in the same row (bench::run_vs; vs_base = the kernel's GB/s
// over the copy's). These kernels do almost no arithmetic: their ceiling is DRAM bandwidth.
// The ratios and speed goals read from these rows are declared in bench/ch03/ch03.toml.
//   ./build/gpu/bench/bench_ch03 --benchmark_repetitions=5 --benchmark_out=ch03.json
//     --benchmark_out_format=json
// A file per topic, registered in this order: vector_add.cpp, saxpy.cpp, grid_stride.cpp,
// rgb_to_gray.cpp.
//
// Rows: BM_memcpy_d2d (cudaMemcpy alone, 1 GiB), BM_vector_add, BM_saxpy,
// BM_vector_add_grid_stride/<scalar|float4>, BM_rgb_to_gray. Each checks its output once before
// timing (bench::verify) against the host: exact for the adds, the copy and the grayscale
// (integer arithmetic), within one rounding for saxpy (FMA or not).
#include <string>
#include <vector>

#include "ch03/ch03.hpp"
#include "ch03_bench.hpp"
#include "cudalab/bench.hpp"
#include "cudalab/memory.hpp"

using namespace cudalab;
using namespace cudalab::bench_ch03;

namespace {

void BM_memcpy_d2d(benchmark::State& state) {
  Arrays x;
  auto work = [&](cudaStream_t s) {
    CUDALAB_CHECK(
        cudaMemcpyAsync(x.c.data(), x.a.data(), kN * sizeof(float), cudaMemcpyDeviceToDevice, s));
  };
  if (!bench::verify(state, "memcpy_d2d", [&] {
        work(nullptr);
        return bench::mismatch(x.c.to_host(), x.a.to_host(), {}, "cudaMemcpy D2D 1 GiB");
      }))
    return;
  bench::run(state, work, {.bytes = 2.0 * kN * sizeof(float)});
}

void BM_vector_add(benchmark::State& state) {
  Arrays x;
  auto work = [&](cudaStream_t s) { ch03::vector_add(x.a.data(), x.b.data(), x.c.data(), kN, s); };
  check_add_and_time(state, "vector_add", x, work);
}

}  // namespace

// Every row through bench::add (manual time, microseconds), the one way the lab registers a row.
[[maybe_unused]] const bool kRegistered = [] {
  bench::add("BM_memcpy_d2d", BM_memcpy_d2d);
  bench::add("BM_vector_add", BM_vector_add);
  return true;
}();

CUDALAB_BENCH_MAIN();
