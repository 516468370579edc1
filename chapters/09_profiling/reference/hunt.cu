// The bug hunt's table of cases (include/ch09/hunt.hpp); each case is in its own hunt_NN_*.cu.
#include <array>

#include "ch09/hunt.hpp"

namespace cudalab::ch09 {

std::span<const HuntCase> hunt_cases() {
  static constexpr std::array<HuntCase, 10> kCases{{
      {"shift", hunt_shift},
      {"column_sums", hunt_column_sums},
      {"neighbor_diff", hunt_neighbor_diff},
      {"block_lead", hunt_block_lead},
      {"accumulate", hunt_accumulate},
      {"normalize", hunt_normalize},
      {"quad_sums", hunt_quad_sums},
      {"two_stage", hunt_two_stage},
      {"readback", hunt_readback},
      {"graph_replay", hunt_graph_replay},
  }};
  return kCases;
}

}  // namespace cudalab::ch09
