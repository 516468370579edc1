// Chapter 11 benchmarks, cuBLASLt GEMMs (rows: decode_attention.cpp's header):
//   BM_lt_gemm/{bf16,int8,fp8,fp8_fast,fp8_e5m2x}/<size>
// The ratios and speed goals are declared in bench/ch11/ch11.toml.
#include "ch11/lt_gemm.hpp"

#include <cuda_bf16.h>

#include <cmath>
#include <cstdint>
#include <map>
#include <random>
#include <string>
#include <utility>
#include <vector>

#include "ch11/ch11.hpp"
#include "cudalab/bench.hpp"
#include "cudalab/check.hpp"
#include "cudalab/memory.hpp"

using namespace cudalab;
using namespace cudalab::ch11;

namespace {

// cuBLASLt GEMMs, m = n = k = size. Inputs made on the host; each row checks 256 sampled outputs
// against the double oracle (tolerances of tests/ch11/test_lt_gemm.cpp).
struct LtHost {
  std::vector<std::int8_t> wi, xi;
  std::vector<__nv_bfloat16> wb, xb;
  Fp8Tensor wf, xf, xf5;  // xf5: the activations in E5M2
};
const LtHost& lt_host(int s) {
  static std::map<int, LtHost> cache;
  if (auto it = cache.find(s); it != cache.end()) return it->second;
  LtHost h;
  const std::size_t n = static_cast<std::size_t>(s) * s;
  std::mt19937_64 g(99);
  std::uniform_int_distribution<int> ui(-127, 127);
  std::uniform_real_distribution<float> uf(-1, 1);
  std::vector<float> fw(n), fx(n);
  h.wi.resize(n);
  h.xi.resize(n);
  h.wb.resize(n);
  h.xb.resize(n);
  for (std::size_t i = 0; i < n; ++i) {
    h.wi[i] = static_cast<std::int8_t>(ui(g));
    h.xi[i] = static_cast<std::int8_t>(ui(g));
    fw[i] = uf(g) * 0.05f;  // weight-like
    fx[i] = uf(g) * 4.0f;   // activation-like
    h.wb[i] = __float2bfloat16_rn(fw[i]);
    h.xb[i] = __float2bfloat16_rn(fx[i]);
  }
  h.wf = quantize_fp8(fw, Fp8Format::kE4M3);
  h.xf = quantize_fp8(fx, Fp8Format::kE4M3);
  h.xf5 = quantize_fp8(fx, Fp8Format::kE5M2);
  return cache.emplace(s, std::move(h)).first->second;
}

struct LtData {
  int size;
  const LtHost& h;
  const std::vector<std::int8_t>& wi;
  const std::vector<std::int8_t>& xi;
  const std::vector<__nv_bfloat16>& wb;
  const std::vector<__nv_bfloat16>& xb;
  const Fp8Tensor& wf;
  const Fp8Tensor& xf;
  DeviceBuffer<std::int8_t> dwi, dxi;
  DeviceBuffer<__nv_bfloat16> dwb, dxb, yb;
  DeviceBuffer<std::uint8_t> dwf, dxf, dxf5;
  DeviceBuffer<float> ws, xs, xs5;
  DeviceBuffer<std::int32_t> yi;
  LtGemm lt;
  explicit LtData(int s)
      : size(s),
        h(lt_host(s)),
        wi(h.wi),
        xi(h.xi),
        wb(h.wb),
        xb(h.xb),
        wf(h.wf),
        xf(h.xf),
        dwi(to_device(h.wi)),
        dxi(to_device(h.xi)),
        dwb(to_device(h.wb)),
        dxb(to_device(h.xb)),
        yb(static_cast<std::size_t>(s) * static_cast<std::size_t>(s)),
        dwf(to_device(h.wf.codes)),
        dxf(to_device(h.xf.codes)),
        dxf5(to_device(h.xf5.codes)),
        ws(to_device(std::vector<float>{h.wf.scale})),
        xs(to_device(std::vector<float>{h.xf.scale})),
        xs5(to_device(std::vector<float>{h.xf5.scale})),
        yi(static_cast<std::size_t>(s) * static_cast<std::size_t>(s)) {}
  void bf16(cudaStream_t st) { lt.bf16(dwb.data(), dxb.data(), yb.data(), size, size, size, st); }
  void int8(cudaStream_t st) { lt.int8(dwi.data(), dxi.data(), yi.data(), size, size, size, st); }
  void fp8(cudaStream_t st, bool fast, bool e5m2) {
    lt.fp8(dwf.data(), e5m2 ? dxf5.data() : dxf.data(), ws.data(), e5m2 ? xs5.data() : xs.data(),
           yb.data(), size, size, size, fast, st, e5m2 ? Fp8Format::kE5M2 : Fp8Format::kE4M3);
  }
  // kind: 0 bf16, 1 int8, 2 fp8, 3 fp8 fast, 4 fp8 with E5M2 activations.
  std::string check(int kind) const {
    const std::size_t s = static_cast<std::size_t>(size);
    const auto gotb =
        kind == 1 ? std::vector<__nv_bfloat16>() : bench::download(yb.data(), yb.size());
    const auto goti =
        kind == 1 ? bench::download(yi.data(), yi.size()) : std::vector<std::int32_t>();
    const bool e5m2 = kind == 4;
    const Fp8Tensor& x8 = e5m2 ? h.xf5 : xf;
    const Fp8Format x_format = e5m2 ? Fp8Format::kE5M2 : Fp8Format::kE4M3;
    std::mt19937_64 g(5);
    for (int sample = 0; sample < 256; ++sample) {
      const std::size_t o = g() % s, t = g() % s;  // output feature o of token t: Y[t][o]
      double want = 0, a = 0;
      for (std::size_t i = 0; i < s; ++i) {
        double p;
        if (kind == 1)
          p = static_cast<double>(wi[o * s + i]) * xi[t * s + i];
        else if (kind == 0)
          p = double{__bfloat162float(wb[o * s + i])} * __bfloat162float(xb[t * s + i]);
        else
          p = double{fp8_to_float(wf.codes[o * s + i], Fp8Format::kE4M3)} * wf.scale *
              fp8_to_float(x8.codes[t * s + i], x_format) * x8.scale;
        want += p;
        a += std::fabs(p);
      }
      const double got = kind == 1 ? goti[t * s + o] : __bfloat162float(gotb[t * s + o]);
      const double tol =
          kind == 1 ? 0 : std::ldexp(std::fabs(want), -8) + (kind == 3 ? 1e-3 : 1e-5) * a;
      if (std::fabs(got - want) > tol)
        return "GEMM " + std::to_string(size) + ": Y[" + std::to_string(t) + "][" +
               std::to_string(o) + "] = " + std::to_string(got) + ", want " + std::to_string(want);
    }
    return "";
  }
};

void BM_lt_gemm(benchmark::State& state, int size, int kind) {
  static const char* names[] = {"bf16", "int8", "fp8", "fp8_fast", "fp8_e5m2x"};
  if (kind >= 2) {
    if (std::string why; !fp8_supported(&why)) {
      state.SkipWithError(why.c_str());
      return;
    }
  }
  LtData d(size);
  auto work = [&](cudaStream_t st) {
    if (kind == 0)
      d.bf16(st);
    else if (kind == 1)
      d.int8(st);
    else
      d.fp8(st, kind == 3, kind == 4);
  };
  if (!bench::verify(state, std::string("lt_gemm/") + names[kind] + "/" + std::to_string(size),
                     [&] {
                       work(nullptr);
                       CUDALAB_CHECK(cudaDeviceSynchronize());
                       return d.check(kind);
                     }))
    return;
  const double flops = 2.0 * size * size * size;
  if (kind == 0)
    bench::run(state, work, {.flops = flops});
  else
    bench::run_vs(state, work, [&](cudaStream_t st) { d.bf16(st); }, {.flops = flops});
}

using bench::add;  // cudalab/bench.hpp

[[maybe_unused]] const bool kRegistered = [] {
  for (int size : {4096, 8192})
    for (int kind = 0; kind < 5; ++kind) {
      static const char* names[] = {"bf16", "int8", "fp8", "fp8_fast", "fp8_e5m2x"};
      add("BM_lt_gemm/" + std::string(names[kind]) + "/" + std::to_string(size),
          [size, kind](benchmark::State& st) { BM_lt_gemm(st, size, kind); });
    }
  return true;
}();

}  // namespace
