// Exercise 6.3 — row-major data through column-major cuBLAS: the swap identity, op(A)/op(B),
// leading dimensions (sub-matrices of a bigger matrix), strided-batched GEMM. Each convention is
// pinned against the double CPU oracle.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <string>
#include <vector>

#include "ch06/ch06.hpp"
#include "cudalab/cublas.hpp"
#include "cudalab/random.hpp"
#include "cudalab/testing.hpp"
#include "gemm_testing.hpp"

using namespace cudalab;
using ch06::Op;

namespace {

const char* op_name(Op op) {
  return op == Op::kN ? "N" : "T";
}

// C (M, N) = alpha op(A) op(B) + beta C where every matrix lives inside a bigger row-major
// matrix (ld > its columns) at a non-zero offset. Elements of the big C outside the sub-matrix
// must be left exactly as they were.
void check_row_major(Op opA, Op opB, int M, int N, int K, int pad, float beta) {
  Rng rng;
  const float alpha = rng.scalar(0.5f, 2.0f);
  const int a_rows = opA == Op::kN ? M : K, a_cols = opA == Op::kN ? K : M;
  const int b_rows = opB == Op::kN ? K : N, b_cols = opB == Op::kN ? N : K;
  const int lda = a_cols + pad, ldb = b_cols + pad, ldc = N + pad;
  const int off = pad > 0 ? 1 : 0;  // sub-matrices start at row off, column off
  const auto A = rng.uniform<float>(std::size_t(a_rows + off) * lda, -1.0f, 1.0f);
  const auto B = rng.uniform<float>(std::size_t(b_rows + off) * ldb, -1.0f, 1.0f);
  const auto C0 = rng.uniform<float>(std::size_t(M + off) * ldc, -1.0f, 1.0f);
  const std::size_t a0 = std::size_t(off) * lda + off, b0 = std::size_t(off) * ldb + off,
                    c0 = std::size_t(off) * ldc + off;

  std::vector<double> want(C0.begin(), C0.end()), abs_sum(C0.size(), 0.0);
  ch06::gemm_oracle(opA, opB, M, N, K, alpha, A.data() + a0, lda, B.data() + b0, ldb, beta,
                    C0.data() + c0, ldc, want.data() + c0, abs_sum.data() + c0);

  CublasHandle h;
  auto dA = to_device(A), dB = to_device(B);
  auto dC = to_device(C0);
  ch06::cublas_sgemm_row_major(h, opA, opB, M, N, K, alpha, dA.data() + a0, lda, dB.data() + b0,
                               ldb, beta, dC.data() + c0, ldc);
  const std::string what = std::string("cublas_sgemm_row_major (exercise 6.3, op(A) = ") +
                           op_name(opA) + ", op(B) = " + op_name(opB) +
                           ", M x N x K = " + std::to_string(M) + "x" + std::to_string(N) + "x" +
                           std::to_string(K) + ", lda/ldb/ldc = " + std::to_string(lda) + "/" +
                           std::to_string(ldb) + "/" + std::to_string(ldc) + ")";
  // Outside the sub-matrix want == C0 exactly and abs_sum == 0: the tolerance stays the bound.
  EXPECT_MATCHES(compare(dC.to_host(), ch06_test::to_float(want),
                         ch06_test::gemm_tolerance(K, abs_sum), what));
}

}  // namespace

class CublasLayoutGpu : public ::testing::TestWithParam<std::tuple<Op, Op>> {};

TEST_P(CublasLayoutGpu, DenseRowMajor) {
  CUDALAB_REQUIRE_GPU();
  const auto [opA, opB] = GetParam();
  check_row_major(opA, opB, 37, 53, 29, /*pad=*/0, 0.75f);
}

TEST_P(CublasLayoutGpu, SubMatricesThroughLeadingDimensions) {
  CUDALAB_REQUIRE_GPU();
  const auto [opA, opB] = GetParam();
  check_row_major(opA, opB, 45, 31, 70, /*pad=*/13, -0.5f);
}

TEST_P(CublasLayoutGpu, NonSquareTallAndWide) {
  CUDALAB_REQUIRE_GPU();
  const auto [opA, opB] = GetParam();
  check_row_major(opA, opB, 130, 7, 3, /*pad=*/0, 1.0f);
  check_row_major(opA, opB, 5, 190, 64, /*pad=*/2, 0.0f);
}

INSTANTIATE_TEST_SUITE_P(Ops, CublasLayoutGpu,
                         ::testing::Combine(::testing::Values(Op::kN, Op::kT),
                                            ::testing::Values(Op::kN, Op::kT)),
                         [](const auto& p) {
                           return std::string("A") + op_name(std::get<0>(p.param)) + "_B" +
                                  op_name(std::get<1>(p.param));
                         });

// beta = 0 never reads C: a NaN-poisoned C must come out finite and right.
TEST(CublasLayoutBetaZeroGpu, IgnoresNaNInC) {
  CUDALAB_REQUIRE_GPU();
  Rng rng;
  const ch06_test::Shape s{33, 65, 17};
  const auto A = rng.uniform<float>(std::size_t(s.m) * s.k, -1.0f, 1.0f);
  const auto B = rng.uniform<float>(std::size_t(s.k) * s.n, -1.0f, 1.0f);
  const std::vector<float> unused(std::size_t(s.m) * s.n);
  const auto want = ch06_test::gemm_dense_oracle(s, 1.5, A, B, 0.0, unused);
  CublasHandle h;
  auto dA = to_device(A), dB = to_device(B);
  cudalab::testing::GuardedOutput<float> C(std::size_t(s.m) * s.n);
  ch06::cublas_sgemm_row_major(h, Op::kN, Op::kN, s.m, s.n, s.k, 1.5f, dA.data(), s.k, dB.data(),
                               s.n, 0.0f, C.data(), s.n);
  EXPECT_MATCHES(compare(C.result(), ch06_test::to_float(want.c),
                         ch06_test::gemm_tolerance(s.k, want.abs_sum),
                         "cublas_sgemm_row_major (exercise 6.3, beta = 0, C poisoned with NaN)"));
  EXPECT_TRUE(C.guard_intact());
}

// The stream contract (cudalab/testing.hpp, replay_from_capture): the cuBLAS call on the caller's
// stream. A handle whose stream was not set (cublasSetStream) runs on the legacy default stream
// while the call is recorded, not in the recorded graph: the replay leaves C poisoned where a
// plain call wrote it.
TEST(CublasStreamGpu, AllWorkOnTheCallersStream) {
  CUDALAB_REQUIRE_GPU();
  Rng rng;
  const int M = 33, N = 65, K = 17;
  auto dA = to_device(rng.uniform<float>(std::size_t(M) * K, -1.0f, 1.0f));
  auto dB = to_device(rng.uniform<float>(std::size_t(K) * N, -1.0f, 1.0f));
  CublasHandle h;
  cudalab::testing::GuardedOutput<float> C(std::size_t(M) * N);
  EXPECT_TRUE(cudalab::testing::replay_matches_plain_call(
      [&](cudaStream_t stream) {
        ch06::cublas_sgemm_row_major(h, Op::kN, Op::kN, M, N, K, 1.5f, dA.data(), K, dB.data(), N,
                                     0.0f, C.data(), N, stream);
      },
      C, "cublas_sgemm_row_major (exercise 6.3)", {}, 1e-5));
}

// Strided batched: batch i reads A + i * strideA, ... Strides larger than the matrices (gaps)
// catch a stride passed in bytes or a swapped stride.
TEST(CublasStridedBatchedGpu, EachBatchMatchesOracle) {
  CUDALAB_REQUIRE_GPU();
  Rng rng;
  const int M = 19, N = 23, K = 11, batch = 5;
  const long long sA = M * K + 7, sB = K * N + 3, sC = M * N + 5;
  const auto A = rng.uniform<float>(std::size_t(sA) * batch, -1.0f, 1.0f);
  const auto B = rng.uniform<float>(std::size_t(sB) * batch, -1.0f, 1.0f);
  const auto C0 = rng.uniform<float>(std::size_t(sC) * batch, -1.0f, 1.0f);
  const float alpha = 1.25f, beta = -0.5f;
  CublasHandle h;
  auto dA = to_device(A), dB = to_device(B), dC = to_device(C0);
  ch06::cublas_sgemm_strided_batched_row_major(h, M, N, K, alpha, dA.data(), sA, dB.data(), sB,
                                               beta, dC.data(), sC, batch);
  const auto got = dC.to_host();
  for (int i = 0; i < batch; ++i) {
    std::vector<double> want(std::size_t(M) * N), abs_sum(want.size());
    ch06::gemm_oracle(Op::kN, Op::kN, M, N, K, alpha, A.data() + i * sA, K, B.data() + i * sB, N,
                      beta, C0.data() + i * sC, N, want.data(), abs_sum.data());
    const std::vector<float> got_i(got.begin() + i * sC, got.begin() + i * sC + M * N);
    EXPECT_MATCHES(
        compare(got_i, ch06_test::to_float(want), ch06_test::gemm_tolerance(K, abs_sum),
                "cublas_sgemm_strided_batched_row_major (batch " + std::to_string(i) + " of 5)"));
  }
}

TEST(CublasLayoutArgs, BadLeadingDimensionsAreRejectedByName) {
  auto message_of = [](auto&& f) { return cudalab::testing::invalid_argument_message(f); };
  // A dummy non-null handle: the argument checks run before cuBLAS is called.
  const auto h = reinterpret_cast<cublasHandle_t>(std::uintptr_t{1});
  EXPECT_NE(message_of([&] {
              ch06::cublas_sgemm_row_major(nullptr, Op::kN, Op::kN, 2, 2, 2, 1, nullptr, 2, nullptr,
                                           2, 0, nullptr, 2);
            }).find("'handle'"),
            std::string::npos);
  // Row-major A (M, K) = (4, 8): lda must be >= K = 8 (not M: that is the column-major habit).
  EXPECT_NE(message_of([&] {
              ch06::cublas_sgemm_row_major(h, Op::kN, Op::kN, 4, 6, 8, 1, nullptr, 4, nullptr, 6, 0,
                                           nullptr, 6);
            }).find("'lda'"),
            std::string::npos);
  // Transposed A is stored (K, M) = (8, 4): lda >= M = 4 is enough.
  EXPECT_NE(message_of([&] {
              ch06::cublas_sgemm_row_major(h, Op::kT, Op::kN, 4, 6, 8, 1, nullptr, 4, nullptr, 5, 0,
                                           nullptr, 6);
            }).find("'ldb'"),
            std::string::npos);
  EXPECT_NE(message_of([&] {
              ch06::cublas_sgemm_row_major(h, Op::kN, Op::kN, 4, 6, 8, 1, nullptr, 8, nullptr, 6, 0,
                                           nullptr, 5);
            }).find("'ldc'"),
            std::string::npos);
  EXPECT_NE(message_of([&] {
              ch06::cublas_sgemm_strided_batched_row_major(h, 4, 4, 4, 1, nullptr, 15, nullptr, 16,
                                                           0, nullptr, 16, 2);
            }).find("'strideA'"),
            std::string::npos);
}
