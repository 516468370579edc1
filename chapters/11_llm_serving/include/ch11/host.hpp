// Chapter 11 — LLM serving, the host side: KV-cache arithmetic, the paged block allocator,
// INT8/FP8 quantization (host reference), the CPU attention oracle and the batching simulator.
//
// Everything here runs on the CPU (CI tests it without a GPU). Bad arguments throw
// std::invalid_argument naming the argument.
//
// One header per topic (each can be included alone); this one includes them all.
#pragma once

#include "ch11/attention_oracle.hpp"
#include "ch11/batching.hpp"
#include "ch11/block_allocator.hpp"
#include "ch11/decode_plan.hpp"
#include "ch11/kv_cache.hpp"
#include "ch11/prefill_plan.hpp"
#include "ch11/quantize.hpp"
