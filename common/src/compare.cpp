#include "cudalab/compare.hpp"

#include <fmt/format.h>

#include <bit>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>

namespace cudalab {
namespace {

template <class T>
T load(const void* base, std::size_t i) {
  T v;
  std::memcpy(&v, static_cast<const unsigned char*>(base) + i * sizeof(T), sizeof(T));
  return v;
}

double half_bits_to_double(std::uint16_t h) {  // IEEE binary16
  const int sign = (h >> 15) & 1, exp = (h >> 10) & 0x1F, man = h & 0x3FF;
  double v;
  if (exp == 0)
    v = std::ldexp(man, -24);
  else if (exp == 31)
    v = man ? std::numeric_limits<double>::quiet_NaN() : std::numeric_limits<double>::infinity();
  else
    v = std::ldexp(man + 1024, exp - 25);
  return sign ? -v : v;
}

double bf16_bits_to_double(std::uint16_t b) {
  return std::bit_cast<float>(static_cast<std::uint32_t>(b) << 16);
}

std::size_t size_of(ElementKind k) {
  switch (k) {
    case ElementKind::kF64:
    case ElementKind::kI64:
    case ElementKind::kU64:
      return 8;
    case ElementKind::kF32:
    case ElementKind::kI32:
    case ElementKind::kU32:
      return 4;
    case ElementKind::kF16:
    case ElementKind::kBF16:
    case ElementKind::kI16:
    case ElementKind::kU16:
      return 2;
    default:
      return 1;
  }
}

double value_at(ElementKind k, const void* p, std::size_t i) {
  switch (k) {
    case ElementKind::kF64:
      return load<double>(p, i);
    case ElementKind::kF32:
      return load<float>(p, i);
    case ElementKind::kF16:
      return half_bits_to_double(load<std::uint16_t>(p, i));
    case ElementKind::kBF16:
      return bf16_bits_to_double(load<std::uint16_t>(p, i));
    case ElementKind::kI8:
      return load<std::int8_t>(p, i);
    case ElementKind::kU8:
      return load<std::uint8_t>(p, i);
    case ElementKind::kI16:
      return load<std::int16_t>(p, i);
    case ElementKind::kU16:
      return load<std::uint16_t>(p, i);
    case ElementKind::kI32:
      return load<std::int32_t>(p, i);
    case ElementKind::kU32:
      return load<std::uint32_t>(p, i);
    case ElementKind::kI64:
      return static_cast<double>(load<std::int64_t>(p, i));
    case ElementKind::kU64:
      return static_cast<double>(load<std::uint64_t>(p, i));
  }
  return 0;
}

bool poisoned_at(ElementKind k, const void* p, std::size_t i) {
  const auto* b = static_cast<const unsigned char*>(p) + i * size_of(k);
  for (std::size_t j = 0; j < size_of(k); ++j)
    if (b[j] != 0xFF) return false;
  return true;
}

bool is_integer(ElementKind k) {
  return k != ElementKind::kF64 && k != ElementKind::kF32 && k != ElementKind::kF16 &&
         k != ElementKind::kBF16;
}

std::string show(double v, bool integer) {
  if (std::isnan(v)) return "NaN";
  return integer ? fmt::format("{:.0f}", v) : fmt::format("{:.9g}", v);
}

}  // namespace

CompareResult compare_raw(ElementKind kind, const void* got, const void* want, std::size_t n,
                          Tolerance tol, std::string_view what) {
  CompareResult r;
  r.n = n;
  const bool integer = is_integer(kind);
  for (std::size_t i = 0; i < n; ++i) {
    const double g = value_at(kind, got, i), w = value_at(kind, want, i);
    const double err = std::fabs(g - w);
    const double rel =
        w != 0 ? err / std::fabs(w) : (err == 0 ? 0 : std::numeric_limits<double>::infinity());
    // NaN never passes, even against a NaN: the oracles never produce one.
    const bool bad = !(err <= tol.abs + tol.rel * std::fabs(w));
    if (!std::isnan(err)) {
      if (err > r.max_abs_error) {
        r.max_abs_error = err;
        r.max_abs_index = i;
      }
      if (rel > r.max_rel_error) r.max_rel_error = rel;
    }
    if (!bad) continue;
    const bool poison = poisoned_at(kind, got, i);
    if (r.mismatches == 0) {
      r.first_index = i;
      r.first_got = g;
      r.first_want = w;
      r.first_got_poison = poison;
    }
    ++r.mismatches;
    r.poisoned += poison ? 1 : 0;
  }
  if (r.ok()) return r;

  r.message =
      fmt::format("{}: {} of {} elements differ; tolerance |got - want| <= {:g} + {:g} * |want|\n",
                  what, r.mismatches, n, tol.abs, tol.rel);
  r.message +=
      fmt::format("  first mismatch at index {}: got {}{}, want {}\n", r.first_index,
                  show(r.first_got, integer), r.first_got_poison ? " (poison: never written)" : "",
                  show(r.first_want, integer));
  if (r.max_abs_error > 0)
    r.message += fmt::format("  max abs error {:.6g} at index {} (max rel error {:.3g})\n",
                             r.max_abs_error, r.max_abs_index, r.max_rel_error);
  if (r.poisoned > 0) {
    r.message += fmt::format(
        "  {} mismatches still hold the poison value (all bits set): those elements were never "
        "written{}\n",
        r.poisoned,
        r.poisoned == r.mismatches && r.first_index > 0
            ? fmt::format(
                  " — all at or after index {}: is the grid too small (n / block instead of "
                  "a ceil-div), or the index wrong past some size?",
                  r.first_index)
            : "");
  }
  if (r.poisoned < r.mismatches)
    r.message +=
        "  elements written with wrong values: check the index arithmetic and the formula\n";
  return r;
}

}  // namespace cudalab
