// Starter track — write your code at the TODO marks; the tests of each exercise
// fail until you do. (Generated from chapters/11_llm_serving/reference/lt_gemm.cpp by scripts/variants.py.)
// Quantized GEMMs through cuBLASLt (lt_gemm.hpp). Worked example: the lesson is the call — data
// types, the compute type, the TN layout, the scale pointers — and what each precision costs in
// accuracy (tests) and buys in speed (bench rows beside bf16).
#include "ch11/lt_gemm.hpp"

#include <cublasLt.h>

#include <cstdint>
#include <map>
#include <stdexcept>
#include <tuple>

#include "cudalab/check.hpp"
#include "cudalab/cublas.hpp"

#define CUDALAB_LT(expr) ::cudalab::check_cublas((expr), #expr, __FILE__, __LINE__)

namespace cudalab::ch11 {

namespace {
enum class Kind { kBF16, kINT8, kFP8, kFP8Fast, kFP8E5M2, kFP8FastE5M2 };  // E5M2: of x
bool is_fp8(Kind k) {
  return k == Kind::kFP8 || k == Kind::kFP8Fast || k == Kind::kFP8E5M2 || k == Kind::kFP8FastE5M2;
}

struct Plan {
  cublasLtMatmulDesc_t op = nullptr;
  cublasLtMatrixLayout_t a = nullptr, b = nullptr, c = nullptr;
  cublasLtMatmulAlgo_t algo{};
};
void destroy(Plan& p) noexcept {
  if (p.op) cublasLtMatmulDescDestroy(p.op);
  if (p.a) cublasLtMatrixLayoutDestroy(p.a);
  if (p.b) cublasLtMatrixLayoutDestroy(p.b);
  if (p.c) cublasLtMatrixLayoutDestroy(p.c);
}

void check_dims(int m, int n, int k, int multiple) {
  require(m > 0 && m % multiple == 0, "m",
          multiple == 1 ? "must be positive" : "must be a positive multiple of 16");
  require(n > 0 && n % multiple == 0, "n",
          multiple == 1 ? "must be positive" : "must be a positive multiple of 16");
  require(k > 0 && k % multiple == 0, "k",
          multiple == 1 ? "must be positive" : "must be a positive multiple of 16");
}
}  // namespace

struct LtGemm::Impl {
  cublasLtHandle_t handle = nullptr;
  void* workspace = nullptr;
  std::size_t workspace_bytes = std::size_t{32} << 20;
  std::map<std::tuple<Kind, int, int, int>, Plan> plans;

  ~Impl() {
    for (auto& kv : plans) destroy(kv.second);
    if (workspace) cudaFree(workspace);
    if (handle) cublasLtDestroy(handle);
  }

  // cuBLAS is column-major: our row-major W[m][k] is a k x m column-major matrix (transposed: T),
  // X[n][k] is k x n (N), Y[n][m] is the m x n column-major result.
  Plan& plan(Kind kind, int m, int n, int k) {
    const auto key = std::make_tuple(kind, m, n, k);
    if (auto it = plans.find(key); it != plans.end()) return it->second;
    Plan p;
    try {
      cudaDataType_t ab = CUDA_R_16BF, xb = CUDA_R_16BF, cd = CUDA_R_16BF, scale = CUDA_R_32F;
      cublasComputeType_t compute = CUBLAS_COMPUTE_32F;
      if (kind == Kind::kINT8) {
        ab = xb = CUDA_R_8I;
        cd = CUDA_R_32I;
        scale = CUDA_R_32I;
        compute = CUBLAS_COMPUTE_32I;
      } else if (is_fp8(kind)) {
        ab = CUDA_R_8F_E4M3;
        xb = kind == Kind::kFP8E5M2 || kind == Kind::kFP8FastE5M2 ? CUDA_R_8F_E5M2 : CUDA_R_8F_E4M3;
      }
      CUDALAB_LT(cublasLtMatmulDescCreate(&p.op, compute, scale));
      const cublasOperation_t ta = CUBLAS_OP_T, tb = CUBLAS_OP_N;
      CUDALAB_LT(
          cublasLtMatmulDescSetAttribute(p.op, CUBLASLT_MATMUL_DESC_TRANSA, &ta, sizeof(ta)));
      CUDALAB_LT(
          cublasLtMatmulDescSetAttribute(p.op, CUBLASLT_MATMUL_DESC_TRANSB, &tb, sizeof(tb)));
      if (kind == Kind::kFP8Fast || kind == Kind::kFP8FastE5M2) {
        const std::int8_t fast = 1;
        CUDALAB_LT(cublasLtMatmulDescSetAttribute(p.op, CUBLASLT_MATMUL_DESC_FAST_ACCUM, &fast,
                                                  sizeof(fast)));
      }
      CUDALAB_LT(cublasLtMatrixLayoutCreate(&p.a, ab, static_cast<std::uint64_t>(k),
                                            static_cast<std::uint64_t>(m), k));
      CUDALAB_LT(cublasLtMatrixLayoutCreate(&p.b, xb, static_cast<std::uint64_t>(k),
                                            static_cast<std::uint64_t>(n), k));
      CUDALAB_LT(cublasLtMatrixLayoutCreate(&p.c, cd, static_cast<std::uint64_t>(m),
                                            static_cast<std::uint64_t>(n), m));
      if (is_fp8(kind)) {  // placeholders until the call sets them
        const float* none = nullptr;
        CUDALAB_LT(cublasLtMatmulDescSetAttribute(p.op, CUBLASLT_MATMUL_DESC_A_SCALE_POINTER, &none,
                                                  sizeof(none)));
        CUDALAB_LT(cublasLtMatmulDescSetAttribute(p.op, CUBLASLT_MATMUL_DESC_B_SCALE_POINTER, &none,
                                                  sizeof(none)));
      }
      cublasLtMatmulPreference_t pref = nullptr;
      CUDALAB_LT(cublasLtMatmulPreferenceCreate(&pref));
      cublasLtMatmulHeuristicResult_t result{};
      int found = 0;
      const cublasStatus_t st =
          cublasLtMatmulPreferenceSetAttribute(pref, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES,
                                               &workspace_bytes, sizeof(workspace_bytes));
      const cublasStatus_t hs = st == CUBLAS_STATUS_SUCCESS
                                    ? cublasLtMatmulAlgoGetHeuristic(handle, p.op, p.a, p.b, p.c,
                                                                     p.c, pref, 1, &result, &found)
                                    : st;
      cublasLtMatmulPreferenceDestroy(pref);
      CUDALAB_LT(hs);
      if (found == 0)
        throw std::runtime_error("cuBLASLt has no algorithm for this GEMM (type, sizes, GPU)");
      p.algo = result.algo;
    } catch (...) {
      destroy(p);
      throw;
    }
    return plans.emplace(key, p).first->second;
  }

  template <class S>
  void run(Plan& p, S alpha, S beta, const void* w, const void* x, void* y, cudaStream_t stream) {
    CUDALAB_LT(cublasLtMatmul(handle, p.op, &alpha, w, p.a, x, p.b, &beta, y, p.c, y, p.c, &p.algo,
                              workspace, workspace_bytes, stream));
  }
};

LtGemm::LtGemm() : impl_(std::make_unique<Impl>()) {
  CUDALAB_LT(cublasLtCreate(&impl_->handle));
  CUDALAB_CHECK(cudaMalloc(&impl_->workspace, impl_->workspace_bytes));
}
LtGemm::~LtGemm() = default;
LtGemm::LtGemm(LtGemm&&) noexcept = default;
LtGemm& LtGemm::operator=(LtGemm&&) noexcept = default;

void LtGemm::bf16(const void* w, const void* x, void* y, int m, int n, int k, cudaStream_t stream) {
  check_dims(m, n, k, 1);
  require_device_pointer(w, static_cast<std::size_t>(m) * k, "w");
  require_device_pointer(x, static_cast<std::size_t>(n) * k, "x");
  require_device_pointer(y, static_cast<std::size_t>(m) * n, "y");
  impl_->run(impl_->plan(Kind::kBF16, m, n, k), 1.0f, 0.0f, w, x, y, stream);
}

void LtGemm::int8(const std::int8_t* w, const std::int8_t* x, std::int32_t* y, int m, int n, int k,
                  cudaStream_t stream) {
  check_dims(m, n, k, 16);
  require_device_pointer(w, static_cast<std::size_t>(m) * k, "w");
  require_device_pointer(x, static_cast<std::size_t>(n) * k, "x");
  require_device_pointer(y, static_cast<std::size_t>(m) * n, "y");
  impl_->run(impl_->plan(Kind::kINT8, m, n, k), std::int32_t{1}, std::int32_t{0}, w, x, y, stream);
}

bool fp8_supported(std::string* why_not) {
  int dev = 0, major = 0, minor = 0;
  CUDALAB_CHECK(cudaGetDevice(&dev));
  CUDALAB_CHECK(cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, dev));
  CUDALAB_CHECK(cudaDeviceGetAttribute(&minor, cudaDevAttrComputeCapabilityMinor, dev));
  const bool ok = major * 10 + minor >= 89;
  if (!ok && why_not)
    *why_not = "FP8 GEMMs need compute capability 8.9 or newer (Ada, Hopper); this GPU is " +
               std::to_string(major) + "." + std::to_string(minor);
  return ok;
}

void LtGemm::fp8(const std::uint8_t* w, const std::uint8_t* x, const float* w_scale,
                 const float* x_scale, void* y, int m, int n, int k, bool fast_accum,
                 cudaStream_t stream, Fp8Format x_format) {
  check_dims(m, n, k, 16);
  require_device_pointer(w, static_cast<std::size_t>(m) * k, "w");
  require_device_pointer(x, static_cast<std::size_t>(n) * k, "x");
  require_device_pointer(w_scale, 1, "w_scale");
  require_device_pointer(x_scale, 1, "x_scale");
  require_device_pointer(y, static_cast<std::size_t>(m) * n, "y");
  if (std::string why; !fp8_supported(&why)) throw std::runtime_error(why);
  const bool e5m2 = x_format == Fp8Format::kE5M2;
  Plan& p = impl_->plan(fast_accum ? (e5m2 ? Kind::kFP8FastE5M2 : Kind::kFP8Fast)
                                   : (e5m2 ? Kind::kFP8E5M2 : Kind::kFP8),
                        m, n, k);
  CUDALAB_LT(cublasLtMatmulDescSetAttribute(p.op, CUBLASLT_MATMUL_DESC_A_SCALE_POINTER, &w_scale,
                                            sizeof(w_scale)));
  CUDALAB_LT(cublasLtMatmulDescSetAttribute(p.op, CUBLASLT_MATMUL_DESC_B_SCALE_POINTER, &x_scale,
                                            sizeof(x_scale)));
  impl_->run(p, 1.0f, 0.0f, w, x, y, stream);
}

}  // namespace cudalab::ch11
