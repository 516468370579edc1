// Chapter 10 — how PyTorch drives the GPU: the chapter's host API in one include.
#pragma once

#include "ch10/autograd.hpp"
#include "ch10/bias_gelu.hpp"
#include "ch10/bias_gelu_cpu.hpp"
#include "ch10/mixed_precision.hpp"
