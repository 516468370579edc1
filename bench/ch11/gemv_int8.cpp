// Chapter 11 benchmarks, the INT8 weight-only GEMV beside the fp16 one, cuBLAS's, a read of its
// weight bytes and a copy of them (rows: decode_attention.cpp's header):
//   BM_gemv/{fp16,int8,cublas}/<rows>x<cols>, BM_gemv_int8_vs_read/<rows>x<cols>,
//   BM_gemv_read/int8/<rows>x<cols>, BM_gemv_int8_vs_copy/<rows>x<cols>,
//   BM_gemv_copy/int8/<rows>x<cols>
// The ratios and speed goals are declared in bench/ch11/ch11.toml.
#include <cuda_fp16.h>

#include <cmath>
#include <cstdint>
#include <functional>
#include <map>
#include <random>
#include <string>
#include <utility>
#include <vector>

#include "ch11/ch11.hpp"
#include "cudalab/bench.hpp"
#include "cudalab/check.hpp"
#include "cudalab/cublas.hpp"
#include "cudalab/memory.hpp"

using namespace cudalab;
using namespace cudalab::ch11;

namespace {

// GEMV: weights rows x cols (a Llama-3-8B MLP projection is 14336 x 4096), x and y fp16.
struct Gemv {
  int rows, cols;
  std::string name() const { return std::to_string(rows) + "x" + std::to_string(cols); }
};
const Gemv kGemvs[] = {{4096, 4096}, {14336, 4096}, {8192, 8192}, {28672, 8192}};

// Host inputs, made once per shape and kept for the process (each repetition re-runs the row).
struct GemvHost {
  Int8Matrix m;
  std::vector<float> wf, xf;  // fp16-rounded weights and input
  std::vector<__half> wh, xh;
};
const GemvHost& gemv_host(Gemv g) {
  static std::map<std::pair<int, int>, GemvHost> cache;
  const auto key = std::make_pair(g.rows, g.cols);
  if (auto it = cache.find(key); it != cache.end()) return it->second;
  GemvHost h;
  std::mt19937_64 rng(7);
  std::uniform_real_distribution<float> u(-1, 1);
  const std::size_t n = static_cast<std::size_t>(g.rows) * g.cols;
  std::vector<float> raw(n);
  for (float& e : raw) e = u(rng);
  h.m = quantize_int8_per_channel(raw, g.rows, g.cols);
  h.wh.resize(n);
  h.xh.resize(static_cast<std::size_t>(g.cols));
  h.wf.resize(n);
  h.xf.resize(h.xh.size());
  for (std::size_t i = 0; i < n; ++i) h.wf[i] = __half2float(h.wh[i] = __float2half_rn(raw[i]));
  for (std::size_t i = 0; i < h.xh.size(); ++i)
    h.xf[i] = __half2float(h.xh[i] = __float2half_rn(u(rng)));
  return cache.emplace(key, std::move(h)).first->second;
}

struct GemvData {
  Gemv g;
  const GemvHost& h;
  const Int8Matrix& m;
  const std::vector<float>& wf;
  const std::vector<float>& xf;
  DeviceBuffer<std::int8_t> q;
  DeviceBuffer<float> scale;
  DeviceBuffer<__half> w, x, y;
  explicit GemvData(Gemv gg)
      : g(gg),
        h(gemv_host(gg)),
        m(h.m),
        wf(h.wf),
        xf(h.xf),
        q(to_device(h.m.q)),
        scale(to_device(h.m.scale)),
        w(to_device(h.wh)),
        x(to_device(h.xh)),
        y(static_cast<std::size_t>(gg.rows)) {}
  void int8(cudaStream_t st) {
    gemv_int8_weight_only(q.data(), scale.data(), x.data(), y.data(), g.rows, g.cols, st);
  }
  void fp16(cudaStream_t st) { gemv_fp16(w.data(), x.data(), y.data(), g.rows, g.cols, st); }
  // Within the tests' tolerance of the double oracle of the weights the kernel reads.
  std::string check(bool quantized) const {
    const std::vector<__half> got = bench::download(y.data(), y.size());
    for (int r = 0; r < g.rows; ++r) {
      double exact = 0, abs_terms = 0;
      for (int c = 0; c < g.cols; ++c) {
        const std::size_t i = static_cast<std::size_t>(r) * g.cols + c;
        const double wv =
            quantized ? static_cast<double>(m.q[i]) * m.scale[static_cast<std::size_t>(r)] : wf[i];
        exact += wv * xf[static_cast<std::size_t>(c)];
        abs_terms += std::fabs(wv * xf[static_cast<std::size_t>(c)]);
      }
      const double e = std::fabs(__half2float(got[static_cast<std::size_t>(r)]) - exact);
      if (e > 1e-3 * std::fabs(exact) + 1e-5 * abs_terms + 1e-7)
        return (quantized ? std::string("int8") : std::string("fp16")) + " GEMV " + g.name() +
               ": row " + std::to_string(r) + " off by " + std::to_string(e);
    }
    return "";
  }
};

void BM_gemv_fp16(benchmark::State& state, Gemv g) {
  GemvData d(g);
  if (!bench::verify(state, "gemv_fp16/" + g.name(), [&] {
        d.fp16(nullptr);
        CUDALAB_CHECK(cudaDeviceSynchronize());
        return d.check(false);
      }))
    return;
  const double bytes = 2.0 * g.rows * g.cols;
  const bench::CopyBase copy(bytes);
  bench::run_vs(state, [&](cudaStream_t st) { d.fp16(st); }, std::cref(copy),
                {.bytes = bytes, .flops = 2.0 * g.rows * g.cols});
}

// The vendor's fp16 GEMV: cublasGemmEx with n = 1 (fp16 in and out, fp32 compute). W row-major
// rows x cols is column-major cols x rows: y = op(A) x with op = T, lda = cols. Beside a copy of
// the weight bytes, as BM_gemv/fp16.
void BM_gemv_cublas(benchmark::State& state, Gemv g) {
  GemvData d(g);
  const CublasHandle handle;  // per row: a static one would be destroyed after the runtime
  const float one = 1.0f, zero = 0.0f;
  auto work = [&](cudaStream_t st) {
    CUDALAB_CHECK_CUBLAS(cublasSetStream(handle, st));
    CUDALAB_CHECK_CUBLAS(cublasGemmEx(handle, CUBLAS_OP_T, CUBLAS_OP_N, g.rows, 1, g.cols, &one,
                                      d.w.data(), CUDA_R_16F, g.cols, d.x.data(), CUDA_R_16F,
                                      g.cols, &zero, d.y.data(), CUDA_R_16F, g.rows,
                                      CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT));
  };
  if (!bench::verify(state, "gemv_cublas/" + g.name(), [&] {
        work(nullptr);
        CUDALAB_CHECK(cudaDeviceSynchronize());
        return d.check(false);
      }))
    return;
  const double bytes = 2.0 * g.rows * g.cols;
  const bench::CopyBase copy(bytes);
  bench::run_vs(state, work, std::cref(copy), {.bytes = bytes, .flops = 2.0 * g.rows * g.cols});
}
// A copy that moves the INT8 weight bytes (rows x cols: half read, half written), alone: the
// vendor row of the INT8 GEMV's fraction of copy bandwidth.
void BM_gemv_copy_int8(benchmark::State& state, Gemv g) {
  const bench::CopyBase copy(1.0 * g.rows * g.cols);
  bench::run(state, std::cref(copy), {.bytes = 1.0 * g.rows * g.cols});
}
// A read of the INT8 weight bytes (rows x cols, nothing written but one word per block), alone:
// the vendor row of the INT8 GEMV's fraction of read bandwidth.
void BM_gemv_read_int8(benchmark::State& state, Gemv g) {
  const bench::ReadBase read(1.0 * g.rows * g.cols);
  if (!bench::verify(state, "gemv_read/int8/" + g.name(), [&] { return read.check(); })) return;
  bench::run(state, std::cref(read), {.bytes = 1.0 * g.rows * g.cols});
}

// What the INT8 GEMV is timed beside: the fp16 GEMV (the speed-up), a read of its own weight
// bytes (the bandwidth yardstick: the GEMV only reads them) or a copy of them (the issue's
// yardstick, kept for its history; near the L2's size the copy's writes land in the L2 within its
// timed window, so no read-only kernel reaches it: bench::ReadBase).
enum class Beside { fp16, read, copy };

void BM_gemv_int8(benchmark::State& state, Gemv g, Beside beside = Beside::fp16) {
  GemvData d(g);
  const char* prefix = beside == Beside::read   ? "gemv_int8_vs_read/"
                       : beside == Beside::copy ? "gemv_int8_vs_copy/"
                                                : "gemv_int8/";
  if (!bench::verify(state, prefix + g.name(), [&] {
        d.int8(nullptr);
        CUDALAB_CHECK(cudaDeviceSynchronize());
        return d.check(true);
      }))
    return;
  const double bytes = 1.0 * g.rows * g.cols;
  auto work = [&](cudaStream_t st) { d.int8(st); };
  if (beside == Beside::read) {
    const bench::ReadBase read(bytes);
    if (!bench::verify(state, "gemv_read/int8/" + g.name(), [&] { return read.check(); })) return;
    bench::run_vs(state, work, std::cref(read), {.bytes = bytes, .flops = 2.0 * g.rows * g.cols});
  } else if (beside == Beside::copy) {
    const bench::CopyBase copy(bytes);
    bench::run_vs(state, work, std::cref(copy), {.bytes = bytes, .flops = 2.0 * g.rows * g.cols});
  } else {
    bench::run_vs(state, work, [&](cudaStream_t st) { d.fp16(st); },
                  {.bytes = bytes, .flops = 2.0 * g.rows * g.cols});
  }
}

using bench::add;  // cudalab/bench.hpp

[[maybe_unused]] const bool kRegistered = [] {
  for (const Gemv& g : kGemvs) {
    add("BM_gemv/fp16/" + g.name(), [g](benchmark::State& st) { BM_gemv_fp16(st, g); });
    add("BM_gemv/int8/" + g.name(), [g](benchmark::State& st) { BM_gemv_int8(st, g); });
    add("BM_gemv/cublas/" + g.name(), [g](benchmark::State& st) { BM_gemv_cublas(st, g); });
    add("BM_gemv_int8_vs_read/" + g.name(),
        [g](benchmark::State& st) { BM_gemv_int8(st, g, Beside::read); });
    add("BM_gemv_read/int8/" + g.name(), [g](benchmark::State& st) { BM_gemv_read_int8(st, g); });
    add("BM_gemv_int8_vs_copy/" + g.name(),
        [g](benchmark::State& st) { BM_gemv_int8(st, g, Beside::copy); });
    add("BM_gemv_copy/int8/" + g.name(), [g](benchmark::State& st) { BM_gemv_copy_int8(st, g); });
  }
  return true;
}();

}  // namespace
