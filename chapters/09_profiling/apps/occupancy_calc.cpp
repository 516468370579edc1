// ch09_occupancy_calc CC THREADS REGS SMEM_BYTES: chapter 5's occupancy calculator (exercise 5.8,
// the reference's) on one launch configuration, as one JSON line. tools/ncu_check.py compares it
// with what ncu reads on the same kernel (registers per thread from ncu, the theoretical and the
// achieved occupancy): the fingerprint of a register-limited kernel.
#include <cstdio>
#include <cstdlib>
#include <exception>
#include <string>

#include "ch05/occupancy.hpp"

int main(int argc, char** argv) {
  if (argc != 5) {
    std::fprintf(stderr, "usage: %s CC THREADS REGS SMEM_BYTES   (e.g. 90 256 152 0)\n", argv[0]);
    return 2;
  }
  try {
    const int cc = std::stoi(argv[1]), threads = std::stoi(argv[2]), regs = std::stoi(argv[3]);
    const auto smem = static_cast<std::size_t>(std::stoull(argv[4]));
    const auto o = cudalab::ch05::occupancy(cudalab::ch05::arch_limits(cc), threads, regs, smem);
    std::printf(
        "{\"blocks_per_sm\": %d, \"warps_per_sm\": %d, \"occupancy\": %.6f, \"limiter\": \"%s\"}\n",
        o.blocks_per_sm, o.warps_per_sm, o.occupancy, cudalab::ch05::to_string(o.limiter));
    return 0;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "%s: %s\n", argv[0], e.what());
    return 2;
  }
}
