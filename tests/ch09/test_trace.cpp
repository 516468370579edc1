// The Chrome-trace writer of the CUPTI timeline (cpu/trace_json.cpp), on synthetic records: no GPU.
// (The overlap finder that reads these files is tools/trace_check.py, tested by
// scripts/test_ch09_tools.py; the recorder itself runs in the GPU test reference.ch09.trace.*.)
#include <gtest/gtest.h>

#include <stdexcept>
#include <string>
#include <vector>

#include "ch09/trace.hpp"

using namespace cudalab;
using Kind = ch09::TraceEvent::Kind;

TEST(TraceJson, OneCompleteEventPerRecordFromTheEarliestStart) {
  const std::vector<ch09::TraceEvent> ev = {
      {Kind::kMemcpy, "memcpy HtoD", 2'000'500, 3'000'500, 0, 13, 4096},
      {Kind::kKernel, "void process<(int)4>(float const*, float*)", 2'500'000, 2'600'250, 0, 14, 0},
      {Kind::kRange, "ch07 chunked pipeline", 1'000'000, 1'200'000, 0, 77, 0},
  };
  const std::string j = ch09::chrome_trace_json(ev);
  EXPECT_NE(j.find("{\"name\": \"memcpy HtoD\", \"cat\": \"memcpy\", \"ph\": \"X\", \"ts\": "
                   "1000.500, \"dur\": 1000.000, "
                   "\"pid\": 0, \"tid\": 13, \"args\": {\"bytes\": 4096}}"),
            std::string::npos)
      << j;
  EXPECT_NE(j.find("\"cat\": \"kernel\", \"ph\": \"X\", \"ts\": 1500.000, \"dur\": 100.250, "
                   "\"pid\": 0, \"tid\": 14}"),
            std::string::npos)
      << j;
  EXPECT_NE(
      j.find(
          "\"name\": \"ch07 chunked pipeline\", \"cat\": \"nvtx\", \"ph\": \"X\", \"ts\": 0.000"),
      std::string::npos)
      << j;
  EXPECT_NE(j.find("\"args\": {\"name\": \"GPU 0\"}"), std::string::npos) << j;
  EXPECT_NE(j.find("\"args\": {\"name\": \"stream 14\"}"), std::string::npos) << j;
  EXPECT_NE(j.find("\"args\": {\"name\": \"host (NVTX)\"}"), std::string::npos) << j;
}

TEST(TraceJson, NamesAreEscaped) {
  const std::vector<ch09::TraceEvent> ev = {
      {Kind::kRange, "a \"quoted\" \\ name\n\x01", 0, 1, 0, 1, 0}};
  EXPECT_NE(ch09::chrome_trace_json(ev).find("\"a \\\"quoted\\\" \\\\ name\\n\\u0001\""),
            std::string::npos);
}

TEST(TraceJson, EmptyAndInvalidInput) {
  EXPECT_EQ(ch09::chrome_trace_json({}),
            "{\"displayTimeUnit\": \"ns\", \"traceEvents\": [\n\n]}\n");
  const std::vector<ch09::TraceEvent> bad = {{Kind::kKernel, "k", 10, 5, 0, 1, 0}};
  EXPECT_THROW(ch09::chrome_trace_json(bad), std::invalid_argument);
}
