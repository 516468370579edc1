// Exercise 3.5 — 2D kernel on pitched images of odd shapes (exact integer oracle).
#include <gtest/gtest.h>

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "ch03/ch03.hpp"
#include "cudalab/device_fill.hpp"
#include "cudalab/random.hpp"
#include "cudalab/testing.hpp"

using namespace cudalab;

namespace {
using Shape = std::pair<int, int>;  // width, height
std::string shape_name(const ::testing::TestParamInfo<Shape>& p) {
  return std::to_string(p.param.first) + "x" + std::to_string(p.param.second);
}
}  // namespace

class RgbToGrayGpu : public ::testing::TestWithParam<Shape> {};

TEST_P(RgbToGrayGpu, MatchesOracle) {
  CUDALAB_REQUIRE_GPU();
  const auto [w, h] = GetParam();
  Rng rng;
  const auto rgb = rng.uniform<std::uint8_t>(static_cast<std::size_t>(w) * h * 3, 0, 255);
  PitchedBuffer<std::uint8_t> d_rgb(static_cast<std::size_t>(h), static_cast<std::size_t>(w) * 3);
  PitchedBuffer<std::uint8_t> d_gray(static_cast<std::size_t>(h), static_cast<std::size_t>(w));
  d_rgb.upload(rgb);
  d_gray.fill_bytes(0xFF);  // poison
  ch03::rgb_to_gray(d_rgb.data(), d_rgb.pitch_bytes(), d_gray.data(), d_gray.pitch_bytes(), w, h);
  std::vector<std::uint8_t> want(static_cast<std::size_t>(w) * h);
  for (std::size_t p = 0; p < want.size(); ++p)
    want[p] = ch03::gray_of(rgb[3 * p], rgb[3 * p + 1], rgb[3 * p + 2]);
  EXPECT_MATCHES(compare(d_gray.to_host(), want, {},
                         "rgb_to_gray (exercise 3.5, " + std::to_string(w) + "x" +
                             std::to_string(h) + ", rgb pitch " +
                             std::to_string(d_rgb.pitch_bytes()) + " bytes)"));
}

// The stream contract (cudalab/testing.hpp, replay_from_capture): all the work on the caller's
// stream. A launch without the stream argument runs while the call is recorded, not in the replay.
TEST(RgbToGrayStreamGpu, AllWorkOnTheCallersStream) {
  CUDALAB_REQUIRE_GPU();
  const int w = 67, h = 33;
  Rng rng;
  const auto rgb = rng.uniform<std::uint8_t>(static_cast<std::size_t>(w) * h * 3, 0, 255);
  PitchedBuffer<std::uint8_t> d_rgb(static_cast<std::size_t>(h), static_cast<std::size_t>(w) * 3);
  PitchedBuffer<std::uint8_t> d_gray(static_cast<std::size_t>(h), static_cast<std::size_t>(w));
  d_rgb.upload(rgb);
  cudalab::testing::replay_from_capture(
      [&](cudaStream_t s) {
        ch03::rgb_to_gray(d_rgb.data(), d_rgb.pitch_bytes(), d_gray.data(), d_gray.pitch_bytes(), w,
                          h, s);
      },
      [&] { d_gray.fill_bytes(0xFF); });
  std::vector<std::uint8_t> want(static_cast<std::size_t>(w) * h);
  for (std::size_t p = 0; p < want.size(); ++p)
    want[p] = ch03::gray_of(rgb[3 * p], rgb[3 * p + 1], rgb[3 * p + 2]);
  EXPECT_MATCHES(compare(d_gray.to_host(), want, {},
                         "rgb_to_gray replayed from a capture of its stream (exercise 3.5)"));
}

// The bytes between `width` and the pitch of every gray row are padding: nothing may write them
// (an x bound off by one writes column `width` there, and the image itself still looks right).
TEST_P(RgbToGrayGpu, PaddingUntouched) {
  CUDALAB_REQUIRE_GPU();
  const auto [w, h] = GetParam();
  Rng rng;
  const auto rgb = rng.uniform<std::uint8_t>(static_cast<std::size_t>(w) * h * 3, 0, 255);
  PitchedBuffer<std::uint8_t> d_rgb(static_cast<std::size_t>(h), static_cast<std::size_t>(w) * 3);
  PitchedBuffer<std::uint8_t> d_gray(static_cast<std::size_t>(h), static_cast<std::size_t>(w));
  d_rgb.upload(rgb);
  d_gray.fill_bytes(0xFF);  // poison, padding included
  ch03::rgb_to_gray(d_rgb.data(), d_rgb.pitch_bytes(), d_gray.data(), d_gray.pitch_bytes(), w, h);
  const std::size_t pitch = d_gray.pitch_bytes();
  std::vector<std::uint8_t> raw(pitch * static_cast<std::size_t>(h));
  CUDALAB_CHECK(cudaMemcpy(raw.data(), d_gray.data(), raw.size(), cudaMemcpyDeviceToHost));
  std::size_t written = 0, first_row = 0, first_col = 0;
  for (std::size_t y = 0; y < static_cast<std::size_t>(h); ++y)
    for (std::size_t x = static_cast<std::size_t>(w); x < pitch; ++x)
      if (raw[y * pitch + x] != 0xFF && written++ == 0) first_row = y, first_col = x;
  EXPECT_EQ(written, 0u) << "rgb_to_gray (exercise 3.5, " << w << "x" << h << ", gray pitch "
                         << pitch << " bytes): " << written
                         << " padding bytes written, first at row " << first_row << ", column "
                         << first_col << " (value " << int(raw[first_row * pitch + first_col])
                         << "): the x bound must be x < width";
}

INSTANTIATE_TEST_SUITE_P(OddShapes, RgbToGrayGpu,
                         ::testing::Values(Shape{1, 1}, Shape{33, 17}, Shape{31, 9}, Shape{1, 1000},
                                           Shape{1000, 1}, Shape{647, 483}, Shape{1920, 1080}),
                         shape_name);

// Views whose rows are not 16-byte aligned: tight rows (pitch = 3 * width and width, so with an
// odd width only every 16th row starts aligned) and base pointers offset by a few bytes into the
// allocation. A kernel with a vector path for aligned rows must take a scalar path on the others
// (both occur in one image here); the bytes around every row (the gap up to the pitch, the guard
// before the first row and after the last) stay untouched.
struct View {
  int w, h;
  std::size_t rgb_offset, gray_offset, rgb_extra, gray_extra;  // bytes: base offset, pitch - row
};
class RgbToGrayViewGpu : public ::testing::TestWithParam<View> {};

TEST_P(RgbToGrayViewGpu, UnalignedRowsMatchOracle) {
  CUDALAB_REQUIRE_GPU();
  const View v = GetParam();
  const std::size_t w = static_cast<std::size_t>(v.w), h = static_cast<std::size_t>(v.h);
  const std::size_t rgb_pitch = 3 * w + v.rgb_extra, gray_pitch = w + v.gray_extra;
  constexpr std::size_t kGuard = 64;  // bytes before and after each image
  Rng rng;
  const auto rgb =
      rng.uniform<std::uint8_t>(kGuard + v.rgb_offset + rgb_pitch * h + kGuard, 0, 255);
  DeviceBuffer<std::uint8_t> d_rgb(rgb.size()),
      d_gray(kGuard + v.gray_offset + gray_pitch * h + kGuard);
  d_rgb.upload(rgb);
  CUDALAB_CHECK(cudaMemset(d_gray.data(), 0xA5, d_gray.size()));
  ch03::rgb_to_gray(d_rgb.data() + kGuard + v.rgb_offset, rgb_pitch,
                    d_gray.data() + kGuard + v.gray_offset, gray_pitch, v.w, v.h);
  std::vector<std::uint8_t> want(d_gray.size(), 0xA5);
  for (std::size_t y = 0; y < h; ++y)
    for (std::size_t x = 0; x < w; ++x) {
      const std::size_t in = kGuard + v.rgb_offset + y * rgb_pitch + 3 * x;
      want[kGuard + v.gray_offset + y * gray_pitch + x] =
          ch03::gray_of(rgb[in], rgb[in + 1], rgb[in + 2]);
    }
  EXPECT_MATCHES(compare(d_gray.to_host(), want, {},
                         "rgb_to_gray (exercise 3.5, " + std::to_string(v.w) + "x" +
                             std::to_string(v.h) + " view, rgb offset " +
                             std::to_string(v.rgb_offset) + " pitch " + std::to_string(rgb_pitch) +
                             ", gray offset " + std::to_string(v.gray_offset) + " pitch " +
                             std::to_string(gray_pitch) + "; the whole buffer, guards included)"));
}

INSTANTIATE_TEST_SUITE_P(
    Views, RgbToGrayViewGpu,
    ::testing::Values(View{1029, 37, 0, 0, 0, 0},   // tight, odd width: every 16th row aligned
                      View{1029, 37, 1, 0, 0, 0},   // rgb base off by 1: no row aligned
                      View{1536, 9, 0, 3, 0, 0},    // whole segments, gray base off by 3
                      View{1100, 21, 16, 0, 4, 8},  // aligned bases, pitches aligned to 4 / 8
                      View{513, 3, 5, 7, 11, 13},   // one whole segment + 1 pixel, odd everything
                      View{2048, 5, 0, 0, 0, 0}),   // tight and aligned: every row vectorized
    [](const ::testing::TestParamInfo<View>& p) { return "case" + std::to_string(p.index); });

// A 40000 x 60000 image with pitches of 120064 (rgb) and 40032 (gray) bytes: the rgb image is 7.2
// GB, the gray one 2.4 GB, so row offsets y * pitch pass 2^31 (rgb from row 17887, gray from row
// 53645) and 2^32 (rgb from row 35773). An offset computed in int (y * pitch before widening)
// reads and writes the wrong rows there. The rgb bytes come from the device fill (as ints, four
// bytes each); the pixels checked are the first, last and random columns of the rows on both
// sides of each crossing, the first and the last row. Cost: ~10 GB of memory, a few ms.
TEST(RgbToGrayLargeGpu, RowOffsetsPastTwoToThe31Bytes) {
  const int w = 40000, h = 60000;
  const std::size_t rgb_pitch = 3 * std::size_t{w} + 64, gray_pitch = std::size_t{w} + 32;
  const std::size_t rgb_bytes = rgb_pitch * h, gray_bytes = gray_pitch * h;
  CUDALAB_REQUIRE_DEVICE_MEMORY(rgb_bytes + gray_bytes + (std::size_t{1} << 30));
  const std::uint64_t seed = Rng().seed();
  DeviceBuffer<int> rgb(rgb_bytes / 4);
  DeviceBuffer<std::uint8_t> gray(gray_bytes);
  fill_uniform_device(rgb.data(), rgb.size(), seed, 0, 0x7FFFFFFF);
  poison_device(gray.data(), gray.bytes());
  const auto* rgb_bytes_ptr = reinterpret_cast<const std::uint8_t*>(rgb.data());
  ch03::rgb_to_gray(rgb_bytes_ptr, rgb_pitch, gray.data(), gray_pitch, w, h);
  CUDALAB_CHECK(cudaDeviceSynchronize());
  auto byte_at = [&](std::size_t off) {
    const auto word = static_cast<unsigned>(uniform_at(seed, off / 4, 0, 0x7FFFFFFF));
    return static_cast<std::uint8_t>(word >> (8 * (off % 4)));
  };
  std::vector<std::size_t> rows{0, static_cast<std::size_t>(h) - 1};
  for (const std::size_t edge : {std::size_t{1} << 31, std::size_t{1} << 32}) {
    for (const std::size_t pitch : {rgb_pitch, gray_pitch}) {
      const std::size_t r = edge / pitch;  // the row holding byte `edge`, and its neighbours
      for (const std::size_t y : {r, r + 1})
        if (y < static_cast<std::size_t>(h)) rows.push_back(y);
    }
  }
  std::vector<std::size_t> idx;
  std::vector<std::uint8_t> want;
  Rng rng(seed);
  for (const std::size_t y : rows)
    for (const std::size_t x : {std::size_t{0}, std::size_t{1}, std::size_t{w} - 1,
                                static_cast<std::size_t>(rng.scalar<int>(0, w - 1))}) {
      idx.push_back(y * gray_pitch + x);
      const std::size_t in = y * rgb_pitch + 3 * x;
      want.push_back(ch03::gray_of(byte_at(in), byte_at(in + 1), byte_at(in + 2)));
    }
  EXPECT_TRUE(cudalab::testing::samples_match(
      idx, cudalab::testing::download_at(gray.data(), idx), want, {},
      "rgb_to_gray (exercise 3.5, 40000x60000, rgb pitch "
      "120064, gray pitch 40032; index = y * gray_pitch + x)"));
}

TEST(RgbToGrayArgs, RejectsBadShapesAndPitches) {
  EXPECT_THROW(ch03::rgb_to_gray(nullptr, 0, nullptr, 0, -1, 4), std::invalid_argument);
  EXPECT_THROW(ch03::rgb_to_gray(nullptr, 0, nullptr, 0, 4, -1), std::invalid_argument);
  try {
    ch03::rgb_to_gray(nullptr, 8, nullptr, 8, 4, 4);  // rgb rows need 12 bytes
    FAIL() << "expected std::invalid_argument";
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find("'rgb_pitch'"), std::string::npos) << e.what();
  }
  EXPECT_NO_THROW(ch03::rgb_to_gray(nullptr, 0, nullptr, 0, 0, 0));
}

TEST(RgbToGrayOracle, KnownValues) {
  EXPECT_EQ(ch03::gray_of(0, 0, 0), 0);
  EXPECT_EQ(ch03::gray_of(255, 255, 255), 255);
  EXPECT_EQ(ch03::gray_of(255, 0, 0), 76);  // 299 * 255 / 1000 = 76.2
  EXPECT_EQ(ch03::gray_of(0, 255, 0), 150);
}
