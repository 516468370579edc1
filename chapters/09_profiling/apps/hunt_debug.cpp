// ch09_hunt_debug: the bug hunt's graph case, as broken in the committed starter, built with -G
// (device debug information, no optimization) for the cuda-gdb session of tools/cuda_gdb_check.sh:
// the captured kernel writes through a pointer that was null at capture time, and the debugger
// stops on that store with the block, the thread, the line and the address.
#include <cstdio>
#include <exception>

#include "ch09/hunt.hpp"

int main() {
  try {
    const cudalab::ch09::HuntResult r = cudalab::ch09::hunt_graph_replay();
    std::printf("graph_replay: %s: %s\n", r.correct ? "right answer" : "WRONG ANSWER",
                r.detail.c_str());
    return r.correct ? 0 : 1;
  } catch (const std::exception& e) {
    std::printf("graph_replay: error: %s\n", e.what());
    return 3;
  }
}
