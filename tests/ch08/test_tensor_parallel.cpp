// The lesson's tensor-parallel GEMM (reference track only): column split + all-gather and row split
// + all-reduce, with N ranks simulated on GPU 0 and on every GPU present, against one cuBLAS SGEMM.
#include <gtest/gtest.h>

#include <stdexcept>
#include <tuple>
#include <vector>

#include "ch08/ch08.hpp"
#include "ch08/tensor_parallel.hpp"
#include "cudalab/check.hpp"
#include "cudalab/compare.hpp"
#include "cudalab/cublas.hpp"
#include "cudalab/memory.hpp"
#include "cudalab/random.hpp"
#include "multi_gpu_testing.hpp"

using namespace cudalab;
using namespace cudalab::ch08;

namespace {

enum class Split { kColumns, kRows };

// Every rank's C against one SGEMM on device 0 (same data).
void check_tp(Split split, const std::vector<int>& devices, int m, int n, int k) {
  Rng rng;
  const std::vector<float> ha = rng.uniform<float>(std::size_t(m) * k, -1.0f, 1.0f);
  const std::vector<float> hb = rng.uniform<float>(std::size_t(k) * n, -1.0f, 1.0f);
  const int size = static_cast<int>(devices.size());
  CUDALAB_CHECK(cudaSetDevice(0));
  std::vector<float> want(std::size_t(m) * n, 0.0f);
  {
    const DeviceBuffer<float> a{std::span<const float>(ha)}, b{std::span<const float>(hb)};
    DeviceBuffer<float> c(want.size());
    const CublasHandle h;
    const float one = 1.0f, zero = 0.0f;
    CUDALAB_CHECK_CUBLAS(cublasSgemm(h, CUBLAS_OP_N, CUBLAS_OP_N, m, n, k, &one, a.data(), m,
                                     b.data(), k, &zero, c.data(), m));
    CUDALAB_CHECK(cudaDeviceSynchronize());
    want = c.to_host();
  }
  std::vector<DeviceBuffer<float>> as, bs, cs;
  std::vector<CublasHandle> handles;
  std::vector<cudaStream_t> streams(size);
  std::vector<cublasHandle_t> raw;
  std::vector<const float*> pa, pb;
  std::vector<float*> pc;
  for (int r = 0; r < size; ++r) {
    CUDALAB_CHECK(cudaSetDevice(devices[r]));
    as.emplace_back(std::span<const float>(ha));
    bs.emplace_back(std::span<const float>(hb));
    cs.emplace_back(want.size());
    CUDALAB_CHECK(cudaMemset(cs.back().data(), 0xff, cs.back().bytes()));  // poisoned (NaN)
    handles.emplace_back();
    CUDALAB_CHECK(cudaStreamCreateWithFlags(&streams[r], cudaStreamNonBlocking));
    raw.push_back(handles.back().get());
    pa.push_back(as.back().data());
    pb.push_back(bs.back().data());
    pc.push_back(cs.back().data());
  }
  // The uploads (cudaMemcpy from pageable memory may return before the data lands) and the poison
  // memsets run on the legacy default stream, which the non-blocking rank streams do not wait
  // for: without this wait a rank's GEMM could run first and its result be overwritten with NaN
  // (seen on the H200 under the GPU suite's parallel load).
  for (int d : devices) {
    CUDALAB_CHECK(cudaSetDevice(d));
    CUDALAB_CHECK(cudaDeviceSynchronize());
  }
  CUDALAB_CHECK(cudaSetDevice(0));
  const TpRanks ranks{devices, streams, raw};
  if (split == Split::kColumns) {
    tp_gemm_columns(pa, pb, pc, m, n, k, ranks);
  } else {
    tp_gemm_rows(pa, pb, pc, m, n, k, ranks);
  }
  for (int r = 0; r < size; ++r) {
    CUDALAB_CHECK(cudaSetDevice(devices[r]));
    CUDALAB_CHECK(cudaStreamSynchronize(streams[r]));
    CUDALAB_CHECK(cudaStreamDestroy(streams[r]));
  }
  CUDALAB_CHECK(cudaSetDevice(0));
  // Column split: the same dot products as one GEMM; row split: partial sums added in another
  // order, |error| ~ k * eps * |a||b|.
  const float tol = 1e-4f * static_cast<float>(k + 1);
  for (int r = 0; r < size; ++r) {
    const std::vector<float> got = cs[r].to_host();
    ASSERT_EQ(got.size(), want.size());
    for (std::size_t i = 0; i < got.size(); ++i)
      ASSERT_NEAR(got[i], want[i], tol)
          << (split == Split::kColumns ? "columns" : "rows") << ", rank " << r << " of " << size
          << ", element " << i << " (m " << m << ", n " << n << ", k " << k << ")";
  }
}

}  // namespace

TEST(TensorParallelGpu, ColumnSplitMatchesOneGemm) {
  CUDALAB_REQUIRE_GPU();
  for (int size : {1, 2, 3, 4})
    for (auto [m, n, k] : {std::tuple{64, 64, 64}, std::tuple{37, 53, 29}, std::tuple{128, 2, 16}})
      check_tp(Split::kColumns, std::vector<int>(size, 0), m, n, k);
}

TEST(TensorParallelGpu, RowSplitMatchesOneGemm) {
  CUDALAB_REQUIRE_GPU();
  for (int size : {1, 2, 3, 4})
    for (auto [m, n, k] : {std::tuple{64, 64, 64}, std::tuple{37, 53, 29}, std::tuple{16, 16, 2}})
      check_tp(Split::kRows, std::vector<int>(size, 0), m, n, k);
}

TEST(TensorParallelGpu, RejectsBadArguments) {
  CUDALAB_REQUIRE_GPU();
  const std::vector<int> devices{0};
  const std::vector<cudaStream_t> streams{nullptr};
  const std::vector<cublasHandle_t> none{nullptr};
  DeviceBuffer<float> x(16);
  const std::vector<const float*> p{x.data()};
  const std::vector<float*> q{x.data()};
  EXPECT_THROW(tp_gemm_columns(p, p, q, 4, 4, 1, TpRanks{devices, streams, none}),
               std::invalid_argument);
  const CublasHandle h;
  const std::vector<cublasHandle_t> hs{h.get()};
  EXPECT_THROW(tp_gemm_rows(p, p, q, -1, 4, 4, TpRanks{devices, streams, hs}),
               std::invalid_argument);
  EXPECT_THROW(tp_gemm_rows(p, p, {}, 4, 4, 1, TpRanks{devices, streams, hs}),
               std::invalid_argument);
}

TEST(TensorParallelMultiGpu, EveryGpuMatchesOneGemm) {
  CH08_REQUIRE_GPUS(2);
  std::vector<int> all(device_count());
  for (int d = 0; d < device_count(); ++d) all[d] = d;
  enable_peer_access(all);
  check_tp(Split::kColumns, all, 256, 250, 128);
  check_tp(Split::kRows, all, 256, 250, 130);
}
