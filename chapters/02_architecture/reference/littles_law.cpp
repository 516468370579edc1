// Exercise 2.4 — Little's law: how much a kernel must keep in flight to reach a bandwidth (host
// code: runs on CI too).
//
// A memory system that answers after `latency` and delivers `bandwidth` holds bandwidth x latency
// bytes in flight at every instant (L = lambda W: items in the system = arrival rate x time in
// it). On an H200: 4.8e12 B/s x ~600 ns ~ 2.9 MB across 132 SMs, ~22 KB per SM. A thread that
// has one float (4 B) outstanding needs 5,500 threads per SM to supply that, more than the
// 2,048 an SM can hold; one with four float4 loads outstanding (64 B) needs ~350. That is why the
// bandwidth kernels unroll independent vector loads, and why the card puts the occupancy at which
// each kernel reaches 90% of its plateau beside this prediction.
#include "ch02/ch02.hpp"
#include "cudalab/check.hpp"

namespace cudalab::ch02 {

LittlesLaw littles_law(double bandwidth_gbps, double latency_ns, int sms, double bytes_per_thread,
                       int max_threads_per_sm) {
  require(bandwidth_gbps > 0, "bandwidth_gbps", "must be > 0");
  require(latency_ns > 0, "latency_ns", "must be > 0");
  require(sms > 0, "sms", "must be > 0");
  require(bytes_per_thread > 0, "bytes_per_thread", "must be > 0");
  require(max_threads_per_sm > 0, "max_threads_per_sm", "must be > 0");
  // BEGIN EXERCISE 2.4
  // TODO(2.4): littles_law(bandwidth_gbps, latency_ns, sms, bytes_per_thread, max_threads_per_sm).
  //   Contract: bytes_in_flight = bandwidth x latency for the whole GPU (GB/s is 1e9 B/s, ns is
  //     1e-9 s); bytes_per_sm = that / sms; threads_per_sm = bytes_per_sm / bytes_per_thread;
  //     occupancy = threads_per_sm / max_threads_per_sm (above 1: this access pattern cannot
  //     reach the bandwidth at any occupancy).
  //   Constraints: host code; no rounding (the card rounds when it prints).
  //   Goal: correctness (CPU exercise: `scripts/lab check 2.4`); then compare the prediction
  //     with the measured occupancy at 90% of the plateau in `scripts/lab gpu-card`.
  // STARTER: throw NotImplemented("Exercise 2.4: littles_law (chapters/02_architecture/starter/littles_law.cpp)");
  LittlesLaw r;
  r.bytes_in_flight = bandwidth_gbps * 1e9 * latency_ns * 1e-9;
  r.bytes_per_sm = r.bytes_in_flight / sms;
  r.threads_per_sm = r.bytes_per_sm / bytes_per_thread;
  r.occupancy = r.threads_per_sm / max_threads_per_sm;
  return r;
  // END EXERCISE
}

}  // namespace cudalab::ch02
