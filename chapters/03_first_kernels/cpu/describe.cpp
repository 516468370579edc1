// Host-side text for exercise 3.7's report (fmt lives in .cpp files: docs/toolchain.md, trap 1).
#include <fmt/format.h>

#include "ch03/ch03.hpp"

namespace cudalab::ch03 {

std::string describe(const KernelInfo& k) {
  return fmt::format(
      "registers/thread {:3d} | PTX compute_{} -> SASS sm_{} | max threads/block {:4d} | "
      "local {} B/thread | shared {} B/block | const {} B",
      k.num_regs, k.ptx_version, k.binary_version, k.max_threads_per_block, k.local_bytes,
      k.shared_bytes, k.const_bytes);
}

}  // namespace cudalab::ch03
