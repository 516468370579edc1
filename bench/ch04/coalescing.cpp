// Chapter 4 benchmarks: the memory hierarchy, each effect beside its ceiling in the same run;
// a file per topic (coalescing.cpp, transpose.cpp, bank_conflicts.cpp, constant.cpp,
// transfers.cpp), registered in that order; this one: coalescing.
//
//   ./build/gpu/bench/bench_ch04 --benchmark_out=ch04.json --benchmark_out_format=json
//   ./build/gpu/bench/bench_ch04 --benchmark_filter='BM_transpose'      (one family)
//
// Row names carry their parameters as name:value (Google Benchmark ArgNames), so a report script
// can plot them: BM_strided_copy/stride:4, BM_offset_copy/offset:1, BM_transpose/variant:3/
// rows:8192/cols:8192 (label "padded64"), BM_h2d/pinned:1/bytes:4096, ...
// Bases (bench::run_vs: timed alternately in the same row; vs_base = base time / row time):
//   BM_strided_copy, BM_offset_copy, BM_transpose, BM_transpose_cublas (cublasSgeam, the
//     vendor's transpose), BM_transpose_copy_kernel: a cudaMemcpy D2D of the same bytes
//     (vs_base = the row's GB/s over a copy's; also as pct_of_memcpy_same_bytes);
//   BM_poly memory:1 (constant): the global-memory row of the same pattern;
//   BM_h2d / BM_d2h pinned:1: the pageable copy of the same size and direction;
//   BM_mapped access:0 (copy_then_kernel): zero_copy with the same passes.
// The key ratios and speed goals read from these rows are declared in bench/ch04/ch04.toml.
// Every row checks its output once before timing (bench::verify): the inputs come from
// uniform_device_buffer, whose host twin uniform_at gives any input element without a download,
// so gathers and transposes are checked exactly; the polynomials and the rotate sums within a
// rounding tolerance; transfers byte for byte.
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

void BM_strided_copy(benchmark::State& state) {
  const auto stride = static_cast<unsigned>(state.range(0));
  const std::size_t in_n = ch04::strided_input_size(kN, stride);  // up to 8 GiB at stride 32
  const DeviceBuffer<float> in = uniform_device_buffer(in_n, 1, -1.0f, 1.0f);
  DeviceBuffer<float> out(kN);
  auto work = [&](cudaStream_t s) { ch04::strided_copy(in.data(), out.data(), kN, stride, s); };
  if (!bench::verify(state, key("strided_copy", state, 1), [&] {
        work(nullptr);
        std::vector<float> want(kN);
        for (std::size_t i = 0; i < kN; ++i) want[i] = uniform_at(1, i * stride, -1.0f, 1.0f);
        return bench::mismatch(out.to_host(), want, {}, "strided copy 2^26");
      }))
    return;
  run_vs_copy(state, work,
              {.bytes = 2.0 * kN * sizeof(float)});  // useful bytes: what a coalesced copy moves
}

void BM_offset_copy(benchmark::State& state) {
  const auto offset = static_cast<unsigned>(state.range(0));
  const DeviceBuffer<float> in = uniform_device_buffer(kN + offset, 2, -1.0f, 1.0f);
  DeviceBuffer<float> out(kN);
  auto work = [&](cudaStream_t s) { ch04::offset_copy(in.data(), out.data(), kN, offset, s); };
  if (!bench::verify(state, key("offset_copy", state, 1), [&] {
        work(nullptr);
        std::vector<float> want(kN);
        for (std::size_t i = 0; i < kN; ++i) want[i] = uniform_at(2, i + offset, -1.0f, 1.0f);
        return bench::mismatch(out.to_host(), want, {}, "offset copy 2^26");
      }))
    return;
  run_vs_copy(state, work, {.bytes = 2.0 * kN * sizeof(float)});
}

void BM_coalescing_memcpy(benchmark::State& state) {  // the ceiling of both rows above
  const DeviceBuffer<float> in = uniform_device_buffer(kN, 3, -1.0f, 1.0f);
  DeviceBuffer<float> out(kN);
  auto work = [&](cudaStream_t s) {
    CUDALAB_CHECK(
        cudaMemcpyAsync(out.data(), in.data(), kN * sizeof(float), cudaMemcpyDeviceToDevice, s));
  };
  if (!bench::verify(state, "coalescing_memcpy", [&] {
        work(nullptr);
        return bench::mismatch(out.to_host(), in.to_host(), {}, "cudaMemcpy D2D 2^26");
      }))
    return;
  bench::run(state, work, {.bytes = 2.0 * kN * sizeof(float)});
}

}  // namespace

[[maybe_unused]] const bool kRegistered = [] {
  bench::add("BM_coalescing_memcpy", BM_coalescing_memcpy);
  bench::add("BM_strided_copy", BM_strided_copy)
      ->ArgName("stride")
      ->ArgsProduct({{1, 2, 4, 8, 16, 32}});
  bench::add("BM_offset_copy", BM_offset_copy)
      ->ArgName("offset")
      ->ArgsProduct({{0, 1, 2, 4, 8, 16, 31, 32}});
  return true;
}();

CUDALAB_BENCH_MAIN();
