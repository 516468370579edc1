// Chapter 11, host side: INT8 per-channel and FP8 (E4M3, E5M2) quantization, the host reference of
// the chapter's kernels.
// Runs on the CPU (CI tests it without a GPU); bad arguments throw std::invalid_argument naming
// the argument.
#pragma once

#include <cstdint>
#include <span>
#include <stdexcept>
#include <vector>

namespace cudalab::ch11 {

// ---------------------------------------------------------------------------------------------
// Quantization, host reference.
// INT8 per-channel symmetric: row r (an output channel) of a rows x cols matrix gets
// scale[r] = max_c |w[r][c]| / 127 and q = round(w / scale) in [-127, 127] (round half away from
// zero; -128 is never used, so the range is symmetric). A row of zeros gets scale 0 and q = 0.
// NaN or infinity in w throws std::invalid_argument naming 'w' (INT8 has no NaN: a silent 0 would
// hide the bug upstream).
struct Int8Matrix {
  int rows = 0, cols = 0;
  std::vector<std::int8_t> q;  // row-major
  std::vector<float> scale;    // one per row
};
Int8Matrix quantize_int8_per_channel(std::span<const float> w, int rows, int cols);
std::vector<float> dequantize(const Int8Matrix& m);

// FP8 (OCP 8-bit floating point, as NVIDIA Hopper implements it):
//   E4M3 ("fn"): bias 7, no infinity, NaN = S.1111.111, largest 448, smallest subnormal 2^-9;
//   E5M2: bias 15, infinities and NaNs like IEEE, largest 57344, smallest subnormal 2^-16.
// Encoding rounds to nearest, ties to even. Out of range (after rounding): with saturate, the
// largest finite value of the sign (infinity too); without, E4M3 gives NaN and E5M2 infinity.
// NaN stays NaN. These match cuda_fp8.h's __nv_cvt_float_to_fp8 (__NV_SATFINITE / __NV_NOSAT),
// which the tests check.
enum class Fp8Format { kE4M3, kE5M2 };
double fp8_max(Fp8Format f);  // 448 or 57344
std::uint8_t float_to_fp8(float x, Fp8Format f, bool saturate = true);
float fp8_to_float(std::uint8_t code, Fp8Format f);
// Per-tensor scaling as cuBLASLt FP8 GEMMs use it: scale = amax / fp8_max (1 when amax is 0),
// codes = fp8(x / scale), saturating. NaN in x throws naming 'x'.
struct Fp8Tensor {
  Fp8Format format = Fp8Format::kE4M3;
  float scale = 1;
  std::vector<std::uint8_t> codes;
};
Fp8Tensor quantize_fp8(std::span<const float> x, Fp8Format f);
std::vector<float> dequantize(const Fp8Tensor& t);

}  // namespace cudalab::ch11
