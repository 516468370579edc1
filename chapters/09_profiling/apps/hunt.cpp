// ch09_hunt CASE: runs one case of the bug hunt (include/ch09/hunt.hpp) and says whether its answer
// was right. Built per track: ch09_hunt (reference: every case fixed) and ch09_hunt_starter (the
// learner's). tools/sancheck.py runs it under compute-sanitizer for ctest.
//
//   ch09_hunt --list        the case names
//   ch09_hunt --probe       "skipped: <reason>" without a GPU, else "gpu: available"
//   ch09_hunt CASE          exit 0: right answer; 1: wrong answer; 3: a CUDA error; 2: usage
// Without a GPU it prints "skipped: <reason>" and exits 0 (the ctest skip pattern).
#include "ch09/hunt.hpp"

#include <cstdio>
#include <exception>
#include <string_view>

#include "cudalab/device.hpp"

int main(int argc, char** argv) {
  using namespace cudalab;
  const auto cases = ch09::hunt_cases();
  if (argc != 2) {
    std::fprintf(stderr, "usage: %s CASE | --list | --probe\n", argv[0]);
    return 2;
  }
  const std::string_view want = argv[1];
  if (want == "--list") {
    for (const auto& c : cases) std::printf("%s\n", c.name);
    return 0;
  }
  if (want == "--probe") {
    if (has_gpu())
      std::printf("gpu: available\n");
    else
      std::printf("skipped: %s\n", no_gpu_reason().c_str());
    return 0;
  }
  const ch09::HuntCase* found = nullptr;
  for (const auto& c : cases)
    if (want == c.name) found = &c;
  if (!found) {
    std::fprintf(stderr, "%s: unknown case '%s' (--list names them)\n", argv[0], argv[1]);
    return 2;
  }
  if (!has_gpu()) {
    std::printf("skipped: %s\n", no_gpu_reason().c_str());
    return 0;
  }
  try {
    const ch09::HuntResult r = found->run();
    std::printf("case %s: %s: %s\n", found->name, r.correct ? "right answer" : "WRONG ANSWER",
                r.detail.c_str());
    return r.correct ? 0 : 1;
  } catch (const std::exception& e) {
    std::printf("case %s: error: %s\n", found->name, e.what());
    return 3;
  }
}
