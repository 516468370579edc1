// Exercises 11.2 and 11.3 — decode attention over a paged cache (block tables shuffled, so the
// indirection is exercised), the contiguous cache and split-K, against the double oracle.
//
// Tolerances. q, K and V are drawn in [-1, 1] and rounded to the storage type first, so the
// kernel and the oracle see the same numbers. The output is a convex combination of V rows:
// |out| <= 1. Rounding it to the storage type costs at most half an ulp below 1: 2^-12 (fp16),
// 2^-9 (bf16). The fp32 work adds much less: scores to about head_dim * 2^-24 relative, sums of
// at most a few thousand positive terms to about len * 2^-24 < 2^-11 in the worst case. Hence
// abs 1e-3 (fp16, 4 of those half-ulps) and 4e-3 (bf16). LargeScores raises the scale (x200, x250)
// so that the largest scores reach about 300 in the log2 domain, past fp32's exp2 range (128): an
// online softmax that does not subtract its running maximum overflows there. An fp32 score of
// magnitude 300 is off by about 300 * 2^-23 in the exponent, a relative weight error ~4e-5: the
// same tolerance holds.
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <functional>
#include <numeric>
#include <string>
#include <vector>

#include "attention_testing.hpp"
#include "ch11/ch11.hpp"
#include "cudalab/memory.hpp"
#include "cudalab/random.hpp"
#include "cudalab/testing.hpp"

using namespace cudalab;
using namespace cudalab::ch11;
using ch11_test::from_bits;
using ch11_test::to_bits;

namespace {

struct Case {
  std::string name;
  DType dtype;
  int head_dim, q_heads, kv_heads, block_size;
  std::vector<int> lens;
  float scale_factor = 1;  // times 1 / sqrt(head_dim)
};

// One random problem: host values (rounded to dtype), device paged and contiguous caches.
struct Problem {
  Case c;
  DecodeShape shape;
  int max_blocks = 0, num_blocks = 0, max_len = 0;
  std::vector<float> q;                  // [batch][q_heads][D]
  std::vector<std::vector<float>> k, v;  // per sequence [kv_heads][len][D]
  std::vector<int> tables;               // [batch][max_blocks]
  DeviceBuffer<std::uint16_t> dq, dk_paged, dv_paged, dk, dv;
  DeviceBuffer<int> dtables, dlens;

  explicit Problem(const Case& cs) : c(cs) {
    Rng rng;
    const int B = static_cast<int>(c.lens.size()), D = c.head_dim, KH = c.kv_heads,
              bs = c.block_size;
    shape = {B, c.q_heads, KH, D, c.scale_factor / std::sqrt(static_cast<float>(D))};
    max_len = *std::max_element(c.lens.begin(), c.lens.end());
    max_blocks = (max_len + bs - 1) / bs;
    num_blocks = B * max_blocks + 3;  // a few spare blocks never referenced
    auto rounded = [&](std::size_t n) {
      auto x = rng.uniform<float>(n, -1.0f, 1.0f);
      for (float& e : x) e = from_bits(to_bits(e, c.dtype), c.dtype);
      return x;
    };
    q = rounded(static_cast<std::size_t>(B) * c.q_heads * D);
    std::vector<int> perm(static_cast<std::size_t>(num_blocks));
    std::iota(perm.begin(), perm.end(), 0);
    std::shuffle(perm.begin(), perm.end(), rng.engine());
    tables.assign(static_cast<std::size_t>(B) * max_blocks, 0);
    for (std::size_t i = 0; i < tables.size(); ++i) tables[i] = perm[i];
    const std::size_t cache = static_cast<std::size_t>(num_blocks) * KH * bs * D;
    const std::size_t contig = static_cast<std::size_t>(B) * KH * max_len * D;
    std::vector<std::uint16_t> kp(cache, 0), vp(cache, 0), kc(contig, 0), vc(contig, 0);
    for (int b = 0; b < B; ++b) {
      const int L = c.lens[static_cast<std::size_t>(b)];
      k.push_back(rounded(static_cast<std::size_t>(KH) * L * D));
      v.push_back(rounded(static_cast<std::size_t>(KH) * L * D));
      for (int h = 0; h < KH; ++h)
        for (int t = 0; t < L; ++t)
          for (int d = 0; d < D; ++d) {
            const std::size_t src = (static_cast<std::size_t>(h) * L + t) * D + d;
            const int blk = tables[static_cast<std::size_t>(b) * max_blocks + t / bs];
            const std::size_t p = ((static_cast<std::size_t>(blk) * KH + h) * bs + t % bs) * D + d;
            const std::size_t s = ((static_cast<std::size_t>(b) * KH + h) * max_len + t) * D + d;
            kp[p] = kc[s] = to_bits(k.back()[src], c.dtype);
            vp[p] = vc[s] = to_bits(v.back()[src], c.dtype);
          }
    }
    std::vector<std::uint16_t> qb(q.size());
    for (std::size_t i = 0; i < q.size(); ++i) qb[i] = to_bits(q[i], c.dtype);
    dq = to_device(qb);
    dk_paged = to_device(kp);
    dv_paged = to_device(vp);
    dk = to_device(kc);
    dv = to_device(vc);
    dtables = to_device(tables);
    dlens = to_device(c.lens);
  }
  PagedKv paged() const {
    return {dk_paged.data(), dv_paged.data(), dtables.data(), dlens.data(),
            num_blocks,      c.block_size,    max_blocks};
  }
  std::vector<float> oracle() const {
    std::vector<float> want;
    const std::size_t D = static_cast<std::size_t>(c.head_dim),
                      H = static_cast<std::size_t>(c.q_heads);
    for (std::size_t b = 0; b < c.lens.size(); ++b) {
      const std::vector<float> qb(q.begin() + static_cast<std::ptrdiff_t>(b * H * D),
                                  q.begin() + static_cast<std::ptrdiff_t>((b + 1) * H * D));
      const auto o = decode_attention_oracle(qb, k[b], v[b], c.q_heads, c.kv_heads, c.head_dim,
                                             c.lens[b], shape.scale);
      want.insert(want.end(), o.begin(), o.end());
    }
    return want;
  }
  std::vector<float> result(cudalab::testing::GuardedOutput<std::uint16_t>& out) const {
    std::vector<float> got;
    for (std::uint16_t bits : out.result()) got.push_back(from_bits(bits, c.dtype));
    return got;
  }
  Tolerance tol() const { return c.dtype == DType::kF16 ? Tolerance{1e-3, 0} : Tolerance{4e-3, 0}; }
  std::size_t out_size() const { return q.size(); }
};

const std::vector<Case> kCases{
    {"f16_d128_gqa4_bs16", DType::kF16, 128, 32, 8, 16, {1, 17, 300, 1000}},
    {"bf16_d64_mha_bs16", DType::kBF16, 64, 8, 8, 16, {5, 64, 129}},
    {"f16_d128_gqa8_bs32", DType::kF16, 128, 64, 8, 32, {33, 257}},
    {"bf16_d128_gqa7_bs7", DType::kBF16, 128, 28, 4, 7, {2, 50, 777}},
    {"f16_d64_gqa2_bs1", DType::kF16, 64, 4, 2, 1, {3, 40}},
    {"bf16_d64_gqa4_long", DType::kBF16, 64, 8, 2, 16, {4099}},
    {"f16_d128_LargeScores", DType::kF16, 128, 8, 2, 16, {100, 513}, 200.0f},
    {"bf16_d64_LargeScores", DType::kBF16, 64, 4, 4, 8, {31, 200}, 250.0f},
};
std::string case_name(const ::testing::TestParamInfo<Case>& p) {
  return p.param.name;
}

}  // namespace

class DecodeAttentionGpu : public ::testing::TestWithParam<Case> {};

TEST_P(DecodeAttentionGpu, PagedMatchesOracle) {
  CUDALAB_REQUIRE_GPU();
  const Problem p(GetParam());
  cudalab::testing::GuardedOutput<std::uint16_t> out(p.out_size());
  decode_attention_paged(p.dq.data(), p.paged(), out.data(), p.shape, p.c.dtype);
  CUDALAB_CHECK(cudaDeviceSynchronize());
  EXPECT_MATCHES(compare(p.result(out), p.oracle(), p.tol(), "decode_attention_paged " + p.c.name));
  EXPECT_TRUE(out.guard_intact());
}

TEST_P(DecodeAttentionGpu, ContiguousMatchesOracle) {
  CUDALAB_REQUIRE_GPU();
  const Problem p(GetParam());
  cudalab::testing::GuardedOutput<std::uint16_t> out(p.out_size());
  decode_attention_contiguous(p.dq.data(), p.dk.data(), p.dv.data(), p.dlens.data(), p.max_len,
                              out.data(), p.shape, p.c.dtype);
  CUDALAB_CHECK(cudaDeviceSynchronize());
  EXPECT_MATCHES(
      compare(p.result(out), p.oracle(), p.tol(), "decode_attention_contiguous " + p.c.name));
  EXPECT_TRUE(out.guard_intact());
}

TEST_P(DecodeAttentionGpu, SplitKMatchesOracle) {
  CUDALAB_REQUIRE_GPU();
  const Problem p(GetParam());
  const std::vector<float> want = p.oracle();
  for (int splits : {1, 3, 16, 64}) {  // 64: most chunks of the short sequences are empty
    DeviceBuffer<float> ws(split_k_workspace_floats(p.shape, splits));
    cudalab::testing::GuardedOutput<std::uint16_t> out(p.out_size());
    decode_attention_paged_split_k(p.dq.data(), p.paged(), out.data(), p.shape, p.c.dtype, splits,
                                   ws.data(), ws.size());
    CUDALAB_CHECK(cudaDeviceSynchronize());
    EXPECT_MATCHES(compare(
        p.result(out), want, p.tol(),
        "decode_attention_paged_split_k " + p.c.name + ", splits " + std::to_string(splits)));
    EXPECT_TRUE(out.guard_intact());
  }
}

// The split chosen for this GPU (decode_auto_splits): the unsplit kernel for the short caches,
// split-K for the others; either way the oracle's result, and nothing written past `out`.
TEST_P(DecodeAttentionGpu, AutoSplitMatchesOracle) {
  CUDALAB_REQUIRE_GPU();
  const Problem p(GetParam());
  const int splits = decode_auto_splits(p.shape, p.paged());
  const std::size_t ws_floats = decode_auto_workspace_floats(p.shape, p.paged());
  EXPECT_EQ(ws_floats, splits == 1 ? 0 : split_k_workspace_floats(p.shape, splits));
  DeviceBuffer<float> ws(ws_floats);
  cudalab::testing::GuardedOutput<std::uint16_t> out(p.out_size());
  decode_attention_paged_auto(p.dq.data(), p.paged(), out.data(), p.shape, p.c.dtype, ws.data(),
                              ws.size());
  CUDALAB_CHECK(cudaDeviceSynchronize());
  EXPECT_MATCHES(compare(p.result(out), p.oracle(), p.tol(),
                         "decode_attention_paged_auto " + p.c.name + " (" + std::to_string(splits) +
                             " splits planned)"));
  EXPECT_TRUE(out.guard_intact());
}

INSTANTIATE_TEST_SUITE_P(Shapes, DecodeAttentionGpu, ::testing::ValuesIn(kCases), case_name);

// The stream contract (cudalab/testing.hpp, replay_from_capture): every kernel of the four decode
// paths on the caller's stream (split-K's partial pass and its combine pass included). Work put on
// the legacy default stream runs while the call is recorded, not in the recorded graph, so the
// replay leaves out poisoned, or combines partials the graph never wrote.
namespace {
void check_replay(const std::string& what,
                  const std::function<void(const Problem&, void*, cudaStream_t)>& call) {
  const Problem p(kCases[0]);
  cudalab::testing::GuardedOutput<std::uint16_t> out(p.out_size());
  cudalab::testing::replay_from_capture([&](cudaStream_t s) { call(p, out.data(), s); },
                                        [&] { out.repoison(); });
  EXPECT_MATCHES(compare(p.result(out), p.oracle(), p.tol(),
                         what + " " + p.c.name + ", replayed from a capture of its stream"));
}
}  // namespace

TEST(DecodeAttentionStreamGpu, Paged) {
  CUDALAB_REQUIRE_GPU();
  check_replay("decode_attention_paged", [](const Problem& p, void* out, cudaStream_t s) {
    decode_attention_paged(p.dq.data(), p.paged(), out, p.shape, p.c.dtype, s);
  });
}

TEST(DecodeAttentionStreamGpu, Contiguous) {
  CUDALAB_REQUIRE_GPU();
  check_replay("decode_attention_contiguous", [](const Problem& p, void* out, cudaStream_t s) {
    decode_attention_contiguous(p.dq.data(), p.dk.data(), p.dv.data(), p.dlens.data(), p.max_len,
                                out, p.shape, p.c.dtype, s);
  });
}

TEST(DecodeAttentionStreamGpu, SplitK) {
  CUDALAB_REQUIRE_GPU();
  DeviceBuffer<float> ws;
  check_replay("decode_attention_paged_split_k (3 splits)",
               [&](const Problem& p, void* out, cudaStream_t s) {
                 if (ws.size() == 0) ws = DeviceBuffer<float>(split_k_workspace_floats(p.shape, 3));
                 decode_attention_paged_split_k(p.dq.data(), p.paged(), out, p.shape, p.c.dtype, 3,
                                                ws.data(), ws.size(), s);
               });
}

TEST(DecodeAttentionStreamGpu, Auto) {
  CUDALAB_REQUIRE_GPU();
  DeviceBuffer<float> ws;
  bool sized = false;
  check_replay("decode_attention_paged_auto", [&](const Problem& p, void* out, cudaStream_t s) {
    if (!sized) {
      ws = DeviceBuffer<float>(decode_auto_workspace_floats(p.shape, p.paged()));
      sized = true;
    }
    decode_attention_paged_auto(p.dq.data(), p.paged(), out, p.shape, p.c.dtype, ws.data(),
                                ws.size(), s);
  });
}

// Alignment: the kernels load q and the K / V rows 16 bytes at a time, so a +1-element view of
// any of them must be refused by name before anything runs (a misaligned vector load is a fault
// that ends the process's CUDA context). The output is stored element by element: a +1 view of
// out works and leaves the element in front of it alone.
TEST(DecodeAttentionAlignmentGpu, MisalignedInputsAreRefusedMisalignedOutputWorks) {
  CUDALAB_REQUIRE_GPU();
  const Problem p(kCases[1]);
  const auto want = p.oracle();
  cudalab::testing::GuardedOutput<std::uint16_t> out(1 + p.out_size());
  PagedKv kv = p.paged();
  const auto* q1 = p.dq.data() + 1;
  cudalab::testing::expect_throws_naming(
      [&] { decode_attention_paged(q1, kv, out.data(), p.shape, p.c.dtype); }, "q");
  kv.k_cache = p.dk_paged.data() + 1;
  cudalab::testing::expect_throws_naming(
      [&] { decode_attention_paged(p.dq.data(), kv, out.data(), p.shape, p.c.dtype); }, "k_cache");
  kv = p.paged();
  kv.v_cache = p.dv_paged.data() + 1;
  cudalab::testing::expect_throws_naming(
      [&] { decode_attention_paged(p.dq.data(), kv, out.data(), p.shape, p.c.dtype); }, "v_cache");
  DeviceBuffer<float> ws(split_k_workspace_floats(p.shape, 4));
  cudalab::testing::expect_throws_naming(
      [&] {
        decode_attention_paged_split_k(p.dq.data(), kv, out.data(), p.shape, p.c.dtype, 4,
                                       ws.data(), ws.size());
      },
      "v_cache");
  const auto contiguous = [&](const void* q, const void* k, const void* v) {
    decode_attention_contiguous(q, k, v, p.dlens.data(), p.max_len, out.data(), p.shape, p.c.dtype);
  };
  cudalab::testing::expect_throws_naming([&] { contiguous(q1, p.dk.data(), p.dv.data()); }, "q");
  cudalab::testing::expect_throws_naming(
      [&] { contiguous(p.dq.data(), p.dk.data() + 1, p.dv.data()); }, "k");
  cudalab::testing::expect_throws_naming(
      [&] { contiguous(p.dq.data(), p.dk.data(), p.dv.data() + 1); }, "v");
  CUDALAB_CHECK(cudaDeviceSynchronize());  // nothing was launched
  decode_attention_paged(p.dq.data(), p.paged(), out.data() + 1, p.shape, p.c.dtype);
  CUDALAB_CHECK(cudaDeviceSynchronize());
  std::vector<float> got;
  for (const std::uint16_t bits : out.result()) got.push_back(from_bits(bits, p.c.dtype));
  EXPECT_MATCHES(compare(std::vector<float>(got.begin() + 1, got.end()), want, p.tol(),
                         "decode_attention_paged, out at +1 element"));
  EXPECT_TRUE(out.untouched(0, 1, "decode_attention_paged, out at +1 element"));
  EXPECT_TRUE(out.guard_intact());
}

// Identity: two problems of the same shape (same sizes, other block tables, caches, lengths'
// buffers and contents), one after the other on the same output and the same split-K workspace.
// Nothing may carry over from the first call (a plan or a workspace keyed on the shape alone).
TEST(DecodeAttentionIdentityGpu, SameShapeOtherTablesAndContents) {
  CUDALAB_REQUIRE_GPU();
  const Case& c = kCases[0];
  const Problem p1(c), p2(c);
  const auto want1 = p1.oracle(), want2 = p2.oracle();
  cudalab::testing::GuardedOutput<std::uint16_t> out(p1.out_size());
  DeviceBuffer<float> ws(split_k_workspace_floats(p1.shape, 8));
  for (const Problem* p : {&p1, &p2, &p1}) {
    const auto& want = p == &p2 ? want2 : want1;
    decode_attention_paged(p->dq.data(), p->paged(), out.data(), p->shape, p->c.dtype);
    CUDALAB_CHECK(cudaDeviceSynchronize());
    EXPECT_MATCHES(compare(p->result(out), want, p->tol(),
                           std::string("decode_attention_paged, problem ") +
                               (p == &p2 ? "2" : "1") + " after another of the same shape"));
    decode_attention_paged_split_k(p->dq.data(), p->paged(), out.data(), p->shape, p->c.dtype, 8,
                                   ws.data(), ws.size());
    CUDALAB_CHECK(cudaDeviceSynchronize());
    EXPECT_MATCHES(compare(p->result(out), want, p->tol(),
                           std::string("decode_attention_paged_split_k, problem ") +
                               (p == &p2 ? "2" : "1") + ", the workspace of the previous call"));
  }
}

namespace {
// q for a large-cache test: [batch][q_heads][D] values rounded to dtype, on the host and device.
struct Queries {
  std::vector<float> host;
  DeviceBuffer<std::uint16_t> dev;
  Queries(std::size_t n, DType t, Rng& rng) {
    host = rng.uniform<float>(n, -1.0f, 1.0f);
    std::vector<std::uint16_t> bits(n);
    for (std::size_t i = 0; i < n; ++i) {
      bits[i] = to_bits(host[i], t);
      host[i] = from_bits(bits[i], t);
    }
    dev = to_device(bits);
  }
};
constexpr std::uint64_t kKSeedOffset = 1, kVSeedOffset = 2;

// The oracle of a large-cache test: sequence b's K and V rows gathered from the fill's host twin
// (random_at with seed + kKSeedOffset / kVSeedOffset) at the element offsets `at(b, h, tok, d)`
// of the cache, then decode_attention_oracle. Returns [batch][q_heads][D].
template <class At>
std::vector<float> large_cache_oracle(const Queries& q, const std::vector<int>& lens,
                                      const DecodeShape& shape, std::uint64_t seed, DType t,
                                      At at) {
  const int KH = shape.kv_heads, QH = shape.q_heads, D = shape.head_dim;
  std::vector<float> want;
  for (int b = 0; b < static_cast<int>(lens.size()); ++b) {
    const int L = lens[static_cast<std::size_t>(b)];
    std::vector<float> kb(static_cast<std::size_t>(KH) * L * D), vb(kb.size());
    for (int h = 0; h < KH; ++h)
      for (int tok = 0; tok < L; ++tok)
        for (int d = 0; d < D; ++d) {
          const std::size_t i = at(b, h, tok, d);
          const std::size_t dst = (static_cast<std::size_t>(h) * L + tok) * D + d;
          kb[dst] = random_at(seed + kKSeedOffset, i, t, -1.0f, 1.0f);
          vb[dst] = random_at(seed + kVSeedOffset, i, t, -1.0f, 1.0f);
        }
    const std::vector<float> qb(q.host.begin() + static_cast<std::ptrdiff_t>(b) * QH * D,
                                q.host.begin() + static_cast<std::ptrdiff_t>(b + 1) * QH * D);
    const auto o = decode_attention_oracle(qb, kb, vb, QH, KH, D, L, shape.scale);
    want.insert(want.end(), o.begin(), o.end());
  }
  return want;
}
}  // namespace

// Index width, paged: K and V caches of 131112 blocks x 8 heads x 16 rows x 128 = 2^31 + 655360
// fp16 elements each (4.3 GB), so the blocks from 131072 on start past 2^31 elements. The block
// tables point there, at the last blocks, at the ones across the crossing and at low ones: an
// element offset (block * kv_heads + head) * block_size * head_dim computed in int reads the
// wrong rows. The caches come from the device fill (fill_random); the oracle gathers the rows the
// tables name from its host twin. Plain and split-K. Cost: 8.6 GB, a few ms.
TEST(DecodeAttentionLargeGpu, PagedCachePastTwoToThe31Elements) {
  const DType t = DType::kF16;
  const int D = 128, KH = 8, QH = 32, bs = 16, num_blocks = 131072 + 40;
  const std::size_t cache = static_cast<std::size_t>(num_blocks) * KH * bs * D;
  CUDALAB_REQUIRE_DEVICE_MEMORY(2 * cache * 2 + (std::size_t{1} << 30));
  const std::uint64_t seed = Rng().seed();
  const std::vector<int> lens{37, 70, 50};
  const std::vector<std::vector<int>> seq_tables{
      {131111, 131100, 131071}, {131072, 131070, 131073, 5, 131099}, {0, 65536, 131105, 131074}};
  const int B = static_cast<int>(lens.size()), max_blocks = 5;
  std::vector<int> tables(static_cast<std::size_t>(B) * max_blocks, 0);
  for (int b = 0; b < B; ++b)
    for (std::size_t j = 0; j < seq_tables[b].size(); ++j)
      tables[static_cast<std::size_t>(b) * max_blocks + j] = seq_tables[b][j];
  DeviceBuffer<std::uint16_t> k(cache), v(cache);
  fill_random(k.data(), cache, seed + kKSeedOffset, t, -1.0f, 1.0f);
  fill_random(v.data(), cache, seed + kVSeedOffset, t, -1.0f, 1.0f);
  auto dtables = to_device(tables), dlens = to_device(lens);
  Rng rng(seed);
  const Queries q(static_cast<std::size_t>(B) * QH * D, t, rng);
  const DecodeShape shape{B, QH, KH, D, 1.0f / std::sqrt(static_cast<float>(D))};
  const auto want = large_cache_oracle(q, lens, shape, seed, t, [&](int b, int h, int tok, int d) {
    const auto blk = static_cast<std::size_t>(seq_tables[static_cast<std::size_t>(b)][tok / bs]);
    return ((blk * KH + h) * bs + tok % bs) * D + d;
  });
  const PagedKv kv{k.data(), v.data(), dtables.data(), dlens.data(), num_blocks, bs, max_blocks};
  for (const int splits : {1, 4}) {
    cudalab::testing::GuardedOutput<std::uint16_t> out(q.host.size());
    DeviceBuffer<float> ws(split_k_workspace_floats(shape, splits));
    if (splits == 1)
      decode_attention_paged(q.dev.data(), kv, out.data(), shape, t);
    else
      decode_attention_paged_split_k(q.dev.data(), kv, out.data(), shape, t, splits, ws.data(),
                                     ws.size());
    CUDALAB_CHECK(cudaDeviceSynchronize());
    std::vector<float> got;
    for (const std::uint16_t bits : out.result()) got.push_back(from_bits(bits, t));
    EXPECT_MATCHES(compare(got, want, Tolerance{1e-3, 0},
                           std::string(splits == 1 ? "decode_attention_paged (exercise 11.2"
                                                   : "decode_attention_paged_split_k (exercise "
                                                     "11.3, 4 splits") +
                               ", 131112 blocks: cache offsets past 2^31 elements)"));
    EXPECT_TRUE(out.guard_intact());
  }
}

// Index width, contiguous: [3][8][1048600][128] fp16 (3.2 G elements, 6.4 GB each for K and V):
// every row of sequence 2 starts past 2^31 elements ((b * kv_heads + h) * max_len + t) * head_dim
// in int overflows there). Cost: 12.9 GB, a few ms.
TEST(DecodeAttentionLargeGpu, ContiguousCachePastTwoToThe31Elements) {
  const DType t = DType::kBF16;
  const int D = 128, KH = 8, QH = 16, max_len = 1048600;
  const std::vector<int> lens{37, 100, 45};
  const int B = static_cast<int>(lens.size());
  const std::size_t cache = static_cast<std::size_t>(B) * KH * max_len * D;
  CUDALAB_REQUIRE_DEVICE_MEMORY(2 * cache * 2 + (std::size_t{1} << 30));
  const std::uint64_t seed = Rng().seed();
  DeviceBuffer<std::uint16_t> k(cache), v(cache);
  fill_random(k.data(), cache, seed + kKSeedOffset, t, -1.0f, 1.0f);
  fill_random(v.data(), cache, seed + kVSeedOffset, t, -1.0f, 1.0f);
  auto dlens = to_device(lens);
  Rng rng(seed);
  const Queries q(static_cast<std::size_t>(B) * QH * D, t, rng);
  const DecodeShape shape{B, QH, KH, D, 1.0f / std::sqrt(static_cast<float>(D))};
  const auto want = large_cache_oracle(q, lens, shape, seed, t, [&](int b, int h, int tok, int d) {
    return ((static_cast<std::size_t>(b) * KH + h) * max_len + tok) * D + d;
  });
  cudalab::testing::GuardedOutput<std::uint16_t> out(q.host.size());
  decode_attention_contiguous(q.dev.data(), k.data(), v.data(), dlens.data(), max_len, out.data(),
                              shape, t);
  CUDALAB_CHECK(cudaDeviceSynchronize());
  std::vector<float> got;
  for (const std::uint16_t bits : out.result()) got.push_back(from_bits(bits, t));
  EXPECT_MATCHES(compare(got, want, Tolerance{4e-3, 0},
                         "decode_attention_contiguous (exercise 11.2, [3][8][1048600][128]: rows "
                         "of sequence 2 past 2^31 elements)"));
  EXPECT_TRUE(out.guard_intact());
}

TEST(DecodeAttentionArgs, ShapesAreCheckedBeforeAnyPointer) {
  const PagedKv kv{};
  DecodeShape s{2, 32, 8, 96, 0.1f};
  cudalab::testing::expect_throws_naming(
      [&] { decode_attention_paged(nullptr, kv, nullptr, s, DType::kF16); }, "head_dim");
  s = {2, 32, 6, 128, 0.1f};
  cudalab::testing::expect_throws_naming(
      [&] { decode_attention_paged(nullptr, kv, nullptr, s, DType::kF16); }, "kv_heads");
  s = {2, 32, 2, 128, 0.1f};  // a group of 16
  cudalab::testing::expect_throws_naming(
      [&] { decode_attention_paged(nullptr, kv, nullptr, s, DType::kF16); }, "q_heads");
  s = {-1, 32, 8, 128, 0.1f};
  cudalab::testing::expect_throws_naming(
      [&] { decode_attention_paged(nullptr, kv, nullptr, s, DType::kF16); }, "batch");
  s = {2, 32, 8, 128, NAN};
  cudalab::testing::expect_throws_naming(
      [&] { decode_attention_paged(nullptr, kv, nullptr, s, DType::kF16); }, "scale");
  s = {2, 32, 8, 128, 0.1f};
  cudalab::testing::expect_throws_naming(
      [&] { decode_attention_paged(nullptr, kv, nullptr, s, DType::kF16); }, "num_blocks");
  const PagedKv nulls{nullptr, nullptr, nullptr, nullptr, 4, 16, 2};
  cudalab::testing::expect_throws_naming(
      [&] { decode_attention_paged(nullptr, nulls, nullptr, s, DType::kF16); }, "k_cache");
  cudalab::testing::expect_throws_naming(
      [&] {
        decode_attention_contiguous(nullptr, nullptr, nullptr, nullptr, 0, nullptr, s,
                                    DType::kBF16);
      },
      "max_len");
  cudalab::testing::expect_throws_naming(
      [&] {
        decode_attention_contiguous(nullptr, nullptr, nullptr, nullptr, 8, nullptr, s,
                                    DType::kBF16);
      },
      "q");
  cudalab::testing::expect_throws_naming(
      [&] {
        decode_attention_paged_split_k(nullptr, nulls, nullptr, s, DType::kF16, 0, nullptr, 0);
      },
      "splits");
  cudalab::testing::expect_throws_naming([&] { (void)split_k_workspace_floats(s, 0); }, "splits");
  EXPECT_EQ(split_k_workspace_floats(s, 4), 2u * 32 * 4 * 130);
  // The planned decode checks the shape and the cache's extent before it asks the device anything.
  const PagedKv negative{nullptr, nullptr, nullptr, nullptr, 4, 16, -2};
  cudalab::testing::expect_throws_naming([&] { (void)decode_auto_splits(s, negative); }, "kv");
  s = {2, 32, 8, 96, 0.1f};
  cudalab::testing::expect_throws_naming(
      [&] { decode_attention_paged_auto(nullptr, kv, nullptr, s, DType::kF16, nullptr, 0); },
      "head_dim");
  cudalab::testing::expect_throws_naming([&] { (void)decode_auto_workspace_floats(s, kv); },
                                         "head_dim");
}

TEST(DecodeAttentionArgs, EmptyBatchIsANoOp) {
  const DecodeShape s{0, 32, 8, 128, 0.1f};
  EXPECT_NO_THROW(decode_attention_paged(nullptr, PagedKv{}, nullptr, s, DType::kF16));
  EXPECT_NO_THROW(
      decode_attention_contiguous(nullptr, nullptr, nullptr, nullptr, 1, nullptr, s, DType::kF16));
  EXPECT_NO_THROW(
      decode_attention_paged_split_k(nullptr, PagedKv{}, nullptr, s, DType::kF16, 4, nullptr, 0));
  EXPECT_NO_THROW(
      decode_attention_paged_auto(nullptr, PagedKv{}, nullptr, s, DType::kF16, nullptr, 0));
  EXPECT_EQ(decode_auto_workspace_floats(s, PagedKv{}), 0u);
}
