// Starter track — write your code at the TODO marks; the tests of each exercise
// fail until you do. (Generated from chapters/06_libraries/reference/sgemm.cpp by scripts/variants.py.)
// The SGEMM ladder's front door: argument checks once, then the chosen step's launcher.
#include "ch06/sgemm.hpp"

#include <cstddef>
#include <string_view>

#include "ch06/fused.hpp"
#include "cudalab/check.hpp"
#include "cudalab/ladder.hpp"
#include "sgemm_steps.hpp"

namespace cudalab::ch06 {

namespace {

// The ladder, one row a step: the variant, its name (benchmark rows and test cases use it) and its
// launcher (sgemm_steps.hpp, one file a step). to_string and sgemm() read this table only; the
// public kAllSgemmVariants lists the same steps in the same order, which the compiler checks below.
struct Step {
  SgemmVariant variant;
  std::string_view name;
  void (*launch)(const detail::SgemmArgs&, cudaStream_t);
};
constexpr Step kLadder[] = {
    {SgemmVariant::kNaive, "naive", detail::sgemm_naive},
    {SgemmVariant::kCoalesced, "coalesced", detail::sgemm_coalesced},
    {SgemmVariant::kSmemTiled, "smem_tiled", detail::sgemm_smem_tiled},
    {SgemmVariant::kBlocktile1d, "blocktile_1d", detail::sgemm_blocktile_1d},
    {SgemmVariant::kBlocktile2d, "blocktile_2d", detail::sgemm_blocktile_2d},
    {SgemmVariant::kVectorized, "vectorized", detail::sgemm_vectorized},
    {SgemmVariant::kWarptile, "warptile", detail::sgemm_warptile},
    {SgemmVariant::kWarptileAsync, "warptile_async", detail::sgemm_warptile_async},
};
static_assert(
    same_steps(kLadder, kAllSgemmVariants),
    "kAllSgemmVariants (ch06/sgemm.hpp) and kLadder list the same steps in the same order");

}  // namespace

std::string_view to_string(SgemmVariant v) {
  const Step* s = find_step(kLadder, v);
  return s ? s->name : "unknown";
}

namespace {
// The largest grid.y any step uses is ceil(rows / 32) (naive: ceil(cols / 32)); grid.y <= 65535.
constexpr int kMaxRowsOrCols = 65535 * 32;
}  // namespace

namespace {
// The checks every SGEMM entry point makes; false: nothing to do (M == 0 or N == 0).
bool sgemm_args_ok(int M, int N, int K, const float* A, const float* B, const float* C) {
  require(M >= 0 && M <= kMaxRowsOrCols, "M", "must be in [0, 65535 * 32] (grid.y limit)");
  require(N >= 0 && N <= kMaxRowsOrCols, "N", "must be in [0, 65535 * 32] (grid.y limit)");
  require(K >= 0, "K", "must be >= 0");
  if (M == 0 || N == 0) return false;
  require_device_pointer(A, static_cast<std::size_t>(M) * K, "A");
  require_device_pointer(B, static_cast<std::size_t>(K) * N, "B");
  require_device_pointer(C, static_cast<std::size_t>(M) * N, "C");
  return true;
}

void require_tile(WarptileTile tile) {
  require(
      tile == WarptileTile::kAuto || tile == WarptileTile::k128x128 || tile == WarptileTile::k64x64,
      "tile", "is not a WarptileTile");
}
}  // namespace

void sgemm(SgemmVariant variant, int M, int N, int K, float alpha, const float* A, const float* B,
           float beta, float* C, cudaStream_t stream) {
  if (!sgemm_args_ok(M, N, K, A, B, C)) return;
  const detail::SgemmArgs a{M, N, K, alpha, A, B, beta, C};
  const Step* step = find_step(kLadder, variant);
  if (step == nullptr) throw_invalid_argument("variant", "is not a SgemmVariant");
  step->launch(a, stream);
}

WarptileTile plan_warptile_tile(int M, int N, int num_sms) {
  require(M >= 0, "M", "must be >= 0");
  require(N >= 0, "N", "must be >= 0");
  require(num_sms >= 1, "num_sms", "must be >= 1");
  // 64-bit: M and N may each be up to 2^31 - 1 here (the planner takes any int).
  const long long blocks128 =
      ((static_cast<long long>(M) + 127) / 128) * ((static_cast<long long>(N) + 127) / 128);
  return blocks128 < static_cast<long long>(kWarptilePlanBlocksPerSm) * num_sms
             ? WarptileTile::k64x64
             : WarptileTile::k128x128;
}

std::string_view to_string(WarptileTile t) {
  switch (t) {
    case WarptileTile::kAuto:
      return "auto";
    case WarptileTile::k128x128:
      return "128x128";
    case WarptileTile::k64x64:
      return "64x64";
  }
  return "unknown";
}

void sgemm_warptile_tile(WarptileTile tile, int M, int N, int K, float alpha, const float* A,
                         const float* B, float beta, float* C, cudaStream_t stream) {
  require_tile(tile);
  if (!sgemm_args_ok(M, N, K, A, B, C)) return;
  detail::sgemm_warptile_tile({M, N, K, alpha, A, B, beta, C}, tile, stream);
}

void sgemm_warptile_async_tile(WarptileTile tile, int M, int N, int K, float alpha, const float* A,
                               const float* B, float beta, float* C, cudaStream_t stream) {
  require_tile(tile);
  if (!sgemm_args_ok(M, N, K, A, B, C)) return;
  detail::sgemm_warptile_async_tile({M, N, K, alpha, A, B, beta, C}, tile, stream);
}

void gemm_bias_relu_fused(int M, int N, int K, const float* A, const float* B, const float* bias,
                          float* Y, cudaStream_t stream) {
  gemm_bias_relu_fused(WarptileTile::kAuto, M, N, K, A, B, bias, Y, stream);
}

namespace {
// The checks of both fused entry points; false: nothing to do (M == 0 or N == 0).
bool fused_args_ok(int M, int N, int K, const float* A, const float* B, const float* bias,
                   const float* Y) {
  require(M >= 0 && M <= kMaxRowsOrCols, "M", "must be in [0, 65535 * 32] (grid.y limit)");
  require(N >= 0, "N", "must be >= 0");
  require(K >= 0, "K", "must be >= 0");
  if (M == 0 || N == 0) return false;
  require_device_pointer(A, static_cast<std::size_t>(M) * K, "A");
  require_device_pointer(B, static_cast<std::size_t>(K) * N, "B");
  require_device_pointer(bias, static_cast<std::size_t>(N), "bias");
  require_device_pointer(Y, static_cast<std::size_t>(M) * N, "Y");
  return true;
}
}  // namespace

void gemm_bias_relu_fused(WarptileTile tile, int M, int N, int K, const float* A, const float* B,
                          const float* bias, float* Y, cudaStream_t stream) {
  require_tile(tile);
  if (!fused_args_ok(M, N, K, A, B, bias, Y)) return;
  const detail::SgemmArgs a{M, N, K, 1.0f, A, B, 0.0f, Y};
  if (fused_takes_skinny(tile, M))
    detail::gemm_skinny_bias_relu(a, bias, stream);
  else
    detail::sgemm_warptile_bias_relu(a, bias, tile, stream);
}

void gemm_bias_relu_skinny(int M, int N, int K, const float* A, const float* B, const float* bias,
                           float* Y, cudaStream_t stream) {
  if (!fused_args_ok(M, N, K, A, B, bias, Y)) return;
  detail::gemm_skinny_bias_relu({M, N, K, 1.0f, A, B, 0.0f, Y}, bias, stream);
}

}  // namespace cudalab::ch06
