// cuDNN convolution: which forward algorithms it offers for a shape, what they cost, which it
// picks with and without workspace — and a ready-to-run forward convolution for the benchmark.
//
// Two ways to choose an algorithm (cuDNN documentation, "find versus get"):
//  * cudnnGetConvolutionForwardAlgorithm_v7: heuristics only, instant, ranked by a model;
//  * cudnnFindConvolutionForwardAlgorithmEx: runs every algorithm on real buffers, sorted by
//    measured time (seconds of benchmarking; frameworks cache the result: cudnn.benchmark).
// Many fast algorithms (FFT, WINOGRAD_NONFUSED, often PRECOMP_GEMM) need a workspace; with a
// limit of 0 bytes cuDNN falls back to what runs in place. Built only with cuDNN
// (CUDALAB_HAVE_CUDNN).
#include <algorithm>
#include <stdexcept>
#include <string>
#include <vector>

#include "ch06/conv.hpp"
#include "cudalab/check.hpp"
#include "cudalab/memory.hpp"

#if CUDALAB_HAVE_CUDNN
#include "cudalab/cudnn.hpp"

namespace cudalab::ch06 {

bool have_cudnn() noexcept {
  return true;
}

namespace {

std::string algo_name(cudnnConvolutionFwdAlgo_t a) {
  switch (a) {
    case CUDNN_CONVOLUTION_FWD_ALGO_IMPLICIT_GEMM:
      return "IMPLICIT_GEMM";
    case CUDNN_CONVOLUTION_FWD_ALGO_IMPLICIT_PRECOMP_GEMM:
      return "IMPLICIT_PRECOMP_GEMM";
    case CUDNN_CONVOLUTION_FWD_ALGO_GEMM:
      return "GEMM";
    case CUDNN_CONVOLUTION_FWD_ALGO_DIRECT:
      return "DIRECT";
    case CUDNN_CONVOLUTION_FWD_ALGO_FFT:
      return "FFT";
    case CUDNN_CONVOLUTION_FWD_ALGO_FFT_TILING:
      return "FFT_TILING";
    case CUDNN_CONVOLUTION_FWD_ALGO_WINOGRAD:
      return "WINOGRAD";
    case CUDNN_CONVOLUTION_FWD_ALGO_WINOGRAD_NONFUSED:
      return "WINOGRAD_NONFUSED";
    default:
      return "ALGO_" + std::to_string(static_cast<int>(a));
  }
}

std::string status_name(cudnnStatus_t s) {
  std::string n = cudnnGetErrorString(s);
  const std::string prefix = "CUDNN_STATUS_";
  return n.rfind(prefix, 0) == 0 ? n.substr(prefix.size()) : n;
}

std::string math_name(cudnnMathType_t m) {
  switch (m) {
    case CUDNN_DEFAULT_MATH:
      return "DEFAULT_MATH";
    case CUDNN_TENSOR_OP_MATH:
      return "TENSOR_OP_MATH";
    case CUDNN_TENSOR_OP_MATH_ALLOW_CONVERSION:
      return "TENSOR_OP_MATH_ALLOW_CONVERSION";
    case CUDNN_FMA_MATH:
      return "FMA_MATH";
    default:
      return "MATH_" + std::to_string(static_cast<int>(m));
  }
}

std::size_t element_bytes(ConvType t) {
  return t == ConvType::kF32 ? 4 : 2;
}

// The four descriptors of one convolution. fp16 data accumulates in fp32 (compute type FLOAT),
// like every framework's mixed precision. `math` DEFAULT lets cuDNN use tensor cores (TF32 for
// fp32 data on Ampere and later); FMA keeps fp32 on the CUDA cores.
struct ConvDescriptors {
  CudnnTensorDesc x, y;
  CudnnFilterDesc w;
  CudnnConvDesc conv;
  int yn = 0, yc = 0, yh = 0, yw = 0;
  ConvDescriptors(const ConvShape& s, ConvLayout layout, ConvType type, cudnnMathType_t math) {
    const cudnnDataType_t dt = type == ConvType::kF32 ? CUDNN_DATA_FLOAT : CUDNN_DATA_HALF;
    const cudnnTensorFormat_t fmt =
        layout == ConvLayout::kNCHW ? CUDNN_TENSOR_NCHW : CUDNN_TENSOR_NHWC;
    CUDALAB_CHECK_CUDNN(cudnnSetTensor4dDescriptor(x, fmt, dt, s.n, s.c, s.h, s.w));
    CUDALAB_CHECK_CUDNN(cudnnSetFilter4dDescriptor(w, dt, fmt, s.k, s.c, s.r, s.s));
    CUDALAB_CHECK_CUDNN(cudnnSetConvolution2dDescriptor(
        conv, s.pad, s.pad, s.stride, s.stride, 1, 1, CUDNN_CROSS_CORRELATION, CUDNN_DATA_FLOAT));
    CUDALAB_CHECK_CUDNN(cudnnSetConvolutionMathType(conv, math));
    CUDALAB_CHECK_CUDNN(cudnnGetConvolution2dForwardOutputDim(conv, x, w, &yn, &yc, &yh, &yw));
    CUDALAB_CHECK_CUDNN(cudnnSetTensor4dDescriptor(y, fmt, dt, yn, yc, yh, yw));
  }
};

ConvAlgoResult to_result(const cudnnConvolutionFwdAlgoPerf_t& p, bool from_find, int rank) {
  return {.algo = algo_name(p.algo),
          .status = status_name(p.status),
          .time_ms = from_find && p.status == CUDNN_STATUS_SUCCESS ? p.time : -1.0f,
          .workspace = p.memory,
          .math = math_name(p.mathType),
          .from_find = from_find,
          .rank = rank};
}

// cudnnFindConvolutionForwardAlgorithmEx on buffers of the shape (allocated here): every
// algorithm's result, sorted by measured time. The workspace offered is what the hungriest
// algorithm of the heuristics asks for, up to `max_ws`.
std::vector<cudnnConvolutionFwdAlgoPerf_t> find_forward(CudnnHandle& h, const ConvDescriptors& d,
                                                        const ConvShape& shape, ConvType type,
                                                        std::size_t max_ws) {
  int max_count = 0, returned = 0;
  CUDALAB_CHECK_CUDNN(cudnnGetConvolutionForwardAlgorithmMaxCount(h, &max_count));
  std::vector<cudnnConvolutionFwdAlgoPerf_t> perf(static_cast<std::size_t>(max_count));
  CUDALAB_CHECK_CUDNN(cudnnGetConvolutionForwardAlgorithm_v7(h, d.x, d.w, d.conv, d.y, max_count,
                                                             &returned, perf.data()));
  std::size_t largest = 0;
  for (int i = 0; i < returned; ++i)
    if (perf[i].status == CUDNN_STATUS_SUCCESS) largest = std::max(largest, perf[i].memory);
  // Values only matter for timing (no NaN, no denormals): bytes 0x3C give 0.0115f in fp32 and
  // 1.06 in fp16 everywhere.
  const std::size_t eb = element_bytes(type);
  DeviceBuffer<unsigned char> x(eb * shape.n * shape.c * shape.h * shape.w),
      w(eb * shape.k * shape.c * shape.r * shape.s),
      y(eb * static_cast<std::size_t>(d.yn) * d.yc * d.yh * d.yw);
  CUDALAB_CHECK(cudaMemset(x.data(), 0x3C, x.bytes()));
  CUDALAB_CHECK(cudaMemset(w.data(), 0x3C, w.bytes()));
  DeviceBuffer<unsigned char> ws(std::min(largest, max_ws));
  CUDALAB_CHECK_CUDNN(cudnnFindConvolutionForwardAlgorithmEx(
      h, d.x, x.data(), d.w, w.data(), d.conv, d.y, y.data(), max_count, &returned, perf.data(),
      ws.data(), ws.bytes()));
  perf.resize(static_cast<std::size_t>(returned));
  return perf;
}

bool gemm_family(cudnnConvolutionFwdAlgo_t a) {
  return a == CUDNN_CONVOLUTION_FWD_ALGO_IMPLICIT_GEMM ||
         a == CUDNN_CONVOLUTION_FWD_ALGO_IMPLICIT_PRECOMP_GEMM ||
         a == CUDNN_CONVOLUTION_FWD_ALGO_GEMM;
}

}  // namespace

ConvAlgoReport enumerate_conv_algos(const ConvShape& shape, ConvLayout layout, ConvType type,
                                    std::size_t max_workspace_bytes) {
  check_conv_shape(shape);
  CudnnHandle h;
  ConvDescriptors d(shape, layout, type, CUDNN_DEFAULT_MATH);
  int max_count = 0, returned = 0;
  CUDALAB_CHECK_CUDNN(cudnnGetConvolutionForwardAlgorithmMaxCount(h, &max_count));
  std::vector<cudnnConvolutionFwdAlgoPerf_t> heur(static_cast<std::size_t>(max_count));
  ConvAlgoReport report;
  CUDALAB_CHECK_CUDNN(cudnnGetConvolutionForwardAlgorithm_v7(h, d.x, d.w, d.conv, d.y, max_count,
                                                             &returned, heur.data()));
  for (int i = 0; i < returned; ++i) report.heuristics.push_back(to_result(heur[i], false, i));
  const auto perf = find_forward(h, d, shape, type, max_workspace_bytes);
  for (int i = 0; i < static_cast<int>(perf.size()); ++i) {
    report.measured.push_back(to_result(perf[i], true, i));
    const auto& r = report.measured.back();
    if (r.status != "SUCCESS" || r.time_ms < 0) continue;
    if (report.pick_unlimited.empty()) {  // Find sorts by time: the first success is the fastest
      report.pick_unlimited = r.algo;
      report.time_unlimited_ms = r.time_ms;
    }
    if (report.pick_no_workspace.empty() && r.workspace == 0) {
      report.pick_no_workspace = r.algo;
      report.time_no_workspace_ms = r.time_ms;
    }
  }
  return report;
}

struct CudnnConvForward::Impl {
  CudnnHandle h;
  ConvDescriptors d;
  cudnnConvolutionFwdAlgo_t algo{};
  DeviceBuffer<unsigned char> ws;
  // FMA_MATH: fp32 on the CUDA cores, the fair comparison for a hand-written fp32 kernel.
  Impl(const ConvShape& s, std::size_t max_ws, CudnnConvChoice choice)
      : d(s, ConvLayout::kNCHW, ConvType::kF32, CUDNN_FMA_MATH) {
    std::vector<cudnnConvolutionFwdAlgoPerf_t> perf;
    if (choice == CudnnConvChoice::kHeuristic) {
      int max_count = 0, returned = 0;
      CUDALAB_CHECK_CUDNN(cudnnGetConvolutionForwardAlgorithmMaxCount(h, &max_count));
      perf.resize(static_cast<std::size_t>(max_count));
      CUDALAB_CHECK_CUDNN(cudnnGetConvolutionForwardAlgorithm_v7(
          h, d.x, d.w, d.conv, d.y, max_count, &returned, perf.data()));
      perf.resize(static_cast<std::size_t>(returned));
    } else {
      perf = find_forward(h, d, s, ConvType::kF32, max_ws);  // sorted by measured time
    }
    for (const auto& p : perf) {
      if (p.status != CUDNN_STATUS_SUCCESS || p.memory > max_ws) continue;
      if (choice == CudnnConvChoice::kFastestGemm && !gemm_family(p.algo)) continue;
      algo = p.algo;
      ws = DeviceBuffer<unsigned char>(p.memory);
      return;
    }
    throw std::runtime_error(
        "cuDNN offers no forward algorithm of that kind for this shape within the workspace limit");
  }
};

CudnnConvForward::CudnnConvForward(const ConvShape& shape, std::size_t max_workspace_bytes,
                                   CudnnConvChoice choice) {
  check_conv_shape(shape);
  impl_ = new Impl(shape, max_workspace_bytes, choice);
}
CudnnConvForward::~CudnnConvForward() {
  delete impl_;
}

void CudnnConvForward::run(const float* x, const float* w, float* y, cudaStream_t stream) {
  CUDALAB_CHECK_CUDNN(cudnnSetStream(impl_->h, stream));
  const float alpha = 1.0f, beta = 0.0f;
  CUDALAB_CHECK_CUDNN(cudnnConvolutionForward(impl_->h, &alpha, impl_->d.x, x, impl_->d.w, w,
                                              impl_->d.conv, impl_->algo, impl_->ws.data(),
                                              impl_->ws.bytes(), &beta, impl_->d.y, y));
}

std::string CudnnConvForward::algo_name() const {
  return ch06::algo_name(impl_->algo);
}

}  // namespace cudalab::ch06

#else  // built without cuDNN: the API exists and says why it cannot run.

namespace cudalab::ch06 {

bool have_cudnn() noexcept {
  return false;
}

namespace {
[[noreturn]] void no_cudnn() {
  throw std::runtime_error(
      "cudalab was configured without cuDNN (CUDALAB_HAVE_CUDNN=OFF): install "
      "cuDNN 9 and reconfigure");
}
}  // namespace

ConvAlgoReport enumerate_conv_algos(const ConvShape&, ConvLayout, ConvType, std::size_t) {
  no_cudnn();
}
struct CudnnConvForward::Impl {};
CudnnConvForward::CudnnConvForward(const ConvShape&, std::size_t, CudnnConvChoice) {
  no_cudnn();
}
CudnnConvForward::~CudnnConvForward() {
  delete impl_;
}
void CudnnConvForward::run(const float*, const float*, float*, cudaStream_t) {
  no_cudnn();
}
std::string CudnnConvForward::algo_name() const {
  return {};
}

}  // namespace cudalab::ch06

#endif
