// Starter track — write your code at the TODO marks; the tests of each exercise
// fail until you do. (Generated from chapters/04_memory/reference/bank_model.cpp by scripts/variants.py.)
// Exercise 4.3 — a model of shared-memory bank conflicts (host code: runs on CI too).
//
// Shared memory is split into 32 banks; 4-byte word w lives in bank w % 32, and each bank serves
// one word per pass. A warp's access therefore takes as many passes as the busiest bank has
// DIFFERENT words to deliver. Lanes that read the very same word are served together (broadcast),
// so 32 lanes reading word 7 take one pass, while 32 lanes reading words 0, 32, 64, ... (a column
// of a [32][32] float tile) take 32. Padding each row to 33 words moves the column's words to
// banks l % 32 + c: one pass. The benchmark rows BM_smem_column/stride:32 and /stride:33 measure
// exactly this pair; the transpose rows "tiled" and "padded" show what it costs in a real kernel.
#include <algorithm>
#include <array>
#include <cstdint>
#include <vector>

#include "ch04/ch04.hpp"
#include "cudalab/check.hpp"

namespace cudalab::ch04 {

int bank_conflict_ways(std::span<const std::uint32_t> words) {
  require(words.size() <= 32, "words", "a warp has at most 32 lanes");
  // TODO(4.3): bank_conflict_ways(words).
  //   Contract: words[l] is the 4-byte word index lane l of one warp asks shared memory for (at
  //     most 32 lanes, any values, duplicates allowed). Return how many passes the access takes
  //     under the model at the top of this file: 0 for no lanes, 1 for any conflict-free access or
  //     broadcast, up to 32.
  //   Constraints: host code, standard library only; no assumption on the order or range of words.
  //   Goal: correctness only (CPU exercise; `scripts/lab check 4.3`), then compare with the
  //     BM_smem_column rows (counter model_conflict_ways).
  throw NotImplemented("Exercise 4.3: bank_conflict_ways (chapters/04_memory/starter/bank_model.cpp)");
}

int column_read_conflict_ways(int row_words) {
  require(row_words >= 1, "row_words", "must be at least 1");
  // Lane l reads tile[l][0]: word l * row_words.
  std::array<std::uint32_t, 32> words{};
  for (std::uint32_t l = 0; l < 32; ++l) words[l] = l * static_cast<std::uint32_t>(row_words);
  return bank_conflict_ways(words);
}

}  // namespace cudalab::ch04
