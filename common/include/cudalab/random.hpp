// Seeded random inputs. The seed is printed once per Rng, and CUDALAB_SEED=<n> reproduces a run:
//   [cudalab] seed 1234567 (rerun with CUDALAB_SEED=1234567 to reproduce)
// Tests draw fresh inputs every run (never zeros: zeros hide unwritten outputs).
#pragma once

#include <cstdint>
#include <random>
#include <span>
#include <type_traits>
#include <vector>

namespace cudalab {

// The seed: CUDALAB_SEED when set (an error if it is not a number), else a fresh random one.
std::uint64_t seed_from_env();

class Rng {
 public:
  Rng();  // seed_from_env(), printed to stderr
  explicit Rng(std::uint64_t seed, bool print = false);
  std::uint64_t seed() const noexcept { return seed_; }
  std::mt19937_64& engine() noexcept { return engine_; }

  template <class T>
  void fill_uniform(std::span<T> out, T lo, T hi) {
    if constexpr (std::is_floating_point_v<T>) {
      std::uniform_real_distribution<T> d(lo, hi);
      for (auto& x : out) x = d(engine_);
    } else {
      using Wide = std::conditional_t<std::is_signed_v<T>, long long, unsigned long long>;
      std::uniform_int_distribution<Wide> d(static_cast<Wide>(lo), static_cast<Wide>(hi));
      for (auto& x : out) x = static_cast<T>(d(engine_));
    }
  }
  template <class T>
  std::vector<T> uniform(std::size_t n, T lo, T hi) {
    std::vector<T> v(n);
    fill_uniform<T>(v, lo, hi);
    return v;
  }
  template <class T>
  T scalar(T lo, T hi) {
    T x{};
    fill_uniform<T>(std::span<T>(&x, 1), lo, hi);
    return x;
  }

 private:
  std::uint64_t seed_;
  std::mt19937_64 engine_;
};

}  // namespace cudalab
