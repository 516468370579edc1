// Exercise 3.6 — launch errors and execution faults must reach the caller as cudalab::CudaError.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "ch03/ch03.hpp"
#include "cudalab/testing.hpp"

using namespace cudalab;

TEST(ErrorsGpu, ValidFillWritesEveryElement) {
  CUDALAB_REQUIRE_GPU();
  cudalab::testing::GuardedOutput<float> out(1000);
  ch03::fill(out.data(), 1000, 2.5f, 128);
  CUDALAB_CHECK(cudaDeviceSynchronize());
  EXPECT_MATCHES(compare(out.result(), std::vector<float>(1000, 2.5f), {}, "fill (n = 1000)"));
}

// Suites named *FaultGpu provoke CUDA errors on purpose (the compute-sanitizer pass skips them).
TEST(ErrorsFaultGpu, InvalidConfigurationIsReported) {
  CUDALAB_REQUIRE_GPU();
  DeviceBuffer<float> out(4096);
  for (const unsigned threads : {2048u, 0u}) {
    try {
      ch03::fill(out.data(), out.size(), 1.0f, threads);
      ADD_FAILURE() << "fill with " << threads
                    << " threads per block returned normally: the launch error was never read "
                       "(exercise 3.6: check every launch)";
    } catch (const CudaError& e) {
      // Which code the driver picks for a bad block size varies: CUDA 13 on an H200 says
      // cudaErrorInvalidValue, older drivers cudaErrorInvalidConfiguration. Either is a report.
      EXPECT_TRUE(e.code() == cudaErrorInvalidConfiguration || e.code() == cudaErrorInvalidValue)
          << e.what();
    }
    // The launch error is not sticky: once read, the context works again.
    EXPECT_EQ(cudaGetLastError(), cudaSuccess);
    EXPECT_EQ(cudaDeviceSynchronize(), cudaSuccess);
  }
}

// This test faults the GPU on purpose.
TEST(ErrorsFaultGpu, FaultIsReportedAndSticky) {
  CUDALAB_REQUIRE_GPU();
  bool reported = false;
  try {
    ch03::launch_faulty_kernel();
  } catch (const CudaError& e) {
    reported = true;
    EXPECT_EQ(e.code(), cudaErrorIllegalAddress) << e.what();
  }
  EXPECT_TRUE(reported)
      << "launch_faulty_kernel returned normally: the fault happens after the launch, "
         "so the function must synchronize and check (exercise 3.6)";
  // Sticky: the context is dead; even an unrelated allocation now fails with the same error.
  void* p = nullptr;
  EXPECT_EQ(cudaMalloc(&p, 16), cudaErrorIllegalAddress);
}
