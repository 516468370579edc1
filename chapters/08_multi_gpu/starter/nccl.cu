// Starter track — write your code at the TODO marks; the tests of each exercise
// fail until you do. (Generated from chapters/08_multi_gpu/reference/nccl.cu by scripts/variants.py.)
// The lesson's NCCL wrapper (no exercise): the library a hand-written ring is measured against.
// Compiled to nothing where NCCL was not found at configure time.
#if CUDALAB_HAVE_NCCL
#include <cstdlib>
#include <string>

#include "ch08/ch08.hpp"
#include "ch08/nccl.hpp"
#include "cudalab/check.hpp"
#include "cudalab/device_guard.hpp"

namespace cudalab::ch08 {

void nccl_check(ncclResult_t result, const char* expression, const char* file, int line) {
  if (result == ncclSuccess) return;
  throw LibraryError("NCCL", static_cast<long>(result), ncclGetErrorString(result), expression,
                     file, line);
}

void nccl_default_environment() {
  // overwrite = 0: a value the user set wins.
  if (setenv("NCCL_NVLS_ENABLE", "0", 0) != 0)
    throw std::runtime_error("setenv(NCCL_NVLS_ENABLE) failed");
}

NcclComms::NcclComms(std::span<const int> devices) : devices_(devices.begin(), devices.end()) {
  require(!devices.empty(), "devices", "needs at least one device");
  const int available = device_count();
  for (int d : devices)
    require(d >= 0 && d < available, "devices", "names a device that does not exist");
  for (std::size_t i = 0; i < devices.size(); ++i)
    for (std::size_t j = i + 1; j < devices.size(); ++j)
      require(devices[i] != devices[j], "devices",
              "NCCL takes one rank per device (a device is named twice)");
  nccl_default_environment();
  comms_.resize(devices.size());
  CUDALAB_NCCL_CHECK(
      ncclCommInitAll(comms_.data(), static_cast<int>(devices.size()), devices_.data()));
}

NcclComms::~NcclComms() {
  for (ncclComm_t c : comms_)
    if (c != nullptr) (void)ncclCommDestroy(c);
}

namespace {

template <class Send, class Recv>
void require_ranks(const NcclComms& comms, Send send, Recv recv, std::size_t send_count,
                   std::size_t recv_count, std::span<const cudaStream_t> streams,
                   bool send_on_all = true) {
  const auto n = static_cast<std::size_t>(comms.size());
  require(send.size() == n, "send", "needs one pointer per rank");
  require(recv.size() == n, "recv", "needs one pointer per rank");
  require(streams.size() == n, "streams", "needs one stream per rank");
  for (std::size_t r = 0; r < n; ++r) {
    if (send_on_all) require_device_pointer(send[r], send_count, "send");
    require_device_pointer(recv[r], recv_count, "recv");
  }
}

// Group the per-rank calls: with one process driving several devices, ungrouped calls deadlock
// (the first rank's call waits for the others, which are never issued).
template <class F>
void grouped(const NcclComms& comms, F&& per_rank) {
  const DeviceGuard restore;
  CUDALAB_NCCL_CHECK(ncclGroupStart());
  try {
    for (int r = 0; r < comms.size(); ++r) {
      CUDALAB_CHECK(cudaSetDevice(comms.device(r)));
      per_rank(r);
    }
  } catch (...) {
    (void)ncclGroupEnd();
    throw;
  }
  CUDALAB_NCCL_CHECK(ncclGroupEnd());
}

}  // namespace

void all_reduce_sum(const NcclComms& comms, std::span<const float* const> send,
                    std::span<float* const> recv, std::size_t count,
                    std::span<const cudaStream_t> streams) {
  require_ranks(comms, send, recv, count, count, streams);
  if (count == 0) return;
  grouped(comms, [&](int r) {
    CUDALAB_NCCL_CHECK(
        ncclAllReduce(send[r], recv[r], count, ncclFloat, ncclSum, comms.comm(r), streams[r]));
  });
}

void all_gather(const NcclComms& comms, std::span<const float* const> send,
                std::span<float* const> recv, std::size_t count,
                std::span<const cudaStream_t> streams) {
  require_ranks(comms, send, recv, count, count * comms.size(), streams);
  if (count == 0) return;
  grouped(comms, [&](int r) {
    CUDALAB_NCCL_CHECK(
        ncclAllGather(send[r], recv[r], count, ncclFloat, comms.comm(r), streams[r]));
  });
}

void reduce_scatter_sum(const NcclComms& comms, std::span<const float* const> send,
                        std::span<float* const> recv, std::size_t count,
                        std::span<const cudaStream_t> streams) {
  require_ranks(comms, send, recv, count * comms.size(), count, streams);
  if (count == 0) return;
  grouped(comms, [&](int r) {
    CUDALAB_NCCL_CHECK(
        ncclReduceScatter(send[r], recv[r], count, ncclFloat, ncclSum, comms.comm(r), streams[r]));
  });
}

void broadcast(const NcclComms& comms, std::span<const float* const> send,
               std::span<float* const> recv, std::size_t count, int root,
               std::span<const cudaStream_t> streams) {
  require(root >= 0 && root < comms.size(), "root", "must be in [0, ranks)");
  require_ranks(comms, send, recv, count, count, streams, false);
  require_device_pointer(send[static_cast<std::size_t>(root)], count, "send");
  if (count == 0) return;
  grouped(comms, [&](int r) {
    CUDALAB_NCCL_CHECK(
        ncclBroadcast(send[r], recv[r], count, ncclFloat, root, comms.comm(r), streams[r]));
  });
}

}  // namespace cudalab::ch08
#endif  // CUDALAB_HAVE_NCCL
