// Restores the current device on scope exit, also when an exception leaves the scope: a function
// that switches devices (one rank per GPU) leaves its caller's device as it found it.
#pragma once

#include <cuda_runtime_api.h>

#include "cudalab/check.hpp"

namespace cudalab {

class DeviceGuard {
 public:
  DeviceGuard() { CUDALAB_CHECK(cudaGetDevice(&device_)); }
  ~DeviceGuard() { (void)cudaSetDevice(device_); }  // a destructor must not throw
  DeviceGuard(const DeviceGuard&) = delete;
  DeviceGuard& operator=(const DeviceGuard&) = delete;
  int device() const noexcept { return device_; }  // the device found at construction

 private:
  int device_ = 0;
};

}  // namespace cudalab
