// The GPU table of chapter 2: the one place in the repository where SM counts, lanes, tensor FLOP
// per clock, sheet clocks, bus widths and published figures are written down. Everything else
// (the calculator, apps/sheet, tools/gpu_card.py, chapter 9's roofline) reads it from here.
//
// Conventions (why each number is what it is):
//  * tensor_per_clk_sm is the DENSE rate with FP32 accumulation for fp16/bf16/fp8 (what training
//    and inference use; GeForce parts halve it against FP16 accumulation, which is the figure
//    their marketing leads with). int8 is INT32-accumulate OP per clock.
//  * Clocks: the clock each published row assumes. Hopper sheets use 1.98 GHz for the FP64,
//    FP32 and FP64-tensor rows and 1.83 GHz for the low-precision tensor rows (cudnn-frontend
//    #650: "989.5 dense BF16 TFLOPS = 132 SMs x 1.83 GHz x 4096 FLOPs/clk/SM").
//  * mem_clock_mhz is what the driver reports (cudaDevAttrMemoryClockRate, nvidia-smi clocks.mem);
//    DRAM bandwidth = 2 x that x bus width / 8.
//  * published: as printed by NVIDIA (datasheets and architecture whitepapers) or, where the
//    datasheet rounds (H100/H200 "34" FP64), the unrounded figure of the whitepaper tables.
//    A sheet that prints only "with sparsity" figures (L4) gets only the sparse column.
//  * B200: NVIDIA publishes no tensor clock; the clock here is the one the published dense BF16
//    figure implies (2.25 PFLOP/s / (148 SM x 8192)): tensor_clock_implied says so, and the card
//    prints it as implied. No CUDA-core clock is published either: those rows are absent.
#include <array>

#include "ch02/spec.hpp"

namespace cudalab::ch02 {
namespace {

using P = Published;

// Tensor FLOP (OP) per clock per SM in metric order: fp64, fp32, fp64_tensor, tf32, fp16, bf16,
// fp8, int8, dram (the first two and the last are never tensor rows: 0).
constexpr std::array<double, kMetrics> tc(double fp64_tensor, double tf32, double fp16, double bf16,
                                          double fp8, double int8) {
  return {0, 0, fp64_tensor, tf32, fp16, bf16, fp8, int8, 0};
}
// Published figures in metric order.
constexpr std::array<Published, kMetrics> pub(P fp64, P fp32, P fp64_tensor, P tf32, P fp16, P bf16,
                                              P fp8, P int8, P dram) {
  return {fp64, fp32, fp64_tensor, tf32, fp16, bf16, fp8, int8, dram};
}

// nvidia-smi mig -lgip on an H200 141 GB (NVIDIA/mig-parted#120): SMs and GiB per instance.
constexpr std::array<MigProfile, 5> kH200Mig = {{
    {"1g.18gb", 7, 16, 16.00},
    {"1g.35gb", 4, 26, 32.25},
    {"2g.35gb", 3, 32, 32.25},
    {"3g.71gb", 2, 60, 69.50},
    {"4g.71gb", 1, 64, 69.50},
}};

const std::array<GpuSpec, 8> kTable = {{
    {.key = "V100-SXM2",
     .name = "Tesla V100-SXM2-32GB",
     .arch = "GV100 (Volta)",
     .cc = 70,
     .sms = 80,
     .fp32_lanes_per_sm = 64,
     .fp64_lanes_per_sm = 32,
     .tensor_per_clk_sm = tc(0, 0, 1024, 0, 0, 0),  // 8 tensor cores x 64 FMA x 2
     .core_clock_mhz = 1530,
     .tensor_clock_mhz = 1530,
     .bus_width_bits = 4096,
     .reported_bus_width_bits = 4096,
     .mem_clock_mhz = 877,
     .memory_gib = 32,
     .l2_mb = 6,
     .published = pub({7.8}, {15.7}, {}, {}, {125}, {}, {}, {}, {900}),
     .source = "NVIDIA Tesla V100 datasheet (SXM2) and Volta whitepaper",
     .mig = {}},
    {.key = "A100-40GB",
     .name = "NVIDIA A100-SXM4-40GB",
     .arch = "GA100 (Ampere)",
     .cc = 80,
     .sms = 108,
     .fp32_lanes_per_sm = 64,
     .fp64_lanes_per_sm = 32,
     .tensor_per_clk_sm = tc(128, 1024, 2048, 2048, 0, 4096),
     .sparse_tensor = true,
     .core_clock_mhz = 1410,
     .tensor_clock_mhz = 1410,
     .bus_width_bits = 5120,
     .reported_bus_width_bits = 5120,
     .mem_clock_mhz = 1215,
     .memory_gib = 40,
     .l2_mb = 40,
     .published =
         pub({9.7}, {19.5}, {19.5}, {156, 312}, {312, 624}, {312, 624}, {}, {624, 1248}, {1555}),
     .source = "NVIDIA A100 datasheet (SXM4 40GB) and Ampere GA100 whitepaper",
     .mig = {}},
    {.key = "A100-80GB",
     .name = "NVIDIA A100-SXM4-80GB",
     .arch = "GA100 (Ampere)",
     .cc = 80,
     .sms = 108,
     .fp32_lanes_per_sm = 64,
     .fp64_lanes_per_sm = 32,
     .tensor_per_clk_sm = tc(128, 1024, 2048, 2048, 0, 4096),
     .sparse_tensor = true,
     .core_clock_mhz = 1410,
     .tensor_clock_mhz = 1410,
     .bus_width_bits = 5120,
     .reported_bus_width_bits = 5120,
     .mem_clock_mhz = 1593,
     .memory_gib = 80,
     .l2_mb = 40,
     .published =
         pub({9.7}, {19.5}, {19.5}, {156, 312}, {312, 624}, {312, 624}, {}, {624, 1248}, {2039}),
     .source = "NVIDIA A100 datasheet (SXM4 80GB)",
     .mig = {}},
    {.key = "H100-SXM",
     .name = "NVIDIA H100 80GB HBM3",
     .arch = "GH100 (Hopper)",
     .cc = 90,
     .sms = 132,
     .fp32_lanes_per_sm = 128,
     .fp64_lanes_per_sm = 64,
     .tensor_per_clk_sm = tc(256, 2048, 4096, 4096, 8192, 8192),
     .sparse_tensor = true,
     .core_clock_mhz = 1980,
     .tensor_clock_mhz = 1830,
     .bus_width_bits = 5120,
     .reported_bus_width_bits = 5120,
     .mem_clock_mhz = 2619,
     .memory_gib = 80,
     .l2_mb = 50,
     .published = pub({33.5}, {66.9}, {66.9}, {494.7, 989.4}, {989.4, 1978.9}, {989.4, 1978.9},
                      {1978.9, 3957.8}, {1978.9, 3957.8}, {3350}),
     .source = "NVIDIA H100 datasheet (SXM5; it rounds FP64 to 34) and Hopper whitepaper table; "
               "clocks: glennklockwood.com H100 notes, NVIDIA/cudnn-frontend#650",
     .mig = {}},
    {.key = "H200",
     .name = "NVIDIA H200",
     .arch = "GH100 (Hopper)",
     .cc = 90,
     .sms = 132,
     .fp32_lanes_per_sm = 128,
     .fp64_lanes_per_sm = 64,
     .tensor_per_clk_sm = tc(256, 2048, 4096, 4096, 8192, 8192),
     .sparse_tensor = true,
     .core_clock_mhz = 1980,
     .tensor_clock_mhz = 1830,
     .bus_width_bits = 6016,
     .reported_bus_width_bits = 6016,
     .mem_clock_mhz = 3201,
     .memory_gib = 141,
     .l2_mb = 60,
     .published = pub({33.5}, {66.9}, {66.9}, {494.7, 989.4}, {989.4, 1978.9}, {989.4, 1978.9},
                      {1978.9, 3957.8}, {1978.9, 3957.8}, {4800}),
     .source = "NVIDIA H200 datasheet (SXM: 4.8 TB/s, compute as H100 SXM); bus and memory "
               "clock as the lab's H200 reports them (6016-bit, 3201 MHz)",
     .mig = kH200Mig},
    {.key = "L4",
     .name = "NVIDIA L4",
     .arch = "AD104 (Ada)",
     .cc = 89,
     .sms = 58,
     .fp32_lanes_per_sm = 128,
     .fp32_dual_issue = true,
     .fp64_lanes_per_sm = 2,
     .tensor_per_clk_sm = tc(0, 512, 1024, 1024, 2048, 2048),
     .sparse_tensor = true,
     .core_clock_mhz = 2040,
     .tensor_clock_mhz = 2040,
     .bus_width_bits = 192,
     .reported_bus_width_bits = 192,
     .mem_clock_mhz = 6251,
     .memory_gib = 24,
     .l2_mb = 48,
     .published = pub({}, {30.3}, {}, {0, 120}, {0, 242}, {0, 242}, {0, 485}, {0, 485}, {300}),
     .source = "NVIDIA L4 datasheet (tensor rows printed with sparsity only)",
     .mig = {}},
    {.key = "RTX-4090",
     .name = "NVIDIA GeForce RTX 4090",
     .arch = "AD102 (Ada)",
     .cc = 89,
     .sms = 128,
     .fp32_lanes_per_sm = 128,
     .fp32_dual_issue = true,
     .fp64_lanes_per_sm = 2,
     // GeForce: FP32 accumulation at half the FP16-accumulate rate (330.3 TFLOP/s fp16-acc).
     .tensor_per_clk_sm = tc(0, 256, 512, 512, 1024, 2048),
     .sparse_tensor = true,
     .core_clock_mhz = 2520,
     .tensor_clock_mhz = 2520,
     .bus_width_bits = 384,
     .reported_bus_width_bits = 384,
     .mem_clock_mhz = 10501,
     .memory_gib = 24,
     .l2_mb = 72,
     .published = pub({1.3}, {82.6}, {}, {82.6, 165.2}, {165.2, 330.4}, {165.2, 330.4},
                      {330.3, 660.6}, {660.6, 1321.2}, {1008}),
     .source = "NVIDIA Ada Lovelace architecture whitepaper, appendix (RTX 4090)",
     .mig = {}},
    {.key = "B200",
     .name = "NVIDIA B200",
     .arch = "GB100 (Blackwell)",
     .cc = 100,
     .sms = 148,
     .fp32_lanes_per_sm = 128,
     .fp64_lanes_per_sm = 64,
     .tensor_per_clk_sm = tc(0, 0, 8192, 8192, 16384, 0),
     .sparse_tensor = true,
     .tensor_clock_mhz = 2.25e15 / (148 * 8192.0) / 1e6,
     .tensor_clock_implied = true,
     .bus_width_bits = 7680,
     .reported_bus_width_bits = 8192,  // older drivers; corrected to 7680 (pytorch/ao#4002)
     .mem_clock_mhz = 3996,
     .l2_mb = 126.5,
     .published = pub({}, {}, {}, {}, {2250, 4500}, {2250, 4500}, {4500, 9000}, {}, {7700}),
     .source = "NVIDIA Blackwell datasheet (HGX B200: 7.7 TB/s, BF16 2.25 / FP8 4.5 PFLOP/s "
               "dense); bus 7680-bit at 3996 MHz (pytorch/ao#4002)",
     .mig = {}},
}};

}  // namespace

std::span<const GpuSpec> gpu_table() {
  return kTable;
}

}  // namespace cudalab::ch02
