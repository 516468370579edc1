// Chapter 4 benchmarks, the transpose ladder beside cudaMemcpy D2D and cublasSgeam: each effect
// beside its ceiling in the same run.
//   ./build/gpu/bench/bench_ch04 --benchmark_out=ch04.json --benchmark_out_format=json
//
// Rows: BM_transpose/variant:V/rows:R/cols:C (label: the step), BM_transpose_memcpy,
// BM_transpose_copy_kernel, BM_transpose_cublas; each kernel row beside a cudaMemcpy D2D of the
// same bytes (vs_base, pct_of_memcpy_same_bytes), checked exactly before timing. The key ratios and
// speed goals read from these rows are declared in bench/ch04/ch04.toml.
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "ch04/ch04.hpp"
#include "ch04_bench.hpp"
#include "cudalab/bench.hpp"
#include "cudalab/cublas.hpp"
#include "cudalab/device_fill.hpp"
#include "cudalab/memory.hpp"

using namespace cudalab;
using namespace cudalab::bench_ch04;

namespace {

struct Matrices {
  int rows, cols;
  std::size_t n;
  DeviceBuffer<float> in, out;
  // Shape from the benchmark arguments: (rows, cols) start at argument `first`.
  Matrices(const benchmark::State& state, int first)
      : rows(static_cast<int>(state.range(first))),
        cols(static_cast<int>(state.range(first + 1))),
        n(static_cast<std::size_t>(rows) * cols),
        in(uniform_device_buffer(n, 4, -1.0f, 1.0f)),
        out(n) {}
  double bytes() const { return 2.0 * n * sizeof(float); }
  // out == in (transposed: out is cols x rows), against the host twin of the fill.
  std::string check(bool transposed) const {
    const std::vector<float> got = out.to_host();
    std::vector<float> want(n);
    for (std::size_t r = 0; r < static_cast<std::size_t>(rows); ++r)
      for (std::size_t c = 0; c < static_cast<std::size_t>(cols); ++c)
        want[transposed ? c * rows + r : r * cols + c] = uniform_at(4, r * cols + c, -1.0f, 1.0f);
    std::string what = transposed ? "transpose " : "copy_2d ";
    what += std::to_string(rows);
    what += " x ";
    what += std::to_string(cols);
    return bench::mismatch(got, want, {}, what);
  }
};

void BM_transpose(benchmark::State& state) {  // arguments: variant, rows, cols
  Matrices m(state, 1);
  const auto v = static_cast<ch04::TransposeVariant>(state.range(0));
  state.SetLabel(std::string(ch04::name(v)));
  auto work = [&](cudaStream_t s) {
    ch04::transpose(m.in.data(), m.out.data(), m.rows, m.cols, v, s);
  };
  if (!bench::verify(state, key("transpose", state, 3), [&] {
        work(nullptr);
        return m.check(true);
      }))
    return;
  run_vs_copy(state, work, {.bytes = m.bytes()});
}

void BM_transpose_memcpy(benchmark::State& state) {  // arguments: rows, cols
  Matrices m(state, 0);
  state.SetLabel("cudaMemcpy D2D");
  auto work = [&](cudaStream_t s) {
    CUDALAB_CHECK(cudaMemcpyAsync(m.out.data(), m.in.data(), m.n * sizeof(float),
                                  cudaMemcpyDeviceToDevice, s));
  };
  if (!bench::verify(state, key("transpose_memcpy", state, 2), [&] {
        work(nullptr);
        return m.check(false);
      }))
    return;
  bench::run(state, work, {.bytes = m.bytes()});
}

void BM_transpose_copy_kernel(benchmark::State& state) {  // arguments: rows, cols
  Matrices m(state, 0);
  state.SetLabel("copy_2d (naive launch shape)");
  auto work = [&](cudaStream_t s) { ch04::copy_2d(m.in.data(), m.out.data(), m.rows, m.cols, s); };
  if (!bench::verify(state, key("transpose_copy_kernel", state, 2), [&] {
        work(nullptr);
        return m.check(false);
      }))
    return;
  run_vs_copy(state, work, {.bytes = m.bytes()});
}

// cublasSgeam as a transpose (C = 1 * A^T + 0 * B^T): the vendor library's out-of-place
// transpose, the yardstick of the ladder beside the copy. Row-major rows x cols is column-major
// cols x rows (lda = cols); its transpose, row-major cols x rows, is column-major rows x cols
// (ldc = rows). B = A (beta = 0: its values do not count; a valid operand whichever way the
// library treats it).
void BM_transpose_cublas(benchmark::State& state) {  // arguments: rows, cols
  Matrices m(state, 0);
  state.SetLabel("cublasSgeam (transpose)");
  const CublasHandle handle;  // per row: a static one would be destroyed after the runtime
  const float one = 1.0f, zero = 0.0f;
  auto work = [&](cudaStream_t s) {
    CUDALAB_CHECK_CUBLAS(cublasSetStream(handle, s));
    CUDALAB_CHECK_CUBLAS(cublasSgeam(handle, CUBLAS_OP_T, CUBLAS_OP_T, m.rows, m.cols, &one,
                                     m.in.data(), m.cols, &zero, m.in.data(), m.cols, m.out.data(),
                                     m.rows));
  };
  if (!bench::verify(state, key("transpose_cublas", state, 2), [&] {
        work(nullptr);
        return m.check(true);
      }))
    return;
  run_vs_copy(state, work, {.bytes = m.bytes()});
}

// Shapes: a square power of two (256 MiB) and an odd shape of the same size (edge tiles on every
// tile row and column).
void transpose_shapes(benchmark::internal::Benchmark* b, bool with_variants) {
  const std::vector<std::pair<int, int>> shapes{{8192, 8192}, {8191, 8209}};
  for (const auto& [r, c] : shapes) {
    if (!with_variants) {
      b->Args({r, c});
      continue;
    }
    for (const auto v : ch04::kTransposeVariants) b->Args({static_cast<std::int64_t>(v), r, c});
  }
}

}  // namespace

[[maybe_unused]] const bool kRegistered = [] {
  bench::add("BM_transpose_memcpy", BM_transpose_memcpy)
      ->ArgNames({"rows", "cols"})
      ->Apply([](auto* b) { transpose_shapes(b, false); });
  bench::add("BM_transpose_cublas", BM_transpose_cublas)
      ->ArgNames({"rows", "cols"})
      ->Apply([](auto* b) { transpose_shapes(b, false); });
  bench::add("BM_transpose_copy_kernel", BM_transpose_copy_kernel)
      ->ArgNames({"rows", "cols"})
      ->Apply([](auto* b) { transpose_shapes(b, false); });
  bench::add("BM_transpose", BM_transpose)
      ->ArgNames({"variant", "rows", "cols"})
      ->Apply([](auto* b) { transpose_shapes(b, true); });
  return true;
}();
