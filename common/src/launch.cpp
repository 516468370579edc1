#include "cudalab/launch.hpp"

#include <map>
#include <mutex>
#include <tuple>

#include "cudalab/check.hpp"

namespace cudalab {

void set_kernel_attribute_once(const void* kernel, cudaFuncAttribute attribute, int value) {
  // Mirrors state the driver already holds per context; guarded because tests and benchmarks may
  // launch from several host threads.
  static std::mutex mutex;
  static std::map<std::tuple<const void*, int, int>, int> applied;
  int device = 0;
  CUDALAB_CHECK(cudaGetDevice(&device));
  const auto key = std::make_tuple(kernel, static_cast<int>(attribute), device);
  std::lock_guard<std::mutex> lock(mutex);
  if (auto it = applied.find(key); it != applied.end() && it->second == value) return;
  CUDALAB_CHECK(cudaFuncSetAttribute(kernel, attribute, value));
  applied[key] = value;
}

}  // namespace cudalab
