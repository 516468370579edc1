// Chapter 3 benchmarks, the grid-stride vector add, scalar and float4, beside a copy of the same
// bytes (rows: vector_add.cpp's header).
#include <string>

#include "ch03/ch03.hpp"
#include "ch03_bench.hpp"
#include "cudalab/bench.hpp"
#include "cudalab/memory.hpp"

using namespace cudalab;
using namespace cudalab::bench_ch03;

namespace {

void bm_grid_stride(benchmark::State& state, ch03::StrideVariant v, const std::string& name) {
  Arrays x;
  auto work = [&](cudaStream_t s) {
    ch03::vector_add_grid_stride(x.a.data(), x.b.data(), x.c.data(), kN, v, s);
  };
  check_add_and_time(state, "grid_stride/" + name, x, work);
}

}  // namespace

[[maybe_unused]] const bool kRegistered = [] {
  bench::add("BM_vector_add_grid_stride/scalar", [](benchmark::State& s) {
    bm_grid_stride(s, ch03::StrideVariant::kScalar, "scalar");
  });
  bench::add("BM_vector_add_grid_stride/float4", [](benchmark::State& s) {
    bm_grid_stride(s, ch03::StrideVariant::kFloat4, "float4");
  });
  return true;
}();
