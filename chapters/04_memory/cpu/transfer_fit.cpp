// t(bytes) = latency + bytes / bandwidth: the two-parameter model of a host-device copy, fitted
// by weighted least squares to measured (bytes, seconds) pairs.
//
// With x = bytes, y = seconds and weights w: slope b = sum w (x - mx)(y - my) / sum w (x - mx)^2,
// intercept a = my - b mx (mx, my weighted means). a is the fixed cost of a transfer (driver call,
// DMA setup, PCIe round trip: microseconds), 1 / b the asymptotic bandwidth. Their product is the
// "half-bandwidth size": a copy of latency * bandwidth bytes spends half its time on latency and
// reaches half the peak. Below it, batch small copies; far above it, the bus is the limit.
//
// Why weights w = 1 / y^2 (relative residuals): sizes span 4 KB .. 1 GB, six decades. Ordinary
// least squares on absolute times lets a 1% bandwidth wobble at 1 GB (200 us) outweigh the whole
// 10 us latency, and the intercept comes out as noise — on the H200 an unweighted fit returned
// negative latencies of hundreds of microseconds. Weighting each point by 1 / t^2 makes every
// size count for its relative error: the large sizes still set the slope, the small ones now set
// the intercept.
#include <algorithm>
#include <cmath>
#include <cstddef>

#include "ch04/ch04.hpp"
#include "cudalab/check.hpp"

namespace cudalab::ch04 {

TransferFit fit_transfer_times(std::span<const double> bytes, std::span<const double> seconds) {
  require(bytes.size() == seconds.size(), "seconds", "must have one time per size");
  require(bytes.size() >= 2, "bytes", "needs at least two measurements");
  for (const double b : bytes)
    require(std::isfinite(b) && b >= 0, "bytes", "sizes must be finite and >= 0");
  for (const double s : seconds)
    require(std::isfinite(s) && s > 0, "seconds", "times must be finite and > 0");
  const auto [lo, hi] = std::minmax_element(bytes.begin(), bytes.end());
  require(*hi > *lo, "bytes", "needs at least two different sizes");

  double sw = 0, mx = 0, my = 0;
  for (std::size_t i = 0; i < bytes.size(); ++i) {
    const double w = 1.0 / (seconds[i] * seconds[i]);
    sw += w;
    mx += w * bytes[i];
    my += w * seconds[i];
  }
  mx /= sw;
  my /= sw;
  double sxx = 0, sxy = 0, syy = 0;  // centred weighted sums: no cancellation between huge moments
  for (std::size_t i = 0; i < bytes.size(); ++i) {
    const double w = 1.0 / (seconds[i] * seconds[i]);
    const double dx = bytes[i] - mx, dy = seconds[i] - my;
    sxx += w * dx * dx;
    sxy += w * dx * dy;
    syy += w * dy * dy;
  }
  TransferFit f;
  f.seconds_per_byte = sxy / sxx;
  f.latency_s = my - f.seconds_per_byte * mx;
  f.bandwidth_bytes_per_s = f.seconds_per_byte > 0 ? 1.0 / f.seconds_per_byte : 0.0;
  // Weighted r^2 = 1 - SS_res / SS_tot; SS_res = syy - sxy^2 / sxx for the least-squares line.
  f.r2 = syy > 0 ? std::max(0.0, 1.0 - (syy - sxy * sxy / sxx) / syy) : 1.0;
  return f;
}

}  // namespace cudalab::ch04
