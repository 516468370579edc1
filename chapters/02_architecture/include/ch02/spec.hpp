// Chapter 2 — the spec-sheet calculator: every peak on an NVIDIA sheet is a product of a few
// counted things (SMs, lanes or tensor FLOP per clock per SM, a clock; bus bits, a data rate).
// This header is the host API (no CUDA): the table of GPUs (cpu/spec_table.cpp, the one owner of
// these facts in the repository), the arithmetic, the traps a sheet hides, and the 102% guard
// every measured row of the chapter passes through.
#pragma once

#include <array>
#include <cstddef>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace cudalab::ch02 {

// The rows of a sheet. CUDA-core rows (fp64, fp32) count FMA lanes; tensor rows count the
// tensor cores' dense FLOP (or integer OP) per clock per SM; dram counts bytes.
enum class Metric { fp64, fp32, fp64_tensor, tf32, fp16, bf16, fp8, int8, dram };
inline constexpr std::size_t kMetrics = 9;
inline constexpr std::array<Metric, kMetrics> kAllMetrics = {
    Metric::fp64, Metric::fp32, Metric::fp64_tensor, Metric::tf32, Metric::fp16,
    Metric::bf16, Metric::fp8,  Metric::int8,        Metric::dram};

std::string_view metric_name(Metric m);  // "fp32", "bf16", "dram", ...
std::optional<Metric> metric_from_name(std::string_view name);
std::string_view metric_unit(Metric m);  // "TFLOP/s", "TOP/s" (int8), "GB/s"
bool is_tensor(Metric m);
constexpr std::size_t index(Metric m) {
  return static_cast<std::size_t>(m);
}

// A published figure for one row, as NVIDIA prints it (0: not published / not supported).
struct Published {
  double dense = 0;   // TFLOP/s, TOP/s or GB/s
  double sparse = 0;  // the "with sparsity" (2:4) figure of a tensor row, 0 when none
};

// One MIG GPU-instance profile, as `nvidia-smi mig -lgip` lists it.
struct MigProfile {
  std::string_view name{};  // "1g.18gb"
  int max_instances = 0;
  int sms = 0;            // SMs of one instance
  double memory_gib = 0;  // memory of one instance, GiB (the name's "18gb" is rounded up)
};

struct GpuSpec {
  std::string_view key{};   // short name used on the command line: "H200", "H100-SXM", ...
  std::string_view name{};  // cudaDeviceProp::name, e.g. "NVIDIA H200"
  std::string_view arch{};  // "GH100 (Hopper)"
  int cc = 0;               // compute capability x 10
  int sms = 0;
  // FP32 lanes per SM as the sheet counts "CUDA cores" / SMs. On GA10x and AD10x half of them
  // share their issue slot with INT32 (fp32_dual_issue): the sheet's FP32 figure needs a
  // stream with no integer instruction at all.
  int fp32_lanes_per_sm = 0;
  bool fp32_dual_issue = false;
  int fp64_lanes_per_sm = 0;
  // Dense tensor FLOP (or OP) per clock per SM by metric (fp64_tensor .. int8); 0: none.
  std::array<double, kMetrics> tensor_per_clk_sm{};
  bool sparse_tensor = false;   // 2:4 structured sparsity doubles the tensor rows on the sheet
  double core_clock_mhz = 0;    // the clock the sheet's CUDA-core rows assume (the boost clock)
  double tensor_clock_mhz = 0;  // the clock the sheet's tensor rows assume
  bool tensor_clock_implied = false;  // no published clock: implied by the published figure
  int bus_width_bits = 0;             // the memory bus as built
  int reported_bus_width_bits = 0;    // what cudaDeviceProp::memoryBusWidth says
  double mem_clock_mhz = 0;           // memory clock as the driver reports it (2 transfers/clock)
  double memory_gib = 0;
  double l2_mb = 0;  // cudaDeviceProp::l2CacheSize / 2^20
  std::array<Published, kMetrics> published{};
  std::string_view source{};  // where the published figures come from
  std::span<const MigProfile> mig{};
};

// The table: V100, A100 (40 and 80 GB), H100 SXM, H200, L4, RTX 4090, B200.
std::span<const GpuSpec> gpu_table();
// By key ("H200", case-insensitive) or by cudaDeviceProp name ("NVIDIA H200"); nullptr if unknown.
const GpuSpec* find_gpu(std::string_view key_or_name);
// "V100-SXM2, A100-40GB, ...": for error messages.
std::string known_gpus();

// ---- the arithmetic --------------------------------------------------------------------------

// The clock the sheet assumes for a row: tensor_clock_mhz for tensor rows, core_clock_mhz else.
double sheet_clock_mhz(const GpuSpec& g, Metric m);
// FLOP (or OP) per clock per SM of a compute row: 2 x lanes for CUDA-core rows (an FMA is 2
// FLOP), the tensor figure for tensor rows; 0 for dram or an unsupported row.
double per_clock_per_sm(const GpuSpec& g, Metric m);
// The peak at a given SM clock: SMs x per_clock_per_sm x clock (TFLOP/s or TOP/s); for dram
// `clock_mhz` is the memory clock and the result 2 x clock x bus / 8 (GB/s).
double peak_at_clock(const GpuSpec& g, Metric m, double clock_mhz);
// The sheet's dense figure: peak_at_clock at the sheet's own clock (dram: real bus width).
double sheet_dense(const GpuSpec& g, Metric m);
// The "with sparsity" figure: 2 x dense for tensor rows of a GPU with 2:4 support, else 0.
double sheet_sparse(const GpuSpec& g, Metric m);
// 2 x memory clock x bus width / 8 in GB/s: the DRAM bandwidth formula.
double dram_gbps(int bus_width_bits, double mem_clock_mhz);
// Shared-memory (and L1) bandwidth the SM's design gives: 32 banks x 4 bytes per clock per SM
// (no sheet prints it; the card derives it) x SMs x clock, in GB/s.
double smem_peak_gbps(const GpuSpec& g, double clock_mhz);
// The formula of a row in words with its numbers, e.g. "132 SM x 4096 FLOP/clk/SM x 1830 MHz".
std::string formula(const GpuSpec& g, Metric m);

// ---- traps -----------------------------------------------------------------------------------

enum class TrapKind {
  sparsity,         // a tensor row printed "with sparsity": the dense figure is half
  boost_clock,      // a tensor row computed at the CUDA-core (boost) clock, not the tensor clock
  sustained_clock,  // the GPU ran below the clock the sheet assumes: the reachable peak is lower
  dual_issue_fp32,  // GA10x/AD10x FP32: half the lanes are shared with INT32
  bus_width,        // a bandwidth from a driver-reported bus width that differs from the real one
  mig,              // a MIG slice does not get 1/7 of the GPU: fewer SMs, fewer GiB than its name
  unexplained,      // matches no formula within 1%: a typo, or a figure from another product
};
std::string_view trap_name(TrapKind k);

struct Trap {
  TrapKind kind{};
  Metric metric{};
  double claimed = 0;  // the figure as printed (or the quantity the claim implies)
  double honest = 0;   // what the calculator says the same row is really worth
  std::string what{};  // one sentence with the numbers
};

// One printed row of a (possibly doctored) sheet.
struct Claim {
  Metric metric{};
  double value = 0;          // as printed
  bool says_sparse = false;  // the row carries the "with sparsity" footnote
};

struct Sheet {
  std::string gpu{};  // key or name in the table
  std::vector<Claim> rows{};
  double observed_sm_clock_mhz = 0;  // SM clock read during a run (0: not given)
  int reported_bus_width_bits = 0;   // what the driver says (0: not given)
  double reported_mem_clock_mhz = 0;
  std::string mig_profile{};  // e.g. "1g.18gb" (empty: no MIG claim)
  int mig_instances = 0;
  double mig_claimed_gib = 0;  // the GiB per instance the claim assumes (0: from the name)
};

// Every trap in `sheet` (throws std::invalid_argument naming 'gpu' for an unknown GPU and
// 'mig_profile' for a profile the GPU does not have). A clean sheet gives no trap.
std::vector<Trap> find_traps(const Sheet& sheet);
// The traps of one printed row against the calculator.
std::vector<Trap> check_claim(const GpuSpec& g, const Claim& c);

// ---- measured rows -----------------------------------------------------------------------------

// A row measured above 102% of its clock-adjusted peak is wrong, not fast: a FLOP counted twice,
// bytes read + written counted for a read, a buffer that fits in L2 timed as DRAM.
inline constexpr double kGuardRatio = 1.02;
struct GuardVerdict {
  bool ok = true;
  double ratio = 0;    // measured / peak
  std::string what{};  // empty when ok
};
// measured and peak in the same unit; peak must be > 0 (std::invalid_argument naming 'peak').
GuardVerdict guard(double measured, double peak);

// One row of this GPU's sheet (the rows the card prints beside its measurement).
struct SheetRow {
  Metric metric{};
  std::string name{}, unit{}, formula{};
  double clock_mhz = 0;  // the clock the formula assumes
  double dense = 0, sparse = 0;
  Published published{};
};
std::vector<SheetRow> sheet_rows(const GpuSpec& g);
// The whole table, or one GPU, as JSON (apps/sheet prints it; tools/gpu_card.py reads it).
std::string sheet_json(const GpuSpec& g);
std::string table_json();

}  // namespace cudalab::ch02
