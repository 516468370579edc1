// cuDNN's forward convolution algorithms on ResNet-50 layers: what the heuristics rank, what Find
// measures (time, workspace, math type), and which algorithm wins with no workspace versus an
// unlimited one. Prints Markdown; writes JSON when given a path.
//
//   ./build/gpu/chapters/06_libraries/ch06_conv_algos [out.json] [--batch 32] [--layouts NCHW,NHWC]
#include <fmt/format.h>

#include <cstdio>
#include <cstring>
#include <exception>
#include <fstream>
#include <string>
#include <vector>

#include "ch06/conv.hpp"
#include "cudalab/device.hpp"

using namespace cudalab;
using ch06::ConvLayout;
using ch06::ConvShape;
using ch06::ConvType;

namespace {

struct Layer {
  const char* name;
  ConvShape shape;
};

std::vector<Layer> resnet50_layers(int batch) {
  // n, c, h, w, k, r, s, stride, pad
  return {{"conv1 7x7/2 3->64 @224", {batch, 3, 224, 224, 64, 7, 7, 2, 3}},
          {"3x3 64->64 @56", {batch, 64, 56, 56, 64, 3, 3, 1, 1}},
          {"1x1 256->64 @56", {batch, 256, 56, 56, 64, 1, 1, 1, 0}},
          {"3x3 128->128 @28", {batch, 128, 28, 28, 128, 3, 3, 1, 1}},
          {"3x3 256->256 @14", {batch, 256, 14, 14, 256, 3, 3, 1, 1}},
          {"3x3 512->512 @7", {batch, 512, 7, 7, 512, 3, 3, 1, 1}}};
}

std::string json_escape(const std::string& s) {
  std::string o;
  for (char ch : s) {
    if (ch == '"' || ch == '\\') o += '\\';
    o += ch;
  }
  return o;
}

std::string fmt_time(float ms) {
  return ms < 0 ? "-" : fmt::format("{:.3f}", ms);
}
std::string fmt_mib(std::size_t b) {
  return fmt::format("{:.1f}", b / 1048576.0);
}

}  // namespace

int main(int argc, char** argv) try {
  std::string json_path;
  int batch = 32;
  bool nchw = true, nhwc = true;
  for (int i = 1; i < argc; ++i) {
    if (!std::strcmp(argv[i], "--batch") && i + 1 < argc) {
      batch = std::stoi(argv[++i]);
    } else if (!std::strcmp(argv[i], "--layouts") && i + 1 < argc) {
      const std::string l = argv[++i];
      nchw = l.find("NCHW") != std::string::npos;
      nhwc = l.find("NHWC") != std::string::npos;
    } else if (argv[i][0] != '-') {
      json_path = argv[i];
    } else {
      std::fprintf(stderr, "usage: %s [out.json] [--batch N] [--layouts NCHW,NHWC]\n", argv[0]);
      return 2;
    }
  }
  if (!has_gpu()) {
    fmt::print("skipped: no GPU ({})\n", no_gpu_reason());
    return 0;
  }
  if (!ch06::have_cudnn()) {
    fmt::print("skipped: built without cuDNN\n");
    return 0;
  }
  const auto dev = device_info();
  constexpr std::size_t kUnlimited = std::size_t{4} << 30;  // 4 GiB: "unlimited" for these layers
  fmt::print("# cuDNN forward convolution algorithms, ResNet-50 layers, batch {}, {}\n\n", batch,
             dev.name);
  fmt::print(
      "Find (cudnnFindConvolutionForwardAlgorithmEx) times every algorithm; pick = fastest that "
      "succeeds, with 0 bytes of workspace and with up to 4 GiB. Math: DEFAULT (cuDNN may use "
      "TF32 tensor cores for fp32 data).\n\n");
  fmt::print(
      "| layer | layout | type | pick, 0 B workspace | ms | pick, unlimited | ms | workspace MiB | "
      "speedup |\n");
  fmt::print("|---|---|---|---|---:|---|---:|---:|---:|\n");

  std::string json = "{\n  \"device\": \"" + json_escape(dev.name) +
                     "\",\n  \"batch\": " + std::to_string(batch) + ",\n  \"layers\": [\n";
  std::string details;
  bool first = true;
  for (const auto& layer : resnet50_layers(batch)) {
    for (const auto layout : {ConvLayout::kNCHW, ConvLayout::kNHWC}) {
      if ((layout == ConvLayout::kNCHW && !nchw) || (layout == ConvLayout::kNHWC && !nhwc))
        continue;
      for (const auto type : {ConvType::kF32, ConvType::kF16}) {
        const char* lname = layout == ConvLayout::kNCHW ? "NCHW" : "NHWC";
        const char* tname = type == ConvType::kF32 ? "fp32" : "fp16";
        const auto rep = ch06::enumerate_conv_algos(layer.shape, layout, type, kUnlimited);
        std::size_t ws = 0;
        for (const auto& r : rep.measured)
          if (r.algo == rep.pick_unlimited && r.status == "SUCCESS") {
            ws = r.workspace;
            break;
          }
        const double speedup = rep.time_unlimited_ms > 0 && rep.time_no_workspace_ms > 0
                                   ? rep.time_no_workspace_ms / rep.time_unlimited_ms
                                   : 0.0;
        fmt::print("| {} | {} | {} | {} | {} | {} | {} | {} | {} |\n", layer.name, lname, tname,
                   rep.pick_no_workspace.empty() ? "(none)" : rep.pick_no_workspace,
                   fmt_time(rep.time_no_workspace_ms),
                   rep.pick_unlimited.empty() ? "(none)" : rep.pick_unlimited,
                   fmt_time(rep.time_unlimited_ms), fmt_mib(ws),
                   speedup > 0 ? fmt::format("{:.2f}x", speedup) : "-");
        details += fmt::format("\n### {} — {} {}  ({:.2f} GFLOP)\n\n", layer.name, lname, tname,
                               layer.shape.flops() / 1e9);
        details +=
            "| source | rank | algo | status | ms | TFLOP/s | workspace MiB | math "
            "|\n|---|---:|---|---|---:|---:|---:|---|\n";
        std::string jalgos;
        for (const auto* list : {&rep.heuristics, &rep.measured}) {
          for (const auto& r : *list) {
            const double tflops =
                r.time_ms > 0 ? layer.shape.flops() / (r.time_ms * 1e-3) / 1e12 : 0.0;
            details += fmt::format(
                "| {} | {} | {} | {} | {} | {} | {} | {} |\n", r.from_find ? "find" : "get_v7",
                r.rank, r.algo, r.status, fmt_time(r.time_ms),
                tflops > 0 ? fmt::format("{:.1f}", tflops) : "-", fmt_mib(r.workspace), r.math);
            jalgos += fmt::format(
                "{}      {{\"source\": \"{}\", \"rank\": {}, \"algo\": \"{}\", \"status\": \"{}\", "
                "\"time_ms\": {}, \"workspace_bytes\": {}, \"math\": \"{}\"}}",
                jalgos.empty() ? "" : ",\n", r.from_find ? "find" : "get_v7", r.rank, r.algo,
                r.status, r.time_ms, r.workspace, r.math);
          }
        }
        const auto& s = layer.shape;
        json += fmt::format(
            "{}    {{\"layer\": \"{}\", \"layout\": \"{}\", \"type\": \"{}\", "
            "\"shape\": {{\"n\": {}, \"c\": {}, \"h\": {}, \"w\": {}, \"k\": {}, \"r\": {}, \"s\": "
            "{}, "
            "\"stride\": {}, \"pad\": {}}}, \"gflop\": {:.4f}, "
            "\"pick_no_workspace\": \"{}\", \"time_no_workspace_ms\": {}, "
            "\"pick_unlimited\": \"{}\", \"time_unlimited_ms\": {}, \"workspace_unlimited_bytes\": "
            "{},\n"
            "     \"algos\": [\n{}\n     ]}}",
            first ? "" : ",\n", layer.name, lname, tname, s.n, s.c, s.h, s.w, s.k, s.r, s.s,
            s.stride, s.pad, s.flops() / 1e9, rep.pick_no_workspace, rep.time_no_workspace_ms,
            rep.pick_unlimited, rep.time_unlimited_ms, ws, jalgos);
        first = false;
        std::fflush(stdout);
      }
    }
  }
  json += "\n  ]\n}\n";
  fmt::print("\n## Every algorithm, per layer\n{}", details);
  if (!json_path.empty()) {
    std::ofstream(json_path) << json;
    fmt::print("\nwrote {}\n", json_path);
  }
  return 0;
} catch (const std::exception& e) {
  std::fprintf(stderr, "ch06_conv_algos: %s\n", e.what());
  return 1;
}
