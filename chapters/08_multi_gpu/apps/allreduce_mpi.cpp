// Chapter 8 — one process per GPU: the NCCL launcher that also runs across nodes.
//
//   mpirun -np 2 build/ci/chapters/08_multi_gpu/ch08_allreduce_mpi [count]
//   mpirun -np 16 -H node1:8,node2:8 .../ch08_allreduce_mpi 268435456
//
// Rank 0 creates the NCCL unique id and MPI broadcasts it; every rank picks its local GPU (its
// rank among the processes of its node, modulo the node's GPUs), joins the communicator with
// ncclCommInitRank, all-reduces `count` floats (default 2^20) holding rank + 1 and checks the sum
// n(n+1)/2, then prints the time and busbw of the last of 5 timed runs on rank 0.
// Without a GPU it prints "skipped: no GPU" and exits 0 (the ctest skip rule).
#include <mpi.h>

#include <cstdio>
#include <cstdlib>
#include <exception>
#include <string>
#include <vector>

#include "ch08/ch08.hpp"
#include "ch08/nccl.hpp"
#include "cudalab/check.hpp"
#include "cudalab/memory.hpp"

namespace {

void mpi_check(int rc, const char* what) {
  if (rc != MPI_SUCCESS) throw std::runtime_error(std::string("MPI call failed: ") + what);
}

int run(int argc, char** argv) {
  int rank = 0, size = 1;
  mpi_check(MPI_Comm_rank(MPI_COMM_WORLD, &rank), "MPI_Comm_rank");
  mpi_check(MPI_Comm_size(MPI_COMM_WORLD, &size), "MPI_Comm_size");
  const std::size_t count = argc > 1 ? std::stoull(argv[1]) : (std::size_t{1} << 20);
  cudalab::require(count > 0, "count", "must be > 0");

  const int gpus = cudalab::ch08::device_count();
  int any_missing = gpus == 0 ? 1 : 0, missing = 0;
  mpi_check(MPI_Allreduce(&any_missing, &missing, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD),
            "MPI_Allreduce");
  if (missing) {
    if (rank == 0) std::printf("skipped: no GPU on some rank\n");
    return 0;
  }
  // The rank among the processes of this node picks the GPU.
  MPI_Comm node = MPI_COMM_NULL;
  mpi_check(MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_SHARED, rank, MPI_INFO_NULL, &node),
            "split");
  int local = 0;
  mpi_check(MPI_Comm_rank(node, &local), "MPI_Comm_rank(node)");
  mpi_check(MPI_Comm_free(&node), "MPI_Comm_free");
  CUDALAB_CHECK(cudaSetDevice(local % gpus));

  cudalab::ch08::nccl_default_environment();
  ncclUniqueId id{};
  if (rank == 0) CUDALAB_NCCL_CHECK(ncclGetUniqueId(&id));
  mpi_check(MPI_Bcast(&id, sizeof id, MPI_BYTE, 0, MPI_COMM_WORLD), "MPI_Bcast(unique id)");
  ncclComm_t comm = nullptr;
  CUDALAB_NCCL_CHECK(ncclCommInitRank(&comm, size, id, rank));

  cudaStream_t stream = nullptr;
  CUDALAB_CHECK(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));
  cudalab::DeviceBuffer<float> buf(count);
  const std::vector<float> mine(count, static_cast<float>(rank + 1));
  cudaEvent_t start = nullptr, stop = nullptr;
  CUDALAB_CHECK(cudaEventCreate(&start));
  CUDALAB_CHECK(cudaEventCreate(&stop));
  float ms = 0;
  bool ok = true;
  for (int it = 0; it < 6; ++it) {  // the first is the warm-up
    buf.upload(mine);
    CUDALAB_CHECK(cudaDeviceSynchronize());
    mpi_check(MPI_Barrier(MPI_COMM_WORLD), "MPI_Barrier");
    CUDALAB_CHECK(cudaEventRecord(start, stream));
    CUDALAB_NCCL_CHECK(
        ncclAllReduce(buf.data(), buf.data(), count, ncclFloat, ncclSum, comm, stream));
    CUDALAB_CHECK(cudaEventRecord(stop, stream));
    CUDALAB_CHECK(cudaEventSynchronize(stop));
    CUDALAB_CHECK(cudaEventElapsedTime(&ms, start, stop));
  }
  const std::vector<float> got = buf.to_host();
  const float want = static_cast<float>(size) * (size + 1) / 2.0f;
  for (float v : got) ok = ok && v == want;
  int bad = ok ? 0 : 1, any_bad = 0;
  mpi_check(MPI_Allreduce(&bad, &any_bad, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD), "MPI_Allreduce");
  if (rank == 0) {
    const double bytes = static_cast<double>(count) * sizeof(float);
    const double alg = cudalab::ch08::algbw_gbs(bytes, ms * 1e-3);
    std::printf(
        "all-reduce %zu floats on %d ranks: %.3f ms, algbw %.1f GB/s, busbw %.1f GB/s: %s\n", count,
        size, ms, alg, cudalab::ch08::allreduce_busbw_gbs(alg, size),
        any_bad ? "WRONG SUM" : "sum ok");
  }
  CUDALAB_CHECK(cudaEventDestroy(start));
  CUDALAB_CHECK(cudaEventDestroy(stop));
  CUDALAB_CHECK(cudaStreamDestroy(stream));
  CUDALAB_NCCL_CHECK(ncclCommDestroy(comm));
  return any_bad ? 1 : 0;
}

}  // namespace

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  int rc = 1;
  try {
    rc = run(argc, argv);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "ch08_allreduce_mpi: %s\n", e.what());
    MPI_Abort(MPI_COMM_WORLD, 1);
  }
  MPI_Finalize();
  return rc;
}
