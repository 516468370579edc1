// The bug hunt's host side (no GPU): the comparison every case reports with, and the table of
// cases that apps/hunt.cpp and tools/sancheck.py name. The cases themselves run on the GPU under
// compute-sanitizer (tests/ch09/CMakeLists.txt: labels sanitizer and hunt).
#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <set>
#include <string>
#include <vector>

#include "ch09/hunt.hpp"

using namespace cudalab;

TEST(HuntMismatch, NamesTheFirstDifferingElement) {
  EXPECT_EQ(ch09::first_mismatch({1.0f, 2.0f, 3.0f}, {1.0f, 2.0f, 3.0f}), "");
  EXPECT_EQ(ch09::first_mismatch({1.0f, 2.5f, 4.0f}, {1.0f, 2.0f, 3.0f}), "i = 1: got 2.5, want 2");
  EXPECT_EQ(ch09::first_mismatch({1.0f, 2.25f}, {1.0f, 2.0f}, 0.5f), "");
  EXPECT_EQ(ch09::first_mismatch({1.0f}, {1.0f, 2.0f}), "size 1, want 2");
}

TEST(HuntMismatch, ANanNeverMatches) {
  const float nan = std::numeric_limits<float>::quiet_NaN();
  EXPECT_EQ(ch09::first_mismatch({nan}, {1.0f}, 1e30f), "i = 0: got nan, want 1");
}

TEST(HuntCases, TenCasesWithUniqueNames) {
  std::set<std::string> names;
  for (const auto& c : ch09::hunt_cases()) {
    EXPECT_NE(c.run, nullptr) << c.name;
    names.insert(c.name);
  }
  EXPECT_EQ(names.size(), 10u);
  EXPECT_EQ(ch09::hunt_cases().size(), 10u);
}
