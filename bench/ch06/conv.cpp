// Chapter 6 benchmarks, convolution: the implicit GEMM (exercise 6.4) beside cuDNN (rows:
// sgemm.cpp's header):
//   BM_conv/implicit_gemm/<layer>, BM_conv_cudnn/<layer>, BM_conv_cudnn_fastest/<layer>,
//   BM_conv_cudnn_gemm/<layer>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "ch06/ch06.hpp"
#include "ch06_bench.hpp"
#include "cudalab/bench.hpp"
#include "cudalab/device_fill.hpp"
#include "cudalab/memory.hpp"

using namespace cudalab;
using namespace cudalab::bench_ch06;

namespace {

struct ConvLayer {
  const char* slug;
  ch06::ConvShape shape;
};
// ResNet-50 layers, batch 32 (n, c, h, w, k, r, s, stride, pad).
const ConvLayer kLayers[] = {{"conv1_7x7s2_3to64_224", {32, 3, 224, 224, 64, 7, 7, 2, 3}},
                             {"3x3_64to64_56", {32, 64, 56, 56, 64, 3, 3, 1, 1}},
                             {"1x1_256to64_56", {32, 256, 56, 56, 64, 1, 1, 1, 0}},
                             {"3x3_128to128_28", {32, 128, 28, 28, 128, 3, 3, 1, 1}},
                             {"3x3_256to256_14", {32, 256, 14, 14, 256, 3, 3, 1, 1}},
                             {"3x3_512to512_7", {32, 512, 7, 7, 512, 3, 3, 1, 1}}};

struct ConvData {
  ch06::ConvShape s;
  DeviceBuffer<float> x, w, y, ref;
  std::size_t workspace_bytes;
  DeviceBuffer<float> workspace;  // split-K slices of the implicit GEMM, allocated once
  explicit ConvData(const ch06::ConvShape& shape)
      : s(shape),
        x(uniform_device_buffer(std::size_t(s.n) * s.c * s.h * s.w, 31, -1.0f, 1.0f)),
        w(uniform_device_buffer(std::size_t(s.k) * s.c * s.r * s.s, 32, -1.0f, 1.0f)),
        y(std::size_t(s.n) * s.k * s.p() * s.q()),
        ref(y.size()),
        workspace_bytes(ch06::conv2d_implicit_gemm_workspace_bytes(s)),
        workspace((workspace_bytes + sizeof(float) - 1) / sizeof(float)) {}
  // Compulsory traffic: read x and w once, write y.
  double bytes() const { return 4.0 * double(x.size() + w.size() + y.size()); }
  int reduction() const { return s.c * s.r * s.s; }
  // cuDNN may pick FFT or Winograd: their rounding grows with the transform, hence the wider bound.
  Tolerance tolerance() const { return {.abs = 5e-5 * reduction() + 1e-3, .rel = 1e-4}; }
  // Host oracle (double) on 4096 sampled outputs (both ends of every dimension included).
  std::string check_sampled(const DeviceBuffer<float>& out) const {
    const std::vector<float> hx = x.to_host(), hw = w.to_host(), hy = out.to_host();
    const int P = s.p(), Q = s.q();
    std::vector<double> got, want;
    for (int t = 0; t < 4096; ++t) {
      const int n = (t * 7) % s.n, k = (t * 13) % s.k, p = (t * 29) % P, q = (t * 31 + t / 64) % Q;
      double acc = 0;
      for (int c = 0; c < s.c; ++c)
        for (int r = 0; r < s.r; ++r)
          for (int u = 0; u < s.s; ++u) {
            const int hh = p * s.stride - s.pad + r, ww = q * s.stride - s.pad + u;
            if (hh < 0 || hh >= s.h || ww < 0 || ww >= s.w) continue;
            acc += double(hx[((std::size_t(n) * s.c + c) * s.h + hh) * s.w + ww]) *
                   double(hw[((std::size_t(k) * s.c + c) * s.r + r) * s.s + u]);
          }
      want.push_back(acc);
      got.push_back(hy[((std::size_t(n) * s.k + k) * P + p) * Q + q]);
    }
    return bench::mismatch(got, want, tolerance(), "conv2d against a host oracle (4096 outputs)");
  }
};

// One cuDNN convolution per (layer, choice) for the whole process: cudnnFind runs once (its pick
// can differ between runs of Find; within a process every repetition times the same algorithm).
// Never destroyed: a static destructor would run after the CUDA runtime's teardown.
ch06::CudnnConvForward& cudnn_conv(const ConvLayer& layer, ch06::CudnnConvChoice choice) {
  static std::map<std::pair<std::string, int>, ch06::CudnnConvForward*> cache;
  auto& slot = cache[{layer.slug, static_cast<int>(choice)}];
  if (!slot) slot = new ch06::CudnnConvForward(layer.shape, std::size_t{1} << 30, choice);
  return *slot;
}

void bm_conv_implicit_gemm(benchmark::State& state, const ConvLayer& layer) {
  ConvData d(layer.shape);
  auto work = [&](cudaStream_t s) {
    ch06::conv2d_implicit_gemm(d.s, d.x.data(), d.w.data(), d.y.data(), d.workspace.data(),
                               d.workspace_bytes, s);
  };
  if (!ch06::have_cudnn()) {  // no library to sit beside: a host-checked row of its own
    state.SetLabel("no cuDNN in this build: not interleaved");
    if (!bench::verify(state, std::string("conv/") + layer.slug, [&] {
          work(nullptr);
          CUDALAB_CHECK(cudaDeviceSynchronize());
          return d.check_sampled(d.y);
        }))
      return;
    bench::run(state, work, {.bytes = d.bytes(), .flops = d.s.flops()});
    return;
  }
  // Like for like: cuDNN's fastest implicit-GEMM-family algorithm (BM_conv_cudnn_fastest has its
  // fastest of any kind, FFT and Winograd included, for the ratios that compare algorithms).
  ch06::CudnnConvForward& conv = cudnn_conv(layer, ch06::CudnnConvChoice::kFastestGemm);
  state.SetLabel("beside cuDNN " + conv.algo_name() + ", FMA math");
  auto base = [&](cudaStream_t s) { conv.run(d.x.data(), d.w.data(), d.ref.data(), s); };
  if (!bench::verify(state, std::string("conv/") + layer.slug, [&] {
        work(nullptr);
        base(nullptr);
        CUDALAB_CHECK(cudaDeviceSynchronize());
        return bench::mismatch(d.y.to_host(), d.ref.to_host(), d.tolerance(),
                               "conv2d against cuDNN");
      }))
    return;
  bench::run_vs(state, work, base, {.bytes = d.bytes(), .flops = d.s.flops()});
}

void bm_conv_cudnn(benchmark::State& state, const ConvLayer& layer, ch06::CudnnConvChoice choice) {
  if (!ch06::have_cudnn()) {
    state.SkipWithError("built without cuDNN (CUDALAB_HAVE_CUDNN=OFF)");
    return;
  }
  ConvData d(layer.shape);
  ch06::CudnnConvForward& conv = cudnn_conv(layer, choice);
  const char* how = choice == ch06::CudnnConvChoice::kFastestGemm ? "fastest GEMM-family"
                    : choice == ch06::CudnnConvChoice::kFastest   ? "fastest"
                                                                  : "heuristic pick";
  state.SetLabel("cuDNN " + conv.algo_name() + ", FMA math, " + how);
  auto work = [&](cudaStream_t s) { conv.run(d.x.data(), d.w.data(), d.y.data(), s); };
  if (!bench::verify(state, std::string("conv_cudnn/") + conv.algo_name() + "/" + layer.slug, [&] {
        work(nullptr);
        CUDALAB_CHECK(cudaDeviceSynchronize());
        return d.check_sampled(d.y);
      }))
    return;
  bench::run(state, work, {.bytes = d.bytes(), .flops = d.s.flops()});
}

using bench::add;  // cudalab/bench.hpp

[[maybe_unused]] const bool kRegistered = [] {
  for (const auto& layer : kLayers) {
    add(std::string("BM_conv_cudnn/") + layer.slug, [&layer](benchmark::State& s) {
      bm_conv_cudnn(s, layer, ch06::CudnnConvChoice::kHeuristic);
    });
    add(std::string("BM_conv_cudnn_fastest/") + layer.slug, [&layer](benchmark::State& s) {
      bm_conv_cudnn(s, layer, ch06::CudnnConvChoice::kFastest);
    });
    add(std::string("BM_conv_cudnn_gemm/") + layer.slug, [&layer](benchmark::State& s) {
      bm_conv_cudnn(s, layer, ch06::CudnnConvChoice::kFastestGemm);
    });
    add(std::string("BM_conv/implicit_gemm/") + layer.slug,
        [&layer](benchmark::State& s) { bm_conv_implicit_gemm(s, layer); });
  }
  return true;
}();

}  // namespace
