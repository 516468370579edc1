// Chapter 9 — a timeline without Nsight Systems: CUPTI's activity API records what the GPU did
// (kernels, copies, memsets, each with its stream and its start and end on the GPU clock) and the
// host's NVTX ranges; the records are written as a Chrome-trace / Perfetto JSON that a browser
// opens (ui.perfetto.dev, chrome://tracing).
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <vector>

namespace cudalab::ch09 {

struct TraceEvent {
  enum class Kind { kKernel, kMemcpy, kMemset, kRange };
  Kind kind = Kind::kKernel;
  std::string name;            // kernel name, copy kind ("HtoD", ...), or the NVTX range's message
  std::uint64_t start_ns = 0;  // CUPTI timestamps (ns); ranges and GPU work share the clock
  std::uint64_t end_ns = 0;
  std::uint32_t device = 0;  // GPU events: the device; ranges: unused
  std::uint32_t lane = 0;    // GPU events: the CUDA stream id; ranges: the host thread id
  std::uint64_t bytes = 0;   // copies and memsets
};

// The Chrome trace JSON of `events` (cpu/trace_json.cpp): one complete event ("ph": "X") per
// record, timestamps in microseconds from the earliest record, the GPU events under one process
// per device with a thread per stream, the NVTX ranges under a "host" process with a thread per
// host thread. Names are JSON-escaped. Events with end < start are an error
// (std::invalid_argument).
std::string chrome_trace_json(std::span<const TraceEvent> events);

// Records CUPTI activity from construction to stop() (trace/cupti_recorder.cpp, built where CUPTI
// is found). One recorder per process at a time. NVTX ranges need CUPTI as the NVTX injection
// library, and NVTX reads NVTX_INJECTION64_PATH once, at the process's first NVTX call (later calls
// of an uninjected process are no-ops for good): call route_nvtx() before that first call (first
// thing in main), or set the variable to libcupti in the environment. The constructor calls it
// too, which is enough only when no NVTX call happened before.
class TraceRecorder {
 public:
  // Sets NVTX_INJECTION64_PATH to the libcupti this program is linked with, unless it is set.
  static void route_nvtx();
  TraceRecorder();  // throws std::runtime_error naming the CUPTI call that failed
  ~TraceRecorder();
  TraceRecorder(const TraceRecorder&) = delete;
  TraceRecorder& operator=(const TraceRecorder&) = delete;
  // Waits for the device, flushes CUPTI's buffers, disables recording; the records, by start time.
  std::vector<TraceEvent> stop();

 private:
  bool stopped_ = false;
};

}  // namespace cudalab::ch09
