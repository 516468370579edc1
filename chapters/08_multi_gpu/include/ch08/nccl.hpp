// Chapter 8 — a small NCCL wrapper (reference/nccl.cu): a check for ncclResult_t, communicators
// that clean up, and the four collectives of the lesson on float buffers. Only where NCCL was found
// at configure time (CUDALAB_HAVE_NCCL).
#pragma once

#include <cuda_runtime_api.h>
#include <nccl.h>

#include <cstddef>
#include <span>
#include <vector>

namespace cudalab::ch08 {

// Throws cudalab::LibraryError("NCCL", ...) naming the call when `result` is not ncclSuccess.
void nccl_check(ncclResult_t result, const char* expression, const char* file, int line);
#define CUDALAB_NCCL_CHECK(expr) ::cudalab::ch08::nccl_check((expr), #expr, __FILE__, __LINE__)

// Sets NCCL_NVLS_ENABLE=0 unless the user set it (NVLink SHARP multicast stays off on the machines
// this lab runs on). Call before the first NCCL call; every program and test of the chapter does.
void nccl_default_environment();

// One communicator per device of `devices` (ncclCommInitAll: one process drives them all; one
// device works). Destroys them on destruction.
class NcclComms {
 public:
  explicit NcclComms(std::span<const int> devices);
  ~NcclComms();
  NcclComms(const NcclComms&) = delete;
  NcclComms& operator=(const NcclComms&) = delete;
  int size() const noexcept { return static_cast<int>(comms_.size()); }
  ncclComm_t comm(int rank) const { return comms_.at(rank); }
  int device(int rank) const { return devices_.at(rank); }

 private:
  std::vector<ncclComm_t> comms_;
  std::vector<int> devices_;
};

// The collectives, one call per rank inside one ncclGroupStart/End; rank r's pointers live on
// comms.device(r) and its work runs on streams[r]. Asynchronous. In place is allowed (send ==
// recv for all-reduce and broadcast; for all-gather send == recv + r * count; for reduce-scatter
// recv == send + r * count).
//   all_reduce_sum:     recv[r][i] = sum over ranks of send[.][i], count floats each.
//   all_gather:         recv[r] (count * n floats) = send[0] | send[1] | ... (count each).
//   reduce_scatter_sum: recv[r] (count floats) = sum over ranks of send[.][r*count .. (r+1)*count).
//   broadcast:          recv[r] = send[root] (count floats); send[r] is read on root only.
void all_reduce_sum(const NcclComms& comms, std::span<const float* const> send,
                    std::span<float* const> recv, std::size_t count,
                    std::span<const cudaStream_t> streams);
void all_gather(const NcclComms& comms, std::span<const float* const> send,
                std::span<float* const> recv, std::size_t count,
                std::span<const cudaStream_t> streams);
void reduce_scatter_sum(const NcclComms& comms, std::span<const float* const> send,
                        std::span<float* const> recv, std::size_t count,
                        std::span<const cudaStream_t> streams);
void broadcast(const NcclComms& comms, std::span<const float* const> send,
               std::span<float* const> recv, std::size_t count, int root,
               std::span<const cudaStream_t> streams);

}  // namespace cudalab::ch08
