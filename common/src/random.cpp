#include "cudalab/random.hpp"

#include <fmt/format.h>

#include <cerrno>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <stdexcept>
#include <string>

namespace cudalab {

std::uint64_t seed_from_env() {
  if (const char* s = std::getenv("CUDALAB_SEED"); s != nullptr && *s != '\0') {
    // strtoull alone takes "-1" as 2^64 - 1 and saturates past 2^64 - 1 (ERANGE): only digits,
    // and a value that fits, are a seed.
    if (*s < '0' || *s > '9')
      throw std::invalid_argument(fmt::format(
          "CUDALAB_SEED='{}' is not a seed: a decimal integer from 0 to {}", s, UINT64_MAX));
    errno = 0;
    char* end = nullptr;
    const unsigned long long v = std::strtoull(s, &end, 10);
    if (*end != '\0' || errno == ERANGE)
      throw std::invalid_argument(fmt::format(
          "CUDALAB_SEED='{}' is not a seed: a decimal integer from 0 to {}", s, UINT64_MAX));
    return static_cast<std::uint64_t>(v);
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
