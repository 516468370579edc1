// Poisoned outputs and comparisons that tell a student where to look.
//
// Poison: every byte 0xFF before the kernel runs. For float/double/half that is a NaN no
// arithmetic produces (CUDA's computed NaN is 0x7FFFFFFF), for integers it is -1 / max. An element
// that still holds it after the kernel was almost certainly never written.
//
// compare() returns a result whose message reads, for example:
//   vector_add (n = 1000): 24 of 1000 elements differ; tolerance |got - want| <= 0 + 1e-06 * |want|
//     first mismatch at index 976: got NaN (poison: never written), want 1.37
//     24 mismatches still hold the poison value: those elements were never written
//     (is the grid too small, e.g. n / block instead of a ceil-div?)
#pragma once

#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace cudalab {

// |got - want| <= abs + rel * |want|. Integers compare exactly with the default.
struct Tolerance {
  double abs = 0.0;
  double rel = 0.0;
};

struct CompareResult {
  std::size_t n = 0;
  std::size_t mismatches = 0;
  std::size_t poisoned = 0;     // mismatching elements that still hold the poison pattern
  std::size_t first_index = 0;  // valid when mismatches > 0
  double first_got = 0, first_want = 0;
  bool first_got_poison = false;
  double max_abs_error = 0, max_rel_error = 0;
  std::size_t max_abs_index = 0;
  std::string message;  // empty when ok()
  bool ok() const noexcept { return mismatches == 0; }
};

// Element access as double for the supported types (float, double, integers, __half and
// __nv_bfloat16 via their 16-bit patterns: see compare.cpp).
enum class ElementKind { kF64, kF32, kF16, kBF16, kI8, kU8, kI16, kU16, kI32, kU32, kI64, kU64 };

CompareResult compare_raw(ElementKind kind, const void* got, const void* want, std::size_t n,
                          Tolerance tol, std::string_view what);

template <class T>
constexpr ElementKind element_kind();
template <>
constexpr ElementKind element_kind<double>() {
  return ElementKind::kF64;
}
template <>
constexpr ElementKind element_kind<float>() {
  return ElementKind::kF32;
}
template <>
constexpr ElementKind element_kind<__half>() {
  return ElementKind::kF16;
}
template <>
constexpr ElementKind element_kind<__nv_bfloat16>() {
  return ElementKind::kBF16;
}
template <>
constexpr ElementKind element_kind<std::int8_t>() {
  return ElementKind::kI8;
}
template <>
constexpr ElementKind element_kind<std::uint8_t>() {
  return ElementKind::kU8;
}
template <>
constexpr ElementKind element_kind<std::int16_t>() {
  return ElementKind::kI16;
}
template <>
constexpr ElementKind element_kind<std::uint16_t>() {
  return ElementKind::kU16;
}
template <>
constexpr ElementKind element_kind<std::int32_t>() {
  return ElementKind::kI32;
}
template <>
constexpr ElementKind element_kind<std::uint32_t>() {
  return ElementKind::kU32;
}
template <>
constexpr ElementKind element_kind<long>() {
  return ElementKind::kI64;
}
template <>
constexpr ElementKind element_kind<unsigned long>() {
  return ElementKind::kU64;
}
template <>
constexpr ElementKind element_kind<long long>() {
  return ElementKind::kI64;
}
template <>
constexpr ElementKind element_kind<unsigned long long>() {
  return ElementKind::kU64;
}

// `got` against `want` (same length, else the result says so). `what` names the operation and
// size for the message, e.g. "saxpy (n = 1000)".
template <class T>
CompareResult compare(std::span<const T> got, std::span<const T> want, Tolerance tol = {},
                      std::string_view what = "output") {
  if (got.size() != want.size()) {
    CompareResult r;
    r.n = want.size();
    r.mismatches = want.size() > got.size() ? want.size() - got.size() : got.size() - want.size();
    r.message = std::string(what) + ": got " + std::to_string(got.size()) + " elements, want " +
                std::to_string(want.size());
    return r;
  }
  return compare_raw(element_kind<T>(), got.data(), want.data(), want.size(), tol, what);
}
template <class T>
CompareResult compare(const std::vector<T>& got, const std::vector<T>& want, Tolerance tol = {},
                      std::string_view what = "output") {
  return compare(std::span<const T>(got), std::span<const T>(want), tol, what);
}

// The poison pattern (all bits set) for host buffers.
template <class T>
void poison(std::span<T> out) {
  if (!out.empty()) std::memset(static_cast<void*>(out.data()), 0xFF, out.size_bytes());
}
template <class T>
bool is_poison(const T& x) {
  const auto* b = reinterpret_cast<const unsigned char*>(&x);
  for (std::size_t i = 0; i < sizeof(T); ++i)
    if (b[i] != 0xFF) return false;
  return true;
}

// Counts elements in [from, to) that no longer hold the poison pattern: a kernel that writes past
// the end of its output is caught by a guard zone of poisoned elements behind it.
template <class T>
std::size_t count_overwritten(std::span<const T> v, std::size_t from, std::size_t to) {
  std::size_t k = 0;
  for (std::size_t i = from; i < to && i < v.size(); ++i) k += is_poison(v[i]) ? 0 : 1;
  return k;
}

}  // namespace cudalab
