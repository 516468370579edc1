// Kernel attributes that must be set before a launch (more than 48 KB of dynamic shared memory,
// a shared-memory carveout). The attribute lives in the driver for the life of the context, so it
// is set once per (kernel, attribute, device) and remembered: setting it before every launch would
// put a driver call inside every timed region.
#pragma once

#include <cuda_runtime_api.h>

namespace cudalab {

void set_kernel_attribute_once(const void* kernel, cudaFuncAttribute attribute, int value);

template <class... Args>
void set_kernel_attribute_once(void (*kernel)(Args...), cudaFuncAttribute attribute, int value) {
  set_kernel_attribute_once(reinterpret_cast<const void*>(kernel), attribute, value);
}

}  // namespace cudalab
