// The spec-sheet calculator: peaks from counted things, the traps of a printed sheet, the 102%
// guard of measured rows, and the sheet as JSON. Host code only (CI tests every line of it).
#include "ch02/spec.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstdlib>
#include <stdexcept>
#include <string>

namespace cudalab::ch02 {
namespace {

constexpr std::array<std::string_view, kMetrics> kNames = {
    "fp64", "fp32", "fp64_tensor", "tf32", "fp16", "bf16", "fp8", "int8", "dram"};

bool iequal(std::string_view a, std::string_view b) {
  return a.size() == b.size() && std::equal(a.begin(), a.end(), b.begin(), [](char x, char y) {
           return std::tolower(static_cast<unsigned char>(x)) ==
                  std::tolower(static_cast<unsigned char>(y));
         });
}

// Within 1%: the tolerance of "this printed figure is that formula" (sheets round to 3-4 digits).
bool near(double value, double formula_value) {
  return formula_value > 0 && std::abs(value - formula_value) <= 0.01 * formula_value;
}

std::string json_escape(std::string_view s) {
  std::string out;
  for (const char c : s) {
    if (c == '"' || c == '\\') {
      out += '\\';
      out += c;
    } else if (static_cast<unsigned char>(c) < 0x20) {
      out += fmt::format("\\u{:04x}", static_cast<unsigned>(c));
    } else {
      out += c;
    }
  }
  return out;
}

// Tensor rows of low precision run at the tensor clock; FP64 tensor at the CUDA-core clock (the
// Hopper sheet: 132 x 256 x 1.98 GHz = 66.9 TFLOP/s; at 1.83 GHz it would print 61.8).
bool uses_tensor_clock(Metric m) {
  return is_tensor(m) && m != Metric::fp64_tensor;
}

}  // namespace

std::string_view metric_name(Metric m) {
  return kNames.at(index(m));
}

std::optional<Metric> metric_from_name(std::string_view name) {
  for (const Metric m : kAllMetrics)
    if (iequal(metric_name(m), name)) return m;
  return std::nullopt;
}

std::string_view metric_unit(Metric m) {
  if (m == Metric::dram) return "GB/s";
  return m == Metric::int8 ? "TOP/s" : "TFLOP/s";
}

bool is_tensor(Metric m) {
  return m != Metric::fp64 && m != Metric::fp32 && m != Metric::dram;
}

const GpuSpec* find_gpu(std::string_view key_or_name) {
  for (const GpuSpec& g : gpu_table())
    if (iequal(g.key, key_or_name) || iequal(g.name, key_or_name)) return &g;
  return nullptr;
}

std::string known_gpus() {
  std::string s;
  for (const GpuSpec& g : gpu_table()) s += (s.empty() ? "" : ", ") + std::string(g.key);
  return s;
}

double sheet_clock_mhz(const GpuSpec& g, Metric m) {
  if (m == Metric::dram) return g.mem_clock_mhz;
  return uses_tensor_clock(m) ? g.tensor_clock_mhz : g.core_clock_mhz;
}

double per_clock_per_sm(const GpuSpec& g, Metric m) {
  switch (m) {
    case Metric::fp64:
      return 2.0 * g.fp64_lanes_per_sm;  // one FMA = 2 FLOP per lane per clock
    case Metric::fp32:
      return 2.0 * g.fp32_lanes_per_sm;
    case Metric::dram:
      return 0;
    default:
      return g.tensor_per_clk_sm[index(m)];
  }
}

double dram_gbps(int bus_width_bits, double mem_clock_mhz) {
  return 2.0 * mem_clock_mhz * 1e6 * bus_width_bits / 8.0 / 1e9;
}

double peak_at_clock(const GpuSpec& g, Metric m, double clock_mhz) {
  if (m == Metric::dram) return dram_gbps(g.bus_width_bits, clock_mhz);
  return g.sms * per_clock_per_sm(g, m) * clock_mhz * 1e6 / 1e12;
}

double sheet_dense(const GpuSpec& g, Metric m) {
  return peak_at_clock(g, m, sheet_clock_mhz(g, m));
}

double sheet_sparse(const GpuSpec& g, Metric m) {
  return g.sparse_tensor && is_tensor(m) && m != Metric::fp64_tensor ? 2.0 * sheet_dense(g, m)
                                                                     : 0.0;
}

double smem_peak_gbps(const GpuSpec& g, double clock_mhz) {
  return g.sms * 32.0 * 4.0 * clock_mhz * 1e6 / 1e9;
}

std::string formula(const GpuSpec& g, Metric m) {
  if (m == Metric::dram)
    return fmt::format("2 x {:g} MHz x {} bit / 8", g.mem_clock_mhz, g.bus_width_bits);
  const std::string clock = fmt::format(
      "{:.0f} MHz{}", sheet_clock_mhz(g, m),
      uses_tensor_clock(m) && g.tensor_clock_implied ? " (implied by the published figure)" : "");
  if (m == Metric::fp64 || m == Metric::fp32) {
    const int lanes = m == Metric::fp32 ? g.fp32_lanes_per_sm : g.fp64_lanes_per_sm;
    return fmt::format("{} SM x {} lanes x 2 FLOP/FMA x {}", g.sms, lanes, clock);
  }
  return fmt::format("{} SM x {:g} {}/clk/SM x {}", g.sms, per_clock_per_sm(g, m),
                     m == Metric::int8 ? "OP" : "FLOP", clock);
}

std::string_view trap_name(TrapKind k) {
  switch (k) {
    case TrapKind::sparsity:
      return "sparsity";
    case TrapKind::boost_clock:
      return "boost_clock";
    case TrapKind::sustained_clock:
      return "sustained_clock";
    case TrapKind::dual_issue_fp32:
      return "dual_issue_fp32";
    case TrapKind::bus_width:
      return "bus_width";
    case TrapKind::mig:
      return "mig";
    case TrapKind::unexplained:
      return "unexplained";
  }
  return "?";
}

std::vector<Trap> check_claim(const GpuSpec& g, const Claim& c) {
  std::vector<Trap> traps;
  const Metric m = c.metric;
  const std::string_view unit = metric_unit(m);
  auto add = [&](TrapKind k, double honest, std::string what) {
    traps.push_back({k, m, c.value, honest, std::move(what)});
  };
  if (m == Metric::dram) {
    const double real = dram_gbps(g.bus_width_bits, g.mem_clock_mhz);
    if (near(c.value, real)) return traps;
    const double reported = dram_gbps(g.reported_bus_width_bits, g.mem_clock_mhz);
    if (g.reported_bus_width_bits != g.bus_width_bits && near(c.value, reported)) {
      add(TrapKind::bus_width, real,
          fmt::format("{} GB/s comes from a {}-bit bus as the driver reported it; the bus is "
                      "{} bit: 2 x {:g} MHz x {} / 8 = {:.0f} GB/s",
                      c.value, g.reported_bus_width_bits, g.bus_width_bits, g.mem_clock_mhz,
                      g.bus_width_bits, real));
    } else {
      add(TrapKind::unexplained, real,
          fmt::format("{} GB/s matches no formula for the {} ({:.0f} GB/s)", c.value, g.key, real));
    }
    return traps;
  }
  const double dense = sheet_dense(g, m), sparse = sheet_sparse(g, m);
  if (dense <= 0) {
    add(TrapKind::unexplained, 0,
        fmt::format("the {} has no {} row (no such unit, or no published clock)", g.key,
                    metric_name(m)));
    return traps;
  }
  if (near(c.value, dense)) {
    if (m == Metric::fp32 && g.fp32_dual_issue)
      add(TrapKind::dual_issue_fp32, dense / 2,
          fmt::format("{} {} counts {} FP32 lanes per SM, but half of them share their issue "
                      "slot with INT32: a loop with one integer instruction per FMA (an index, a "
                      "compare) reaches {:.1f} {}",
                      c.value, unit, g.fp32_lanes_per_sm, dense / 2, unit));
    return traps;
  }
  if (near(c.value, sparse)) {
    add(TrapKind::sparsity, dense,
        fmt::format("{} {} is the 2:4 \"with sparsity\" figure{}: dense matrices get {:.1f} {} "
                    "(half), and real 2:4 models gain far less than 2x end to end",
                    c.value, unit, c.says_sparse ? "" : " printed without its footnote", dense,
                    unit));
    return traps;
  }
  const double at_core = peak_at_clock(g, m, g.core_clock_mhz);
  if (uses_tensor_clock(m) && g.core_clock_mhz > g.tensor_clock_mhz &&
      (near(c.value, at_core) || near(c.value, 2 * at_core))) {
    const bool sparse_too = near(c.value, 2 * at_core) && g.sparse_tensor;
    add(TrapKind::boost_clock, dense,
        fmt::format("{} {} assumes the {:.0f} MHz boost clock of the CUDA-core rows; the tensor "
                    "rows of the {} run at {:.0f} MHz: {}",
                    c.value, unit, g.core_clock_mhz, g.key, g.tensor_clock_mhz, formula(g, m)));
    if (sparse_too)
      add(TrapKind::sparsity, dense,
          fmt::format("{} {} is also a \"with sparsity\" figure: dense is {:.1f} {}", c.value, unit,
                      dense, unit));
    return traps;
  }
  add(TrapKind::unexplained, dense,
      fmt::format("{} {} matches no formula for the {} {} row (dense {:.1f}{})", c.value, unit,
                  g.key, metric_name(m), dense,
                  sparse > 0 ? fmt::format(", with sparsity {:.1f}", sparse) : std::string()));
  return traps;
}

std::vector<Trap> find_traps(const Sheet& sheet) {
  const GpuSpec* g = find_gpu(sheet.gpu);
  if (g == nullptr)
    throw std::invalid_argument(
        fmt::format("'gpu': unknown GPU '{}' (known: {})", sheet.gpu, known_gpus()));
  std::vector<Trap> traps;
  for (const Claim& c : sheet.rows) {
    const std::vector<Trap> t = check_claim(*g, c);
    traps.insert(traps.end(), t.begin(), t.end());
  }
  if (sheet.observed_sm_clock_mhz < 0)
    throw std::invalid_argument("'observed_sm_clock_mhz': must be >= 0 (0: not given)");
  if (sheet.observed_sm_clock_mhz > 0) {
    for (const Claim& c : sheet.rows) {
      if (c.metric == Metric::dram) continue;
      const double assumed = sheet_clock_mhz(*g, c.metric);
      if (assumed <= 0 || sheet.observed_sm_clock_mhz >= 0.98 * assumed) continue;
      const double honest = peak_at_clock(*g, c.metric, sheet.observed_sm_clock_mhz);
      traps.push_back(
          {TrapKind::sustained_clock, c.metric, sheet_dense(*g, c.metric), honest,
           fmt::format("the {} row assumes {:.0f} MHz; the GPU sustained {:.0f} MHz "
                       "during the run, so its ceiling there is {:.1f} {} ({:.0f}%)",
                       metric_name(c.metric), assumed, sheet.observed_sm_clock_mhz, honest,
                       metric_unit(c.metric), 100 * sheet.observed_sm_clock_mhz / assumed)});
    }
  }
  if (sheet.reported_bus_width_bits != 0 && sheet.reported_bus_width_bits != g->bus_width_bits) {
    if (sheet.reported_bus_width_bits < 0)
      throw std::invalid_argument("'reported_bus_width_bits': must be >= 0 (0: not given)");
    const double clock =
        sheet.reported_mem_clock_mhz > 0 ? sheet.reported_mem_clock_mhz : g->mem_clock_mhz;
    const double claimed = dram_gbps(sheet.reported_bus_width_bits, clock);
    const double honest = dram_gbps(g->bus_width_bits, clock);
    traps.push_back({TrapKind::bus_width, Metric::dram, claimed, honest,
                     fmt::format("the driver reports a {}-bit bus ({:.0f} GB/s at {:g} MHz); the "
                                 "{} is built with {} bit: {:.0f} GB/s",
                                 sheet.reported_bus_width_bits, claimed, clock, g->key,
                                 g->bus_width_bits, honest)});
  }
  if (!sheet.mig_profile.empty()) {
    const auto it = std::find_if(g->mig.begin(), g->mig.end(), [&](const MigProfile& p) {
      return iequal(p.name, sheet.mig_profile);
    });
    if (it == g->mig.end())
      throw std::invalid_argument(fmt::format("'mig_profile': the {} has no MIG profile '{}'{}",
                                              g->key, sheet.mig_profile,
                                              g->mig.empty() ? " (none in the table)" : ""));
    const int n = sheet.mig_instances > 0 ? sheet.mig_instances : it->max_instances;
    if (n > it->max_instances)
      throw std::invalid_argument(
          fmt::format("'mig_instances': {} x {} is more than the {} "
                      "instances the {} allows",
                      n, it->name, it->max_instances, g->key));
    // The profile's name rounds the memory up to decimal GB: "18gb" for 16.00 GiB.
    double named_gb = 0;
    const std::string_view nm = it->name;
    const auto dot = nm.find('.');
    if (dot != std::string_view::npos)
      named_gb = std::atof(std::string(nm.substr(dot + 1)).c_str());
    const double claimed_gib = sheet.mig_claimed_gib > 0 ? sheet.mig_claimed_gib : named_gb;
    const int used = n * it->sms;
    traps.push_back(
        {TrapKind::mig, Metric::fp32, claimed_gib, it->memory_gib,
         fmt::format("{} x {} use {} of the {}'s {} SMs ({:.0f}%: {} SMs idle), and each "
                     "instance gets {:.2f} GiB, not {:g}: per instance {} SMs = {:.1f}% of the "
                     "GPU's compute, not 1/{}",
                     n, it->name, used, g->key, g->sms, 100.0 * used / g->sms, g->sms - used,
                     it->memory_gib, claimed_gib, it->sms, 100.0 * it->sms / g->sms, n)});
  }
  return traps;
}

GuardVerdict guard(double measured, double peak) {
  if (!(peak > 0)) throw std::invalid_argument(fmt::format("'peak': must be > 0, got {}", peak));
  GuardVerdict v;
  v.ratio = measured / peak;
  if (!std::isfinite(measured) || measured < 0) {
    v.ok = false;
    v.what = fmt::format("measured value {} is not a rate", measured);
  } else if (v.ratio > kGuardRatio) {
    v.ok = false;
    v.what = fmt::format(
        "measured {:.4g} is {:.1f}% of the clock-adjusted peak {:.4g}: above {:.0f}% a row is "
        "wrong, not fast (FLOPs or bytes counted twice, a cache-resident buffer timed as DRAM, "
        "the wrong clock)",
        measured, 100 * v.ratio, peak, 100 * kGuardRatio);
  }
  return v;
}

std::vector<SheetRow> sheet_rows(const GpuSpec& g) {
  std::vector<SheetRow> rows;
  for (const Metric m : kAllMetrics) {
    const double dense = sheet_dense(g, m);
    if (dense <= 0) continue;  // no such unit, or no published clock (B200's CUDA-core rows)
    rows.push_back({m, std::string(metric_name(m)), std::string(metric_unit(m)), formula(g, m),
                    sheet_clock_mhz(g, m), dense, sheet_sparse(g, m), g.published[index(m)]});
  }
  return rows;
}

std::string sheet_json(const GpuSpec& g) {
  std::string s = fmt::format(
      "{{\"key\": \"{}\", \"name\": \"{}\", \"arch\": \"{}\", \"cc\": {}, \"sms\": {}, "
      "\"fp32_lanes_per_sm\": {}, \"fp32_dual_issue\": {}, \"fp64_lanes_per_sm\": {}, "
      "\"core_clock_MHz\": {}, \"tensor_clock_MHz\": {}, \"tensor_clock_implied\": {}, "
      "\"bus_width_bits\": {}, \"reported_bus_width_bits\": {}, \"mem_clock_MHz\": {}, "
      "\"memory_GiB\": {}, \"l2_MB\": {}, \"source\": \"{}\", "
      "\"smem\": {{\"formula\": \"{} SM x 32 banks x 4 B x {:.0f} MHz\", \"clock_MHz\": {}, "
      "\"GBps\": {:.6g}}}, \"rows\": [",
      json_escape(g.key), json_escape(g.name), json_escape(g.arch), g.cc, g.sms,
      g.fp32_lanes_per_sm, g.fp32_dual_issue, g.fp64_lanes_per_sm, g.core_clock_mhz,
      g.tensor_clock_mhz, g.tensor_clock_implied, g.bus_width_bits, g.reported_bus_width_bits,
      g.mem_clock_mhz, g.memory_gib, g.l2_mb, json_escape(g.source), g.sms, g.core_clock_mhz,
      g.core_clock_mhz, smem_peak_gbps(g, g.core_clock_mhz));
  bool first = true;
  for (const SheetRow& r : sheet_rows(g)) {
    s += fmt::format(
        "{}{{\"metric\": \"{}\", \"unit\": \"{}\", \"formula\": \"{}\", \"clock_MHz\": {:.1f}, "
        "\"per_clk_per_sm\": {}, \"dense\": {:.6g}, \"sparse\": {:.6g}, "
        "\"published_dense\": {}, \"published_sparse\": {}}}",
        first ? "" : ", ", r.name, r.unit, json_escape(r.formula), r.clock_mhz,
        per_clock_per_sm(g, r.metric), r.dense, r.sparse, r.published.dense, r.published.sparse);
    first = false;
  }
  s += "], \"mig\": [";
  first = true;
  for (const MigProfile& p : g.mig) {
    s += fmt::format(
        "{}{{\"profile\": \"{}\", \"max_instances\": {}, \"sms\": {}, "
        "\"memory_GiB\": {}}}",
        first ? "" : ", ", p.name, p.max_instances, p.sms, p.memory_gib);
    first = false;
  }
  return s + "]}";
}

std::string table_json() {
  std::string s = "{\"gpus\": [";
  bool first = true;
  for (const GpuSpec& g : gpu_table()) {
    s += (first ? "" : ",\n") + sheet_json(g);
    first = false;
  }
  return s + "]}\n";
}

}  // namespace cudalab::ch02
