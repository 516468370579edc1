// t(bytes) = latency + bytes / bandwidth: the two-parameter model of a host-device copy, fitted
// by ordinary least squares to measured (bytes, seconds) pairs.
//
// With x = bytes and y = seconds: slope b = sum (x - mx)(y - my) / sum (x - mx)^2, intercept
// a = my - b mx. a is the fixed cost of a transfer (driver call, DMA setup, PCIe round trip: a few
// microseconds), 1 / b the asymptotic bandwidth. Their product is the "half-bandwidth size": a
// copy of latency * bandwidth bytes spends half its time on latency and reaches half the peak.
// Below it, batch small copies; far above it, the bus is the limit.
//
// Sizes span 4 KB .. 1 GB (six decades), so the large sizes dominate the slope and the small ones
// the intercept: fitting absolute times weights them correctly for the slope, while the intercept
// is only as good as the small-size timings (take their medians).
#include <algorithm>
#include <cmath>
#include <cstddef>

#include "ch04/ch04.hpp"
#include "cudalab/check.hpp"

namespace cudalab::ch04 {

TransferFit fit_transfer_times(std::span<const double> bytes, std::span<const double> seconds) {
  require(bytes.size() == seconds.size(), "seconds", "must have one time per size");
  require(bytes.size() >= 2, "bytes", "needs at least two measurements");
  for (const double b : bytes) require(std::isfinite(b) && b >= 0, "bytes", "sizes must be finite and >= 0");
  for (const double s : seconds) require(std::isfinite(s) && s > 0, "seconds", "times must be finite and > 0");
  const auto [lo, hi] = std::minmax_element(bytes.begin(), bytes.end());
  require(*hi > *lo, "bytes", "needs at least two different sizes");

  const double n = static_cast<double>(bytes.size());
  double mx = 0, my = 0;
  for (std::size_t i = 0; i < bytes.size(); ++i) {
    mx += bytes[i];
    my += seconds[i];
  }
  mx /= n;
  my /= n;
  double sxx = 0, sxy = 0, syy = 0;  // centred sums: no cancellation between huge raw moments
  for (std::size_t i = 0; i < bytes.size(); ++i) {
    const double dx = bytes[i] - mx, dy = seconds[i] - my;
    sxx += dx * dx;
    sxy += dx * dy;
    syy += dy * dy;
  }
  TransferFit f;
  f.seconds_per_byte = sxy / sxx;
  f.latency_s = my - f.seconds_per_byte * mx;
  f.bandwidth_bytes_per_s = f.seconds_per_byte > 0 ? 1.0 / f.seconds_per_byte : 0.0;
  // r^2 = 1 - SS_res / SS_tot; SS_res = syy - sxy^2 / sxx for the least-squares line.
  f.r2 = syy > 0 ? std::max(0.0, 1.0 - (syy - sxy * sxy / sxx) / syy) : 1.0;
  return f;
}

}  // namespace cudalab::ch04
