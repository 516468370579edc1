// CPU oracles of chapter 9.
#include <stdexcept>

#include "ch09/ch09.hpp"

namespace cudalab::ch09 {

std::vector<float> scale_rows_cpu(const std::vector<float>& in, const std::vector<float>& scale,
                                  std::size_t rows, std::size_t cols) {
  if (in.size() != rows * cols) throw std::invalid_argument("in: size is not rows * cols");
  if (scale.size() != rows) throw std::invalid_argument("scale: size is not rows");
  std::vector<float> out(in.size());
  for (std::size_t r = 0; r < rows; ++r)
    for (std::size_t c = 0; c < cols; ++c) out[r * cols + c] = in[r * cols + c] * scale[r];
  return out;
}

}  // namespace cudalab::ch09
