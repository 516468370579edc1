// The lesson's topology tools (no exercise): which device can read which (P2P), the driver's
// performance rank of each pair, and the P2P copy bandwidth one way and both ways.
#include <stdexcept>
#include <string>

#include "ch08/ch08.hpp"
#include "cudalab/check.hpp"
#include "cudalab/device_guard.hpp"
#include "cudalab/memory.hpp"
#include "cudalab/stream.hpp"

namespace cudalab::ch08 {

std::vector<std::vector<PeerInfo>> peer_matrix() {
  const int n = device_count();
  std::vector<std::vector<PeerInfo>> m(n, std::vector<PeerInfo>(n));
  for (int i = 0; i < n; ++i)
    for (int j = 0; j < n; ++j) {
      if (i == j) {
        m[i][j] = {true, 0};
        continue;
      }
      int access = 0, rank = 0;
      CUDALAB_CHECK(cudaDeviceCanAccessPeer(&access, i, j));
      if (access)
        CUDALAB_CHECK(cudaDeviceGetP2PAttribute(&rank, cudaDevP2PAttrPerformanceRank, i, j));
      m[i][j] = {access != 0, rank};
    }
  return m;
}

double p2p_bandwidth_gbs(int src, int dst, std::size_t bytes, int reps, bool both_ways) {
  const int n = device_count();
  require(src >= 0 && src < n, "src", "names a device that does not exist");
  require(dst >= 0 && dst < n, "dst", "names a device that does not exist");
  require(bytes > 0, "bytes", "must be > 0");
  require(reps >= 1, "reps", "must be at least 1");
  const DeviceGuard restore;  // also when a call below throws
  if (src != dst) {
    int ok = 0;
    CUDALAB_CHECK(cudaDeviceCanAccessPeer(&ok, src, dst));
    if (ok) {
      const int pair[2] = {src, dst};
      enable_peer_access(pair);
    }
  }
  CUDALAB_CHECK(cudaSetDevice(src));
  DeviceBuffer<std::byte> a(bytes), a2(bytes);
  CUDALAB_CHECK(cudaSetDevice(dst));
  DeviceBuffer<std::byte> b(bytes), b2(bytes);
  Stream back;  // on dst: the dst -> src direction
  CUDALAB_CHECK(cudaSetDevice(src));
  Stream fwd;
  Event start, stop;  // on src; the dst stream's end is joined into fwd with back_end (on dst)
  const auto run = [&] {
    CUDALAB_CHECK(cudaMemcpyPeerAsync(b.data(), dst, a.data(), src, bytes, fwd));
    if (both_ways) CUDALAB_CHECK(cudaMemcpyPeerAsync(a2.data(), src, b2.data(), dst, bytes, back));
  };
  run();  // warm-up
  CUDALAB_CHECK(cudaStreamSynchronize(back));
  CUDALAB_CHECK(cudaStreamSynchronize(fwd));
  CUDALAB_CHECK(cudaEventRecord(start, fwd));
  CUDALAB_CHECK(cudaStreamWaitEvent(back, start, 0));
  for (int i = 0; i < reps; ++i) run();
  CUDALAB_CHECK(cudaSetDevice(dst));
  Event back_end;
  CUDALAB_CHECK(cudaEventRecord(back_end, back));
  CUDALAB_CHECK(cudaSetDevice(src));
  CUDALAB_CHECK(cudaStreamWaitEvent(fwd, back_end, 0));
  CUDALAB_CHECK(cudaEventRecord(stop, fwd));
  CUDALAB_CHECK(cudaEventSynchronize(stop));
  float ms = 0;
  CUDALAB_CHECK(cudaEventElapsedTime(&ms, start, stop));
  const double moved = static_cast<double>(bytes) * reps * (both_ways ? 2 : 1);
  return moved / (ms * 1e-3) / 1e9;
}

}  // namespace cudalab::ch08
