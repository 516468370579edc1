// Chapter 5 benchmarks, unrolling (exercise 5.6): saxpy on 2^26 floats.
//   ./build/gpu/bench/bench_ch05 --benchmark_filter='unroll'
//
// Rows (bench::run_vs times the two alternately in every iteration; vs_base = base time / row
// time; the goals that read them live in bench/ch05/ch05.toml):
//   BM_unroll/<variant>                   12n bytes, beside cudaMemcpy D2D of the same 12n bytes;
//                                         counters regs, local_bytes; BM_unroll_memcpy: that copy
//                                         alone
// Checked once before timing (bench::verify) against a host oracle.
#include "ch05/unroll.hpp"

#include <cmath>
#include <string>
#include <vector>

#include "ch05_bench.hpp"
#include "cudalab/bench.hpp"
#include "cudalab/device_fill.hpp"
#include "cudalab/memory.hpp"

using namespace cudalab;
using namespace cudalab::bench_ch05;

namespace {

void bm_unroll(benchmark::State& state, ch05::UnrollVariant v) {
  auto x = uniform_device_buffer(kMoreN, 21, -1.0f, 1.0f),
       y = uniform_device_buffer(kMoreN, 22, -1.0f, 1.0f);
  const float a = 1.0001f;
  auto work = [&](cudaStream_t s) { ch05::saxpy_unrolled(a, x.data(), y.data(), kMoreN, v, s); };
  if (!bench::verify(state, std::string("unroll/") + ch05::to_string(v), [&] {
        const std::vector<float> hx = x.to_host(), y0 = y.to_host();
        work(nullptr);
        std::vector<float> want(kMoreN);
        for (std::size_t i = 0; i < kMoreN; ++i) want[i] = std::fma(a, hx[i], y0[i]);
        return bench::mismatch(y.to_host(), want, {.abs = 1e-6, .rel = 1e-6}, "saxpy 2^26");
      }))
    return;
  const ch05::KernelResources r = ch05::saxpy_unrolled_resources(v);
  state.counters["regs"] = r.num_regs;
  state.counters["local_bytes"] = static_cast<double>(r.local_bytes);
  // Base: cudaMemcpy D2D moving the same 12n bytes (6n read, 6n written).
  const std::size_t copy_bytes = 6 * kMoreN;
  DeviceBuffer<unsigned char> src(copy_bytes), dst(copy_bytes);
  CUDALAB_CHECK(cudaMemset(src.data(), 1, copy_bytes));
  bench::run_vs(state, work,
                [&](cudaStream_t s) {
                  CUDALAB_CHECK(cudaMemcpyAsync(dst.data(), src.data(), copy_bytes,
                                                cudaMemcpyDeviceToDevice, s));
                },
                {.bytes = 12.0 * kMoreN, .flops = 2.0 * kMoreN});
}

// The same-bytes copy alone: the denominator of the 5.6 goal when a run has no vs_base counter.
void bm_unroll_memcpy(benchmark::State& state) {
  const std::size_t copy_bytes = 6 * kMoreN;  // 12n bytes moved, as BM_unroll
  DeviceBuffer<unsigned char> src(copy_bytes), dst(copy_bytes);
  CUDALAB_CHECK(cudaMemset(src.data(), 1, copy_bytes));
  auto work = [&](cudaStream_t s) {
    CUDALAB_CHECK(cudaMemcpyAsync(dst.data(), src.data(), copy_bytes, cudaMemcpyDeviceToDevice, s));
  };
  if (!bench::verify(state, "unroll_memcpy", [&] {
        work(nullptr);
        return bench::mismatch(dst.to_host(), src.to_host(), {}, "cudaMemcpy D2D 768 MiB");
      }))
    return;
  bench::run(state, work, {.bytes = 12.0 * kMoreN});
}

using bench::add;  // cudalab/bench.hpp

[[maybe_unused]] const bool kRegistered = [] {
  for (const auto v : {ch05::UnrollVariant::kRolled, ch05::UnrollVariant::kUnrolled,
                       ch05::UnrollVariant::kUnrolledRestrict, ch05::UnrollVariant::kVectorized})
    add(std::string("BM_unroll/") + ch05::to_string(v),
        [v](benchmark::State& s) { bm_unroll(s, v); });
  add("BM_unroll_memcpy", bm_unroll_memcpy);
  return true;
}();

}  // namespace
