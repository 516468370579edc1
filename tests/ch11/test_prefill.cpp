// Prefill (worked examples, the online softmax of exercise 11.2 over tiles of rows): causal
// flash-style attention against the double oracle, for both kernels: prefill_attention (fp32 on
// CUDA cores, 32-row and 32-key tiles) and flash_prefill_attention (mma.sync, 64-row and 64-key
// tiles). Lengths around each kernel's tiles.
// Tolerance as in test_decode_attention.cpp (outputs are convex combinations of V in [-1, 1]; the
// output rounding dominates): fp16 1e-3, bf16 4e-3. The tensor-core kernel also rounds each
// softmax weight to 16 bits before P V (FlashAttention-2 does the same), a second rounding of the
// same size: twice those bounds (its largest errors measured against an fp32 reference at lengths
// up to 1000 were 4e-4 in fp16 and 3e-3 in bf16; a wrong tile or mask is off by 0.1 and more).
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <string>
#include <vector>

#include "attention_testing.hpp"
#include "ch11/ch11.hpp"
#include "ch11/prefill_plan.hpp"
#include "cudalab/device.hpp"
#include "cudalab/memory.hpp"
#include "cudalab/random.hpp"
#include "cudalab/testing.hpp"

using namespace cudalab;
using namespace cudalab::ch11;
using ch11_test::from_bits;
using ch11_test::to_bits;

namespace {
using Case = ch11_test::PrefillCase;
const std::vector<Case> kCases{
    {"f16_d128_gqa4_len1", DType::kF16, 128, 8, 2, 2, 1},
    {"f16_d128_gqa4_len33", DType::kF16, 128, 8, 2, 2, 33},
    {"bf16_d64_mha_len32", DType::kBF16, 64, 4, 4, 3, 32},
    {"bf16_d128_gqa8_len100", DType::kBF16, 128, 16, 2, 1, 100},
    {"f16_d64_gqa2_len257", DType::kF16, 64, 4, 2, 2, 257},
};
// Around the tensor-core kernel's 64-row / 64-key tiles: one token short of a tile, a tile, one
// past; a diagonal tile crossed by the end of the sequence; several query tiles.
const std::vector<Case> kFlashCases{
    {"f16_d128_gqa4_len1", DType::kF16, 128, 8, 2, 2, 1},
    {"bf16_d64_mha_len63", DType::kBF16, 64, 4, 4, 2, 63},
    {"f16_d64_gqa2_len64", DType::kF16, 64, 4, 2, 1, 64},
    {"f16_d128_gqa4_len65", DType::kF16, 128, 8, 2, 2, 65},
    {"bf16_d128_gqa8_len129", DType::kBF16, 128, 16, 2, 1, 129},
    {"f16_d64_gqa2_len257", DType::kF16, 64, 4, 2, 2, 257},
    {"bf16_d128_mha_len300", DType::kBF16, 128, 4, 4, 1, 300},
};
using ch11_test::prefill_case_name;

}  // namespace

class PrefillGpu : public ::testing::TestWithParam<Case> {};

TEST_P(PrefillGpu, MatchesOracle) {
  CUDALAB_REQUIRE_GPU();
  ch11_test::expect_prefill_matches_oracle(prefill_attention, "prefill_attention", GetParam(), 1.0);
}

INSTANTIATE_TEST_SUITE_P(Shapes, PrefillGpu, ::testing::ValuesIn(kCases), prefill_case_name);

class FlashPrefillGpu : public ::testing::TestWithParam<Case> {};

TEST_P(FlashPrefillGpu, MatchesOracle) {
  CUDALAB_REQUIRE_GPU();
  ch11_test::expect_prefill_matches_oracle(flash_prefill_attention, "flash_prefill_attention",
                                           GetParam(), 2.0);
}

INSTANTIATE_TEST_SUITE_P(Shapes, FlashPrefillGpu, ::testing::ValuesIn(kFlashCases),
                         prefill_case_name);

// The Hopper kernel (flash_prefill_wgmma.cu: 128-row query tiles, 128-key K/V tiles, two consumer
// warpgroups of 64 rows): lengths around its tiles (one short, one, one past; a diagonal tile
// crossed by the end of the sequence; the second warpgroup's rows empty or partial; several query
// tiles), both head dims and types, MHA and GQA, several sequences (the tensor maps' sequence and
// head coordinates). Tolerance as the mma.sync kernel's (P rounded to 16 bits before P V).
namespace {
const std::vector<Case> kWgmmaCases{
    {"f16_d128_gqa4_len1", DType::kF16, 128, 8, 2, 2, 1},
    {"bf16_d64_mha_len63", DType::kBF16, 64, 4, 4, 2, 63},
    {"f16_d64_gqa2_len64", DType::kF16, 64, 4, 2, 1, 64},
    {"bf16_d128_gqa4_len65", DType::kBF16, 128, 8, 2, 3, 65},
    {"f16_d128_mha_len127", DType::kF16, 128, 4, 4, 2, 127},
    {"bf16_d128_gqa8_len128", DType::kBF16, 128, 16, 2, 1, 128},
    {"f16_d64_gqa2_len129", DType::kF16, 64, 4, 2, 2, 129},
    {"bf16_d64_gqa4_len255", DType::kBF16, 64, 8, 2, 1, 255},
    {"f16_d128_gqa2_len257", DType::kF16, 128, 4, 2, 2, 257},
    {"bf16_d128_mha_len300", DType::kBF16, 128, 4, 4, 1, 300},
    {"f16_d64_mha_len1000", DType::kF16, 64, 2, 2, 1, 1000},
};
}  // namespace

class WgmmaPrefillGpu : public ::testing::TestWithParam<Case> {};

TEST_P(WgmmaPrefillGpu, MatchesOracle) {
  CUDALAB_REQUIRE_GPU();
  if (!flash_prefill_wgmma_supported())
    GTEST_SKIP() << "skipped: the wgmma prefill needs compute capability exactly 9.0 (sm_90a)";
  ch11_test::expect_prefill_matches_oracle(flash_prefill_attention_wgmma,
                                           "flash_prefill_attention_wgmma", GetParam(), 2.0);
}

INSTANTIATE_TEST_SUITE_P(Shapes, WgmmaPrefillGpu, ::testing::ValuesIn(kWgmmaCases),
                         prefill_case_name);

namespace {
// Device-filled q, K and V of shape.batch sequences of L tokens (fill_random; its host twin
// random_at gives the inputs of the sequences checked, so no host copy of the whole problem is
// made); the kernel's output for the sequences in `check` against the double oracle.
void expect_sampled_sequences(const ch11_test::PrefillCall& prefill, const std::string& what,
                              DType t, const DecodeShape& shape, int L,
                              const std::vector<int>& check, double tol) {
  const int QH = shape.q_heads, KH = shape.kv_heads, D = shape.head_dim;
  const std::size_t per_q = static_cast<std::size_t>(L) * QH * D,
                    per_kv = static_cast<std::size_t>(L) * KH * D;
  const std::size_t nq = per_q * shape.batch, nkv = per_kv * shape.batch;
  CUDALAB_REQUIRE_DEVICE_MEMORY(2 * (2 * nq + 2 * nkv) + (std::size_t{1} << 30));
  const std::uint64_t seed = Rng().seed();
  DeviceBuffer<std::uint16_t> q(nq), k(nkv), v(nkv), out(nq);
  fill_random(q.data(), nq, seed, t, -1.0f, 1.0f);
  fill_random(k.data(), nkv, seed + 1, t, -1.0f, 1.0f);
  fill_random(v.data(), nkv, seed + 2, t, -1.0f, 1.0f);
  poison_device(out.data(), out.bytes());
  prefill(q.data(), k.data(), v.data(), out.data(), shape, L, t, nullptr);
  CUDALAB_CHECK(cudaDeviceSynchronize());
  for (const int b : check) {
    std::vector<float> qb(per_q), kb(per_kv), vb(per_kv);
    for (std::size_t i = 0; i < per_q; ++i) qb[i] = random_at(seed, b * per_q + i, t, -1.0f, 1.0f);
    for (std::size_t i = 0; i < per_kv; ++i) {
      kb[i] = random_at(seed + 1, b * per_kv + i, t, -1.0f, 1.0f);
      vb[i] = random_at(seed + 2, b * per_kv + i, t, -1.0f, 1.0f);
    }
    const auto o = prefill_attention_oracle(qb, kb, vb, QH, KH, D, L, shape.scale);
    std::vector<std::uint16_t> bits(per_q);
    CUDALAB_CHECK(cudaMemcpy(bits.data(), out.data() + b * per_q, per_q * sizeof(std::uint16_t),
                             cudaMemcpyDeviceToHost));
    std::vector<float> got(per_q);
    for (std::size_t i = 0; i < per_q; ++i) got[i] = from_bits(bits[i], t);
    EXPECT_MATCHES(compare(got, std::vector<float>(o.begin(), o.end()), Tolerance{tol, 0},
                           what + ", sequence " + std::to_string(b)));
  }
}

// Index width: 5250 sequences of 100 tokens x 32 query heads x 128 = 2^31 + 2,516,352 fp16 elements
// in q and out (4.3 GB each; K and V a quarter of that): the sequences from 5243 on start past 2^31
// elements, where an offset b * len * q_heads * head_dim computed in int breaks. The first
// sequence, the ones across the crossing and the last are checked.
// Cost on an H200: ~0.4 TFLOP of causal attention (a few ms) and ~11 GB of fills.
void expect_sequences_past_2_31(const ch11_test::PrefillCall& prefill, const std::string& kernel,
                                double tol) {
  const int B = 5250, L = 100, QH = 32, KH = 8, D = 128;
  const std::size_t per_q = static_cast<std::size_t>(L) * QH * D;
  const int crossing = static_cast<int>((std::size_t{1} << 31) / per_q);  // 5242
  const DecodeShape shape{B, QH, KH, D, 1.0f / std::sqrt(static_cast<float>(D))};
  expect_sampled_sequences(prefill,
                           kernel +
                               " (5250 x 100 tokens x 32 heads x 128: offsets past 2^31 "
                               "elements from sequence 5243 on)",
                           DType::kF16, shape, L, {0, crossing, crossing + 1, B - 1}, tol);
}
}  // namespace

TEST(PrefillLargeGpu, SequencesPastTwoToThe31Elements) {
  expect_sequences_past_2_31(prefill_attention, "prefill_attention", 1e-3);
}

TEST(PrefillLargeGpu, TensorCoreSequencesPastTwoToThe31Elements) {
  expect_sequences_past_2_31(flash_prefill_attention, "flash_prefill_attention", 2e-3);
}

TEST(PrefillLargeGpu, WgmmaSequencesPastTwoToThe31Elements) {
  CUDALAB_REQUIRE_GPU();
  if (!flash_prefill_wgmma_supported())
    GTEST_SKIP() << "skipped: the wgmma prefill needs compute capability exactly 9.0 (sm_90a)";
  expect_sequences_past_2_31(flash_prefill_attention_wgmma, "flash_prefill_attention_wgmma", 2e-3);
}

// 32 query rows a warp: at head_dim 64 on a grid of several waves the launcher runs 128-row blocks
// (plan_flash_rows_per_warp), a second instantiation of the kernel that the small cases above never
// reach. 96 sequences x 8 query heads, lengths that end inside a 128-row block and inside a 64-key
// tile, GQA and MHA: the first, a middle and the last sequence against the double oracle.
namespace {
const std::vector<Case> kWideRowCases{
    {"f16_d64_gqa4_len333", DType::kF16, 64, 8, 2, 96, 333},
    {"bf16_d64_mha_len190", DType::kBF16, 64, 8, 8, 96, 190},
};
}  // namespace

class FlashPrefillWideRowsGpu : public ::testing::TestWithParam<Case> {};

TEST_P(FlashPrefillWideRowsGpu, MatchesOracle) {
  CUDALAB_REQUIRE_GPU();
  const Case& c = GetParam();
  ASSERT_EQ(plan_flash_rows_per_warp(c.batch, c.q_heads, c.head_dim, c.len, current_sm_count()), 32)
      << "this shape no longer reaches the 32-row kernel on this GPU: the test must grow";
  const DecodeShape shape = ch11_test::prefill_shape(c);
  const double tol = 2.0 * (c.dtype == DType::kF16 ? 1e-3 : 4e-3);
  expect_sampled_sequences(flash_prefill_attention,
                           "flash_prefill_attention 32 rows a warp " + c.name, c.dtype, shape,
                           c.len, {0, c.batch / 2, c.batch - 1}, tol);
}

INSTANTIATE_TEST_SUITE_P(Shapes, FlashPrefillWideRowsGpu, ::testing::ValuesIn(kWideRowCases),
                         prefill_case_name);

TEST(PrefillArgs, NamedErrors) {
  const DecodeShape s{1, 8, 2, 128, 0.1f};
  cudalab::testing::expect_throws_naming(
      [&] { prefill_attention(nullptr, nullptr, nullptr, nullptr, s, -1, DType::kF16); }, "len");
  cudalab::testing::expect_throws_naming(
      [&] { prefill_attention(nullptr, nullptr, nullptr, nullptr, s, 4, DType::kF16); }, "q");
  const DecodeShape bad{1, 8, 3, 128, 0.1f};
  cudalab::testing::expect_throws_naming(
      [&] { prefill_attention(nullptr, nullptr, nullptr, nullptr, bad, 4, DType::kF16); },
      "kv_heads");
  EXPECT_NO_THROW(prefill_attention(nullptr, nullptr, nullptr, nullptr, s, 0, DType::kF16));
}

TEST(FlashPrefillArgs, NamedErrors) {
  const DecodeShape s{1, 8, 2, 128, 0.1f};
  cudalab::testing::expect_throws_naming(
      [&] { flash_prefill_attention(nullptr, nullptr, nullptr, nullptr, s, -1, DType::kF16); },
      "len");
  cudalab::testing::expect_throws_naming(
      [&] { flash_prefill_attention(nullptr, nullptr, nullptr, nullptr, s, 4, DType::kF16); }, "q");
  const DecodeShape bad_heads{1, 8, 3, 128, 0.1f};
  cudalab::testing::expect_throws_naming(
      [&] {
        flash_prefill_attention(nullptr, nullptr, nullptr, nullptr, bad_heads, 4, DType::kF16);
      },
      "kv_heads");
  const DecodeShape bad_dim{1, 8, 2, 96, 0.1f};
  cudalab::testing::expect_throws_naming(
      [&] { flash_prefill_attention(nullptr, nullptr, nullptr, nullptr, bad_dim, 4, DType::kF16); },
      "head_dim");
  EXPECT_NO_THROW(flash_prefill_attention(nullptr, nullptr, nullptr, nullptr, s, 0, DType::kF16));
}

// cp.async moves 16 bytes: a q that is a valid device pointer but not 16-byte aligned (a view one
// element into a buffer) is refused by name, not read wrongly.
TEST(FlashPrefillArgsGpu, MisalignedViewIsRefused) {
  CUDALAB_REQUIRE_GPU();
  const DecodeShape s{1, 8, 2, 128, 0.1f};
  const int L = 4;
  const std::size_t nq = static_cast<std::size_t>(L) * 8 * 128, nkv = nq / 4;
  DeviceBuffer<std::uint16_t> q(nq + 8), k(nkv), v(nkv), out(nq);
  cudalab::testing::expect_throws_naming(
      [&] {
        flash_prefill_attention(q.data() + 1, k.data(), v.data(), out.data(), s, L, DType::kF16);
      },
      "q");
}

// The Hopper kernel's argument checks: those of the shared contract by name, its own (a positive
// scale), on any machine; a misaligned view refused by name before any GPU check.
TEST(WgmmaPrefillArgs, NamedErrors) {
  const DecodeShape s{1, 8, 2, 128, 0.1f};
  auto call = [](const DecodeShape& shape, int len) {
    flash_prefill_attention_wgmma(nullptr, nullptr, nullptr, nullptr, shape, len, DType::kBF16);
  };
  cudalab::testing::expect_throws_naming([&] { call(s, -1); }, "len");
  cudalab::testing::expect_throws_naming([&] { call(s, 4); }, "q");
  cudalab::testing::expect_throws_naming([&] { call({1, 8, 3, 128, 0.1f}, 4); }, "kv_heads");
  cudalab::testing::expect_throws_naming([&] { call({1, 8, 2, 96, 0.1f}, 4); }, "head_dim");
  cudalab::testing::expect_throws_naming([&] { call({1, 8, 2, 128, -0.1f}, 4); }, "scale");
  cudalab::testing::expect_throws_naming([&] { call({1, 8, 2, 128, 0.0f}, 4); }, "scale");
  EXPECT_NO_THROW(call(s, 0));
}

TEST(WgmmaPrefillArgsGpu, MisalignedViewIsRefused) {
  CUDALAB_REQUIRE_GPU();
  const DecodeShape s{1, 8, 2, 128, 0.1f};
  const int L = 4;
  const std::size_t nq = static_cast<std::size_t>(L) * 8 * 128, nkv = nq / 4;
  DeviceBuffer<std::uint16_t> q(nq), k(nkv + 8), v(nkv), out(nq);
  cudalab::testing::expect_throws_naming(
      [&] {
        flash_prefill_attention_wgmma(q.data(), k.data() + 1, v.data(), out.data(), s, L,
                                      DType::kBF16);
      },
      "k");
}

// The stream contract (cudalab/testing.hpp, replay_from_capture): the Hopper kernel on the caller's
// stream; a graph capture's replay gives a plain call's bits.
TEST(WgmmaPrefillStreamGpu, OnTheCallersStream) {
  CUDALAB_REQUIRE_GPU();
  if (!flash_prefill_wgmma_supported())
    GTEST_SKIP() << "skipped: the wgmma prefill needs compute capability exactly 9.0 (sm_90a)";
  const DecodeShape s{2, 8, 2, 128, 1.0f / std::sqrt(128.0f)};
  const int L = 300;
  const std::size_t nq = static_cast<std::size_t>(s.batch) * L * s.q_heads * s.head_dim,
                    nkv = nq / 4;
  DeviceBuffer<std::uint16_t> q(nq), k(nkv), v(nkv);
  fill_random(q.data(), nq, 11, DType::kBF16, -1, 1);
  fill_random(k.data(), nkv, 12, DType::kBF16, -1, 1);
  fill_random(v.data(), nkv, 13, DType::kBF16, -1, 1);
  cudalab::testing::GuardedOutput<std::uint16_t> out(nq);
  EXPECT_TRUE(cudalab::testing::replay_matches_plain_call(
      [&](cudaStream_t stream) {
        flash_prefill_attention_wgmma(q.data(), k.data(), v.data(), out.data(), s, L, DType::kBF16,
                                      stream);
      },
      out, "flash_prefill_attention_wgmma"));
}
