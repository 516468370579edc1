// Chapter 10 — what the CPU and CUDA registrations of the operator share (torch/ only).
#pragma once

#include <ATen/ATen.h>

#include <cstdint>
#include <string>

namespace cudalab::ch10::torch_op {

// A tensor seen as rows x cols with a row stride ld (elements), the last dimension dense.
struct Rows {
  at::Tensor t;  // the tensor itself, or a contiguous copy when no such view exists
  int64_t rows, cols, ld;
};

bool tanh_form(const std::string& approximate);
Rows as_rows(const at::Tensor& t, const char* name);
void check_args(const at::Tensor& x, const at::Tensor& bias, const char* xname);

}  // namespace cudalab::ch10::torch_op
