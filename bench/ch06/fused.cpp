// Chapter 6 benchmarks, GEMM + bias + ReLU (exercise 6.6), fused beside cuBLAS then a kernel
// (rows: sgemm.cpp's header):
//   BM_gemm_bias_relu/<fused|cublas_then_kernel>/<MxNxK>
//   BM_gemm_bias_relu/fused_warptile/<MxNxK> (the skinny shapes: step 7 forced, for comparison)
#include <algorithm>
#include <string>
#include <vector>

#include "ch06/ch06.hpp"
#include "ch06_bench.hpp"
#include "cudalab/bench.hpp"
#include "cudalab/cublas.hpp"
#include "cudalab/device.hpp"
#include "cudalab/device_fill.hpp"
#include "cudalab/memory.hpp"

using namespace cudalab;
using namespace cudalab::bench_ch06;

namespace {

// GEMM + bias + ReLU shapes: skinny (few rows, like a decode step), small, small K (memory-bound:
// the extra pass over Y matters most), large (compute-bound: the GEMM itself decides).
struct FusedShape {
  int m, n, k;
};
const FusedShape kFusedShapes[] = {
    {32, 4096, 4096}, {512, 1024, 1024}, {16384, 1024, 64}, {8192, 4096, 256}, {4096, 4096, 4096}};

std::string shape_name(const FusedShape& sh) {
  return std::to_string(sh.m) + "x" + std::to_string(sh.n) + "x" + std::to_string(sh.k);
}

// The fused rows: gemm_bias_relu_fused as a caller gets it (kAuto: the skinny kernel for
// M <= kSkinnyMaxRows, else step 7), and, at the skinny shapes, step 7 forced with the tile its
// planner picks (what the fused path ran before the skinny kernel).
enum class Path { kLibrary, kFused, kFusedWarptile };

void bm_gemm_bias_relu(benchmark::State& state, const FusedShape& sh, Path path) {
  const bool fused = path != Path::kLibrary;
  GemmData d(sh.m, sh.n, sh.k);
  const DeviceBuffer<float> bias = uniform_device_buffer(std::size_t(sh.n), 41, -1.0f, 1.0f);
  CublasHandle h;
  const ch06::WarptileTile tile = path == Path::kFusedWarptile
                                      ? ch06::plan_warptile_tile(d.m, d.n, current_sm_count())
                                      : ch06::WarptileTile::kAuto;
  state.SetLabel(path == Path::kLibrary                ? "cublasSgemm + bias_relu kernel"
                 : ch06::fused_takes_skinny(tile, d.m) ? "skinny kernel + bias/ReLU epilogue"
                                                       : "warptile + bias/ReLU epilogue");
  auto library = [&](float* y, cudaStream_t s) {
    ch06::gemm_bias_relu_cublas(h, d.m, d.n, d.k, d.a.data(), d.b.data(), bias.data(), y, s);
  };
  auto hand = [&](cudaStream_t s) {
    ch06::gemm_bias_relu_fused(tile, d.m, d.n, d.k, d.a.data(), d.b.data(), bias.data(), d.c.data(),
                               s);
  };
  const std::string key = std::string(path == Path::kLibrary ? "cublas_then_kernel/"
                                      : path == Path::kFused ? "fused/"
                                                             : "fused_warptile/") +
                          shape_name(sh);
  if (!fused) {
    auto work = [&](cudaStream_t s) { library(d.c.data(), s); };
    if (!bench::verify(state, key, [&] {
          work(nullptr);
          CUDALAB_CHECK(cudaDeviceSynchronize());
          // relu(A B + bias) on the sampled grid: the host oracle of the GEMM, then the epilogue.
          const std::vector<float> a = d.a.to_host(), b = d.b.to_host(), hb = bias.to_host(),
                                   y = d.c.to_host();
          std::vector<double> got, want;
          for (int i : samples(d.m))
            for (int j : samples(d.n)) {
              double acc = 0;
              for (int p = 0; p < d.k; ++p)
                acc += double(a[std::size_t(i) * d.k + p]) * b[std::size_t(p) * d.n + j];
              want.push_back(std::max(acc + hb[j], 0.0));
              got.push_back(y[std::size_t(i) * d.n + j]);
            }
          return bench::mismatch(got, want, dot_tolerance(d.k),
                                 "gemm_bias_relu_cublas against a host oracle");
        }))
      return;
    bench::run(state, work, {.bytes = d.bytes(), .flops = d.flops()});
    return;
  }
  auto base = [&](cudaStream_t s) { library(d.ref.data(), s); };
  if (!bench::verify(state, key, [&] {
        hand(nullptr);
        base(nullptr);
        CUDALAB_CHECK(cudaDeviceSynchronize());
        return bench::mismatch(d.c.to_host(), d.ref.to_host(), dot_tolerance(d.k),
                               "fused against cuBLAS + kernel");
      }))
    return;
  bench::run_vs(state, hand, base, {.bytes = d.bytes(), .flops = d.flops()});
}

using bench::add;  // cudalab/bench.hpp

[[maybe_unused]] const bool kRegistered = [] {
  for (const auto& sh : kFusedShapes) {
    add("BM_gemm_bias_relu/cublas_then_kernel/" + shape_name(sh),
        [sh](benchmark::State& s) { bm_gemm_bias_relu(s, sh, Path::kLibrary); });
    add("BM_gemm_bias_relu/fused/" + shape_name(sh),
        [sh](benchmark::State& s) { bm_gemm_bias_relu(s, sh, Path::kFused); });
    if (sh.m <= ch06::kSkinnyMaxRows)
      add("BM_gemm_bias_relu/fused_warptile/" + shape_name(sh),
          [sh](benchmark::State& s) { bm_gemm_bias_relu(s, sh, Path::kFusedWarptile); });
  }
  return true;
}();

}  // namespace
