// TraceRecorder (include/ch09/trace.hpp): CUPTI's activity API, the way Nsight Systems records a
// timeline. CUPTI fills buffers we hand it (buffer_requested) with activity records and gives
// them back when full or flushed (buffer_completed); we keep the kinds the lesson needs.
#include <cuda_runtime_api.h>
#include <cupti.h>
#include <dlfcn.h>

#include <algorithm>
#include <cstdint>
#include <cstdlib>
#include <map>
#include <mutex>
#include <stdexcept>
#include <string>
#include <vector>

#include "ch09/trace.hpp"

namespace cudalab::ch09 {
namespace {

constexpr std::size_t kBufferBytes = 8 << 20;
constexpr std::size_t kAlign = 8;  // CUPTI's required buffer alignment

struct State {
  std::mutex mutex;
  std::vector<TraceEvent> events;
  std::map<std::uint32_t, TraceEvent> open_ranges;  // NVTX range id -> its start
};
State& state() {
  static State s;  // one recorder per process (CUPTI's activity callbacks are process-wide)
  return s;
}

void check(CUptiResult r, const char* what) {
  if (r == CUPTI_SUCCESS) return;
  const char* msg = nullptr;
  cuptiGetResultString(r, &msg);
  throw std::runtime_error(std::string(what) + ": " + (msg ? msg : "unknown CUPTI error"));
}

const char* copy_kind(std::uint8_t k) {
  switch (k) {
    case CUPTI_ACTIVITY_MEMCPY_KIND_HTOD:
      return "memcpy HtoD";
    case CUPTI_ACTIVITY_MEMCPY_KIND_DTOH:
      return "memcpy DtoH";
    case CUPTI_ACTIVITY_MEMCPY_KIND_DTOD:
      return "memcpy DtoD";
    case CUPTI_ACTIVITY_MEMCPY_KIND_HTOH:
      return "memcpy HtoH";
    case CUPTI_ACTIVITY_MEMCPY_KIND_PTOP:
      return "memcpy PtoP";
    default:
      return "memcpy";
  }
}

void CUPTIAPI buffer_requested(std::uint8_t** buffer, std::size_t* size, std::size_t* max_records) {
  *buffer = static_cast<std::uint8_t*>(std::aligned_alloc(kAlign, kBufferBytes));
  *size = *buffer ? kBufferBytes : 0;
  *max_records = 0;  // as many as fit
}

void record(const CUpti_Activity* a, State& s) {
  switch (a->kind) {
    case CUPTI_ACTIVITY_KIND_KERNEL:
    case CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL: {
      const auto* k = reinterpret_cast<const CUpti_ActivityKernel10*>(a);
      s.events.push_back({TraceEvent::Kind::kKernel, k->name ? k->name : "?", k->start, k->end,
                          k->deviceId, k->streamId, 0});
      break;
    }
    case CUPTI_ACTIVITY_KIND_MEMCPY: {
      const auto* m = reinterpret_cast<const CUpti_ActivityMemcpy6*>(a);
      s.events.push_back({TraceEvent::Kind::kMemcpy, copy_kind(m->copyKind), m->start, m->end,
                          m->deviceId, m->streamId, m->bytes});
      break;
    }
    case CUPTI_ACTIVITY_KIND_MEMSET: {
      const auto* m = reinterpret_cast<const CUpti_ActivityMemset4*>(a);
      s.events.push_back({TraceEvent::Kind::kMemset, "memset", m->start, m->end, m->deviceId,
                          m->streamId, m->bytes});
      break;
    }
    case CUPTI_ACTIVITY_KIND_MARKER: {
      // A push/pop range is two records with one id: the start (with the message), the end.
      const auto* m = reinterpret_cast<const CUpti_ActivityMarker2*>(a);
      if (m->flags & CUPTI_ACTIVITY_FLAG_MARKER_START) {
        s.open_ranges[m->id] = {TraceEvent::Kind::kRange,
                                m->name ? m->name : "",
                                m->timestamp,
                                m->timestamp,
                                0,
                                m->objectId.pt.threadId,
                                0};
      } else if (m->flags & CUPTI_ACTIVITY_FLAG_MARKER_END) {
        auto it = s.open_ranges.find(m->id);
        if (it != s.open_ranges.end()) {
          it->second.end_ns = m->timestamp;
          s.events.push_back(it->second);
          s.open_ranges.erase(it);
        }
      }
      break;
    }
    default:
      break;
  }
}

void CUPTIAPI buffer_completed(CUcontext, std::uint32_t, std::uint8_t* buffer, std::size_t,
                               std::size_t valid) {
  State& s = state();
  {
    const std::lock_guard<std::mutex> lock(s.mutex);
    CUpti_Activity* a = nullptr;
    while (cuptiActivityGetNextRecord(buffer, valid, &a) == CUPTI_SUCCESS) record(a, s);
  }
  std::free(buffer);
}

constexpr CUpti_ActivityKind kKinds[] = {CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL,
                                         CUPTI_ACTIVITY_KIND_MEMCPY, CUPTI_ACTIVITY_KIND_MEMSET,
                                         CUPTI_ACTIVITY_KIND_MARKER};

}  // namespace

void TraceRecorder::route_nvtx() {
  // NVTX calls reach CUPTI only when CUPTI is the process's NVTX injection library.
  Dl_info info{};
  if (!std::getenv("NVTX_INJECTION64_PATH") &&
      dladdr(reinterpret_cast<void*>(&cuptiActivityEnable), &info) && info.dli_fname)
    setenv("NVTX_INJECTION64_PATH", info.dli_fname, 0);
}

TraceRecorder::TraceRecorder() {
  route_nvtx();
  {
    const std::lock_guard<std::mutex> lock(state().mutex);
    state().events.clear();
    state().open_ranges.clear();
  }
  static const bool registered = [] {  // once per process; later recorders re-enable the kinds
    check(cuptiActivityRegisterCallbacks(buffer_requested, buffer_completed),
          "cuptiActivityRegisterCallbacks");
    return true;
  }();
  (void)registered;
  for (const CUpti_ActivityKind k : kKinds) check(cuptiActivityEnable(k), "cuptiActivityEnable");
}

TraceRecorder::~TraceRecorder() {
  if (!stopped_) {
    for (const CUpti_ActivityKind k : kKinds) cuptiActivityDisable(k);
    cuptiActivityFlushAll(1);
  }
}

std::vector<TraceEvent> TraceRecorder::stop() {
  cudaDeviceSynchronize();  // every recorded kernel and copy has ended
  check(cuptiActivityFlushAll(1), "cuptiActivityFlushAll");
  for (const CUpti_ActivityKind k : kKinds) check(cuptiActivityDisable(k), "cuptiActivityDisable");
  stopped_ = true;
  const std::lock_guard<std::mutex> lock(state().mutex);
  std::vector<TraceEvent> out = std::move(state().events);
  state().events.clear();
  std::sort(out.begin(), out.end(),
            [](const TraceEvent& a, const TraceEvent& b) { return a.start_ns < b.start_ns; });
  return out;
}

}  // namespace cudalab::ch09
