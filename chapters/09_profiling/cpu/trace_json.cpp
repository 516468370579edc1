// The Chrome-trace writer of include/ch09/trace.hpp (CPU only: tests/ch09/test_trace.cpp).
#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <set>
#include <stdexcept>
#include <string>
#include <utility>

#include "ch09/trace.hpp"

namespace cudalab::ch09 {
namespace {

std::string escape(const std::string& s) {
  std::string out;
  out.reserve(s.size() + 2);
  for (const char c : s) {
    switch (c) {
      case '"':
        out += "\\\"";
        break;
      case '\\':
        out += "\\\\";
        break;
      case '\n':
        out += "\\n";
        break;
      case '\t':
        out += "\\t";
        break;
      default:
        if (static_cast<unsigned char>(c) < 0x20) {
          char buf[8];
          std::snprintf(buf, sizeof buf, "\\u%04x",
                        static_cast<unsigned>(static_cast<unsigned char>(c)));
          out += buf;
        } else {
          out += c;
        }
    }
  }
  return out;
}

const char* category(TraceEvent::Kind k) {
  switch (k) {
    case TraceEvent::Kind::kKernel:
      return "kernel";
    case TraceEvent::Kind::kMemcpy:
      return "memcpy";
    case TraceEvent::Kind::kMemset:
      return "memset";
    case TraceEvent::Kind::kRange:
      return "nvtx";
  }
  return "?";
}

std::string microseconds(std::uint64_t ns) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%llu.%03llu", static_cast<unsigned long long>(ns / 1000),
                static_cast<unsigned long long>(ns % 1000));
  return buf;
}

}  // namespace

std::string chrome_trace_json(std::span<const TraceEvent> events) {
  constexpr std::uint32_t kHostPid = 1'000'000;  // beside the devices' pids 0, 1, ...
  std::uint64_t t0 = UINT64_MAX;
  for (const TraceEvent& e : events) {
    if (e.end_ns < e.start_ns)
      throw std::invalid_argument("events: '" + e.name + "' ends before it starts");
    t0 = std::min(t0, e.start_ns);
  }
  std::set<std::uint32_t> devices;
  std::set<std::pair<std::uint32_t, std::uint32_t>> lanes;  // (pid, tid)
  std::string out = "{\"displayTimeUnit\": \"ns\", \"traceEvents\": [\n";
  bool first = true;
  auto add = [&](const std::string& line) {
    out += first ? "  " : ",\n  ";
    out += line;
    first = false;
  };
  for (const TraceEvent& e : events) {
    const bool host = e.kind == TraceEvent::Kind::kRange;
    const std::uint32_t pid = host ? kHostPid : e.device;
    if (!host) devices.insert(e.device);
    lanes.insert({pid, e.lane});
    std::string line = "{\"name\": \"" + escape(e.name) + "\", \"cat\": \"" + category(e.kind) +
                       "\", \"ph\": \"X\", \"ts\": " + microseconds(e.start_ns - t0) +
                       ", \"dur\": " + microseconds(e.end_ns - e.start_ns) +
                       ", \"pid\": " + std::to_string(pid) + ", \"tid\": " + std::to_string(e.lane);
    if (e.bytes) line += ", \"args\": {\"bytes\": " + std::to_string(e.bytes) + "}";
    add(line + "}");
  }
  for (const std::uint32_t d : devices)
    add("{\"name\": \"process_name\", \"ph\": \"M\", \"pid\": " + std::to_string(d) +
        ", \"args\": {\"name\": \"GPU " + std::to_string(d) + "\"}}");
  if (std::any_of(events.begin(), events.end(),
                  [](const TraceEvent& e) { return e.kind == TraceEvent::Kind::kRange; }))
    add("{\"name\": \"process_name\", \"ph\": \"M\", \"pid\": " + std::to_string(kHostPid) +
        ", \"args\": {\"name\": \"host (NVTX)\"}}");
  for (const auto& [pid, tid] : lanes)
    add("{\"name\": \"thread_name\", \"ph\": \"M\", \"pid\": " + std::to_string(pid) +
        ", \"tid\": " + std::to_string(tid) + ", \"args\": {\"name\": \"" +
        (pid == kHostPid ? "thread " : "stream ") + std::to_string(tid) + "\"}}");
  out += "\n]}\n";
  return out;
}

}  // namespace cudalab::ch09
