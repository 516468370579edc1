// The lesson's DDP-like training step (reference track only): N ranks simulated on GPU 0 (and on
// every GPU present) follow the single-GPU loss curve, with one all-reduce at the end and with
// bucketed all-reduces on a second stream; ddp_train itself checks that the replicas stay equal.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <stdexcept>
#include <vector>

#include "ch08/ch08.hpp"
#include "ch08/ddp.hpp"
#include "multi_gpu_testing.hpp"

using namespace cudalab::ch08;

namespace {

// The stated tolerance: the ranks sum the same terms in another order (per-rank partial sums, then
// the ring), so the losses agree to float rounding, amplified a little by 20 steps of SGD.
void expect_follows(const std::vector<float>& got, const std::vector<float>& one,
                    const char* what) {
  ASSERT_EQ(got.size(), one.size()) << what;
  for (std::size_t s = 0; s < one.size(); ++s)
    EXPECT_NEAR(got[s], one[s], 1e-4 * std::max(1.0f, std::fabs(one[s]))) << what << ", step " << s;
}

}  // namespace

// The oracle itself (CPU): it learns, and its first loss is the loss of the initial parameters,
// computed here once more the plain way.
TEST(DdpCpu, OracleLearnsAndStartsFromTheInitialLoss) {
  DdpConfig cfg;
  cfg.steps = 5;
  const std::vector<double> losses = ddp_train_cpu(cfg);
  ASSERT_EQ(losses.size(), 5u);
  EXPECT_LT(losses.back(), losses.front());
  const DdpData d = ddp_data(cfg);
  const std::size_t w2 = std::size_t(cfg.inputs) * cfg.hidden + cfg.hidden;
  double loss = 0;
  for (int b = 0; b < cfg.batch; ++b) {
    double y = d.p[w2 + cfg.hidden];
    for (int j = 0; j < cfg.hidden; ++j) {
      double a = d.p[std::size_t(cfg.inputs) * cfg.hidden + j];
      for (int i = 0; i < cfg.inputs; ++i)
        a += double{d.x[std::size_t(b) * cfg.inputs + i]} * d.p[std::size_t(i) * cfg.hidden + j];
      y += std::max(a, 0.0) * d.p[w2 + j];
    }
    loss += 0.5 * (y - d.t[b]) * (y - d.t[b]) / cfg.batch;
  }
  EXPECT_NEAR(losses.front(), loss, 1e-12 * std::max(1.0, loss));
  cfg.batch = 0;
  EXPECT_THROW(ddp_train_cpu(cfg), std::invalid_argument);
}

// One rank on the GPU (cuBLAS GEMMs in float) follows the double oracle: the same forward pass,
// gradients and steps, up to float rounding compounded over 20 steps of SGD. A transposed GEMM
// operand or a gradient in the wrong bucket changes the curve at the first or second step.
TEST(DdpGpu, OneRankFollowsTheCpuOracle) {
  CUDALAB_REQUIRE_GPU();
  const DdpConfig cfg;
  const std::vector<double> want = ddp_train_cpu(cfg);
  const std::vector<float> got = ddp_train(cfg, std::vector<int>{0}, GradSync::kAtEnd);
  ASSERT_EQ(got.size(), want.size());
  for (std::size_t s = 0; s < want.size(); ++s)
    EXPECT_NEAR(got[s], want[s], 1e-3 * std::max(1.0, std::fabs(want[s]))) << "step " << s;
}

// The step timing the benchmark reads: the steps after the first, the set-up outside; timing
// changes nothing in the training, and fewer than 2 steps time nothing.
TEST(DdpGpu, StepSecondsTimesTheStepsAndChangesNothing) {
  CUDALAB_REQUIRE_GPU();
  DdpConfig cfg;
  cfg.steps = 5;
  double step = -1.0;
  const std::vector<float> timed =
      ddp_train(cfg, std::vector<int>{0, 0}, GradSync::kBucketed, &step);
  expect_follows(timed, ddp_train(cfg, std::vector<int>{0, 0}, GradSync::kBucketed), "timed");
  EXPECT_GT(step, 0.0);
  EXPECT_LT(step, 1.0) << "one step of the tests' MLP cannot take a second";
  cfg.steps = 1;
  (void)ddp_train(cfg, std::vector<int>{0}, GradSync::kAtEnd, &step);
  EXPECT_EQ(step, 0.0);
}

TEST(DdpGpu, SimulatedRanksFollowTheSingleGpuLoss) {
  CUDALAB_REQUIRE_GPU();
  const DdpConfig cfg;
  const std::vector<float> one = ddp_train(cfg, std::vector<int>{0}, GradSync::kAtEnd);
  ASSERT_EQ(one.size(), static_cast<std::size_t>(cfg.steps));
  EXPECT_LT(one.back(), one.front()) << "the single-GPU run does not learn";
  for (int n : {2, 3, 4, 8}) {
    expect_follows(ddp_train(cfg, std::vector<int>(n, 0), GradSync::kAtEnd), one,
                   "one all-reduce at the end");
    expect_follows(ddp_train(cfg, std::vector<int>(n, 0), GradSync::kBucketed), one, "bucketed");
  }
}

TEST(DdpGpu, RejectsBadArguments) {
  CUDALAB_REQUIRE_GPU();
  DdpConfig cfg;
  EXPECT_THROW(ddp_train(cfg, std::vector<int>{}, GradSync::kAtEnd), std::invalid_argument);
  EXPECT_THROW(ddp_train(cfg, std::vector<int>{device_count()}, GradSync::kAtEnd),
               std::invalid_argument);
  cfg.batch = 2;
  EXPECT_THROW(ddp_train(cfg, std::vector<int>{0, 0, 0}, GradSync::kAtEnd), std::invalid_argument);
  cfg.batch = 0;
  EXPECT_THROW(ddp_train(cfg, std::vector<int>{0}, GradSync::kAtEnd), std::invalid_argument);
}

TEST(DdpMultiGpu, EveryGpuFollowsTheSingleGpuLoss) {
  CH08_REQUIRE_GPUS(2);
  std::vector<int> all(device_count());
  for (int d = 0; d < device_count(); ++d) all[d] = d;
  enable_peer_access(all);
  const DdpConfig cfg;
  const std::vector<float> one = ddp_train(cfg, std::vector<int>{0}, GradSync::kAtEnd);
  expect_follows(ddp_train(cfg, all, GradSync::kAtEnd), one,
                 "one all-reduce at the end, every GPU");
  expect_follows(ddp_train(cfg, all, GradSync::kBucketed), one, "bucketed, every GPU");
}
