// Chapter 8 — the cost model's predictions (CPU only): the speedup of 2, 4 and 8 GPUs in one
// NVLink node and of 2 x 8 GPUs across two nodes over InfiniBand, for three data-parallel models,
// with one all-reduce after the backward pass and with bucketed all-reduces overlapping it.
//
//   build/ci/chapters/08_multi_gpu/ch08_cost_model            # Markdown table
//   build/ci/chapters/08_multi_gpu/ch08_cost_model --json     # the same as JSON
//
// Every figure is an assumption stated in the output (README, "When more GPUs pay"): the links come
// from ch08::nvlink_h200() and ch08::infiniband_ndr(); the busbw measured on 2 H200s is assumed to
// hold for 4 and 8 (NVSwitch gives every GPU the same link bandwidth); the models' compute times
// are round figures, not measurements.
#include <cmath>
#include <cstdio>
#include <cstring>
#include <exception>
#include <string>
#include <vector>

#include "ch08/ch08.hpp"

using namespace cudalab::ch08;

namespace {

struct Model {
  const char* name;
  double params;
  double bytes_per_grad;
  double compute_s;  // forward + backward of one GPU's batch
};

struct Row {
  std::string model, config;
  int gpus;
  double allreduce_ms, step_end_ms, step_bucketed_ms, speedup_end, speedup_bucketed;
};

constexpr double kBucketBytes = 25e6;  // PyTorch DDP's default bucket (25 MB)

}  // namespace

int main(int argc, char** argv) {
  try {
    bool json = false;
    for (int i = 1; i < argc; ++i) {
      if (std::strcmp(argv[i], "--json") == 0 && !json) {
        json = true;
        continue;
      }
      std::fprintf(stderr,
                   "ch08_cost_model: unexpected argument '%s' (usage: ch08_cost_model [--json])\n",
                   argv[i]);
      return 2;
    }
    const Link nv = nvlink_h200(), ib = infiniband_ndr();
    const std::vector<Model> models = {
        {"1.5B-parameter transformer, bf16 gradients, 1.0 s compute/step", 1.5e9, 2, 1.0},
        {"25.6M-parameter CNN (ResNet-50 size), fp32 gradients, 0.1 s compute/step", 25.6e6, 4,
         0.1},
        {"350M-parameter transformer, fp32 gradients, 20 ms compute/step (small batch per GPU)",
         350e6, 4, 0.02},
    };
    std::vector<Row> rows;
    for (const Model& m : models) {
      const double grad = m.params * m.bytes_per_grad;
      TrainingStep end{m.compute_s, grad, 2.0 / 3.0, 0, false};
      TrainingStep bucketed = end;
      bucketed.buckets = static_cast<int>(std::ceil(grad / kBucketBytes));
      const double t1 = step_seconds(end, 1, nv);
      for (int n : {2, 4, 8}) {
        const double te = step_seconds(end, n, nv), tb = step_seconds(bucketed, n, nv);
        rows.push_back({m.name, "1 node, NVLink", n, ring_allreduce_seconds(grad, n, nv) * 1e3,
                        te * 1e3, tb * 1e3, n * t1 / te, n * t1 / tb});
      }
      const double te = hierarchical_step_seconds(end, 2, 8, nv, ib);
      const double tb = hierarchical_step_seconds(bucketed, 2, 8, nv, ib);
      rows.push_back({m.name, "2 nodes x 8, NVLink + IB NDR", 16,
                      hierarchical_allreduce_seconds(grad, 2, 8, nv, ib) * 1e3, te * 1e3, tb * 1e3,
                      16 * t1 / te, 16 * t1 / tb});
    }
    if (json) {
      std::printf(
          "{\n  \"assumptions\": {\"nvlink\": {\"alpha_us\": %.3f, \"busbw_GBps\": %.1f}, "
          "\"infiniband\": {\"alpha_us\": %.3f, \"busbw_GBps\": %.1f}, \"bucket_bytes\": %.0f, "
          "\"backward_fraction\": 0.6667, \"scaling\": \"weak\"},\n  \"rows\": [\n",
          nv.alpha_s * 1e6, nv.busbw_gbs, ib.alpha_s * 1e6, ib.busbw_gbs, kBucketBytes);
      for (std::size_t i = 0; i < rows.size(); ++i) {
        const Row& r = rows[i];
        std::printf(
            "    {\"model\": \"%s\", \"config\": \"%s\", \"gpus\": %d, \"allreduce_ms\": %.3f, "
            "\"step_end_ms\": %.3f, \"step_bucketed_ms\": %.3f, \"speedup_end\": %.3f, "
            "\"speedup_bucketed\": %.3f}%s\n",
            r.model.c_str(), r.config.c_str(), r.gpus, r.allreduce_ms, r.step_end_ms,
            r.step_bucketed_ms, r.speedup_end, r.speedup_bucketed, i + 1 < rows.size() ? "," : "");
      }
      std::printf("  ]\n}\n");
      return 0;
    }
    std::printf(
        "Assumptions: NVLink alpha %.1f us/step, busbw %.0f GB/s (NCCL on 2 H200s, assumed for 4 "
        "and 8); "
        "InfiniBand NDR alpha %.1f us/step, %.0f GB/s per GPU (assumed); DDP buckets of 25 MB; "
        "backward = "
        "2/3 of compute; weak scaling (same batch per GPU).\n\n",
        nv.alpha_s * 1e6, nv.busbw_gbs, ib.alpha_s * 1e6, ib.busbw_gbs);
    std::printf(
        "| model | GPUs | links | all-reduce (ms) | step, one all-reduce (ms) | step, bucketed "
        "(ms) | "
        "speedup, one all-reduce | speedup, bucketed |\n|---|---|---|---|---|---|---|---|\n");
    for (const Row& r : rows)
      std::printf("| %s | %d | %s | %.1f | %.1f | %.1f | %.2fx | %.2fx |\n", r.model.c_str(),
                  r.gpus, r.config.c_str(), r.allreduce_ms, r.step_end_ms, r.step_bucketed_ms,
                  r.speedup_end, r.speedup_bucketed);
    return 0;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "ch08_cost_model: %s\n", e.what());
    return 1;
  }
}
