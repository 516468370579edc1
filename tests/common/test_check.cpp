// libcudalab error checks: the message must let a student find the failing call and act on it.
#include <gtest/gtest.h>

#include <stdexcept>
#include <string>

#include "cudalab/check.hpp"
#include "cudalab/math.hpp"

using namespace cudalab;

TEST(Check, SuccessDoesNotThrow) {
  EXPECT_NO_THROW(CUDALAB_CHECK(cudaSuccess));
}

TEST(Check, ErrorCarriesExpressionPlaceNameAndHint) {
  try {
    CUDALAB_CHECK(cudaErrorInvalidConfiguration);
    FAIL() << "CUDALAB_CHECK did not throw";
  } catch (const CudaError& e) {
    const std::string msg = e.what();
    EXPECT_EQ(e.code(), cudaErrorInvalidConfiguration);
    EXPECT_NE(msg.find("cudaErrorInvalidConfiguration"), std::string::npos) << msg;
    EXPECT_NE(msg.find("invalid configuration argument"), std::string::npos) << msg;
    EXPECT_NE(msg.find("test_check.cpp:"), std::string::npos) << msg;
    EXPECT_NE(msg.find("cudaErrorInvalidConfiguration"), std::string::npos) << msg;
    EXPECT_NE(msg.find("hint: a block has at most 1024 threads"), std::string::npos) << msg;
    EXPECT_EQ(e.file(), "test_check.cpp");
    EXPECT_GT(e.line(), 0);
  }
}

TEST(Check, NoKernelImageHintSaysHowToRebuild) {
  EXPECT_NE(
      std::string(error_hint(cudaErrorNoKernelImageForDevice)).find("CMAKE_CUDA_ARCHITECTURES"),
      std::string::npos);
  EXPECT_TRUE(error_hint(cudaSuccess).empty());
}

TEST(Check, InvalidArgumentNamesTheArgument) {
  try {
    require(false, "threads_per_block", "must be in 1..1024");
    FAIL() << "require(false, ...) did not throw";
  } catch (const std::invalid_argument& e) {
    EXPECT_STREQ(e.what(), "invalid argument 'threads_per_block': must be in 1..1024");
  }
  EXPECT_NO_THROW(require(true, "x", "never shown"));
}

TEST(Check, NullDevicePointerIsRejectedOnlyWhenUsed) {
  EXPECT_THROW(require_device_pointer(nullptr, 5, "a"), std::invalid_argument);
  EXPECT_NO_THROW(require_device_pointer(nullptr, 0, "a"));  // n = 0: nothing will be read
  try {
    require_device_pointer(nullptr, 7, "out");
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find("'out'"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("7 elements"), std::string::npos) << e.what();
  }
}

TEST(Check, NotImplementedNamesTheExercise) {
  const NotImplemented e("Exercise 3.1: blocks_for");
  EXPECT_NE(std::string(e.what()).find("Exercise 3.1: blocks_for"), std::string::npos);
}

TEST(Math, CeilDivAndRoundUp) {
  EXPECT_EQ(ceil_div<std::size_t>(0, 256), 0u);
  EXPECT_EQ(ceil_div<std::size_t>(1, 256), 1u);
  EXPECT_EQ(ceil_div<std::size_t>(256, 256), 1u);
  EXPECT_EQ(ceil_div<std::size_t>(257, 256), 2u);
  EXPECT_EQ(ceil_div<std::size_t>((std::size_t{1} << 31) + 1, 256), (std::size_t{1} << 23) + 1);
  EXPECT_EQ(round_up(1000, 32), 1024);
  EXPECT_EQ(round_up(1024, 32), 1024);
}
