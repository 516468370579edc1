#include "cudalab/random.hpp"

#include <fmt/format.h>

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <stdexcept>
#include <string>

namespace cudalab {

std::uint64_t seed_from_env() {
  if (const char* s = std::getenv("CUDALAB_SEED"); s != nullptr && *s != '\0') {
    char* end = nullptr;
    const unsigned long long v = std::strtoull(s, &end, 10);
    if (end == s || *end != '\0')
      throw std::invalid_argument(
          fmt::format("CUDALAB_SEED='{}' is not a non-negative integer", s));
    return v;
  }
  std::random_device rd;
  return (static_cast<std::uint64_t>(rd()) << 32) ^ rd();
}

Rng::Rng() : Rng(seed_from_env(), true) {}

Rng::Rng(std::uint64_t seed, bool print) : seed_(seed), engine_(seed) {
  if (print)
    std::fprintf(stderr, "[cudalab] seed %llu (rerun with CUDALAB_SEED=%llu to reproduce)\n",
                 static_cast<unsigned long long>(seed), static_cast<unsigned long long>(seed));
}

}  // namespace cudalab
