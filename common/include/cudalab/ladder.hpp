// A ladder's table of steps: one row a step, {variant, name, launcher}, the one list that a
// chapter's to_string and dispatch read (chapter 5's reduce.cu and scan.cu, chapter 6's
// sgemm.cpp). Each checks its table against the public list of variants of its header with
//   static_assert(cudalab::same_steps(kLadder, kAllXVariants), "...");
// and finds a variant's row with cudalab::find_step(kLadder, v) (nullptr: not a step).
#pragma once

#include <cstddef>

namespace cudalab {

// True when `rows` lists exactly `variants`, in the same order (rows[i].variant == variants[i]).
template <class Row, std::size_t N, class Variant, std::size_t M>
constexpr bool same_steps(const Row (&rows)[N], const Variant (&variants)[M]) {
  if (N != M) return false;
  for (std::size_t i = 0; i < N; ++i)
    if (rows[i].variant != variants[i]) return false;
  return true;
}

// The row of variant v, or nullptr when no row has it (an enum value cast from an integer).
template <class Row, std::size_t N, class Variant>
constexpr const Row* find_step(const Row (&rows)[N], Variant v) {
  for (const Row& r : rows)
    if (r.variant == v) return &r;
  return nullptr;
}

}  // namespace cudalab
