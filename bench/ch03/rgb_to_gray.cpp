// Chapter 3 benchmarks, RGB to grayscale on an odd-shaped 1 GiB image beside a copy of the same
// bytes (rows: vector_add.cpp's header).
#include <cstdint>
#include <string>
#include <vector>

#include "ch03/ch03.hpp"
#include "cudalab/bench.hpp"
#include "cudalab/memory.hpp"

using namespace cudalab;

namespace {

void BM_rgb_to_gray(benchmark::State& state) {
  const int w = 16384 + 7, h = 16384 + 3;  // odd shape, 1 GiB of RGB
  PitchedBuffer<std::uint8_t> rgb(h, 3 * static_cast<std::size_t>(w)), gray(h, w);
  static const std::vector<std::uint8_t> host = [&] {  // made once per process, 1 GiB
    std::vector<std::uint8_t> image(rgb.rows() * rgb.width());
    std::uint32_t bits = 12345;
    for (auto& byte :
         image) {  // a cheap LCG: every channel value occurs, no pattern a kernel could exploit
      bits = bits * 1664525u + 1013904223u;
      byte = static_cast<std::uint8_t>(bits >> 24);
    }
    return image;
  }();
  rgb.upload(host);
  auto work = [&](cudaStream_t s) {
    ch03::rgb_to_gray(rgb.data(), rgb.pitch_bytes(), gray.data(), gray.pitch_bytes(), w, h, s);
  };
  if (!bench::verify(state, "rgb_to_gray", [&] {
        gray.fill_bytes(0xFF);
        work(nullptr);
        std::vector<std::uint8_t> want(static_cast<std::size_t>(w) * h);
        for (std::size_t i = 0; i < want.size(); ++i)
          want[i] = ch03::gray_of(host[3 * i], host[3 * i + 1], host[3 * i + 2]);
        return bench::mismatch(gray.to_host(), want, {}, "rgb_to_gray 16391 x 16387");
      }))
    return;
  const double bytes = 4.0 * w * h;
  const bench::CopyBase copy(bytes);
  bench::run_vs(state, work, std::cref(copy), {.bytes = bytes});
}

}  // namespace

[[maybe_unused]] const bool kRegistered = [] {
  bench::add("BM_rgb_to_gray", BM_rgb_to_gray);
  return true;
}();
