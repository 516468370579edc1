// Chapter 4 benchmarks, constant memory: each effect beside its ceiling in the same run.
//   ./build/gpu/bench/bench_ch04 --benchmark_out=ch04.json --benchmark_out_format=json
//
// Rows: BM_poly/memory:M/pattern:P; memory:1 (constant) beside memory:0 (global) with the same
// pattern; checked within a rounding tolerance before timing.
// The key ratios and speed goals read from these rows are declared in bench/ch04/ch04.toml.
#include <cmath>
#include <string>
#include <vector>

#include "ch04/ch04.hpp"
#include "ch04_bench.hpp"
#include "cudalab/bench.hpp"
#include "cudalab/device_fill.hpp"
#include "cudalab/memory.hpp"

using namespace cudalab;
using namespace cudalab::bench_ch04;

namespace {

void BM_poly(benchmark::State& state) {
  const auto memory = static_cast<ch04::CoeffMemory>(state.range(0));
  const auto pattern = static_cast<ch04::CoeffPattern>(state.range(1));
  const int terms = 16;
  state.SetLabel(std::string(memory == ch04::CoeffMemory::kGlobal ? "global" : "constant") + "/" +
                 (pattern == ch04::CoeffPattern::kBroadcast ? "broadcast" : "per_lane"));
  const DeviceBuffer<float> x = uniform_device_buffer(kN, 5, -0.99f, 0.99f);
  const DeviceBuffer<float> c =
      uniform_device_buffer(std::size_t{terms} * ch04::kPolys, 6, -1.0f, 1.0f);
  DeviceBuffer<float> y(kN), base_y(kN);
  auto run = [&](ch04::CoeffMemory mem, float* out, cudaStream_t s) {
    ch04::eval_polynomials(x.data(), out, kN, c.data(), terms, mem, pattern, s);
  };
  if (!bench::verify(state, key("poly", state, 2), [&] {
        run(memory, y.data(), nullptr);
        const std::vector<float> hx = x.to_host(), hc = c.to_host();
        std::vector<float> want(kN);
        for (std::size_t i = 0; i < kN; ++i) {  // Horner, as the kernel: y = c[t-1]; y = y x + c[k]
          const std::size_t p = pattern == ch04::CoeffPattern::kPerLane ? i % ch04::kPolys : 0;
          float acc = hc[(terms - 1) * ch04::kPolys + p];
          for (int k = terms - 2; k >= 0; --k) acc = std::fma(acc, hx[i], hc[k * ch04::kPolys + p]);
          want[i] = acc;
        }
        return bench::mismatch(y.to_host(), want, {.abs = 1e-5, .rel = 1e-5},
                               "eval_polynomials 2^26");
      }))
    return;
  const bench::Work w{.bytes = 2.0 * kN * sizeof(float), .flops = 2.0 * (terms - 1) * kN};
  auto work = [&](cudaStream_t s) { run(memory, y.data(), s); };
  if (memory == ch04::CoeffMemory::kGlobal)
    bench::run(state, work, w);
  else  // constant memory beside global memory, same pattern
    bench::run_vs(
        state, work, [&](cudaStream_t s) { run(ch04::CoeffMemory::kGlobal, base_y.data(), s); }, w);
}

}  // namespace

[[maybe_unused]] const bool kRegistered = [] {
  bench::add("BM_poly", BM_poly)->ArgNames({"memory", "pattern"})->ArgsProduct({{0, 1}, {0, 1}});
  return true;
}();
