// Chapter 11 — cuDNN's fused scaled-dot-product attention (flash attention forward, inference,
// causal), called through the raw cuDNN 9 backend graph API: the vendor yardstick beside the lab's
// prefill kernels (bench/ch11/prefill.cpp), on the same buffers and the same contract as
// flash_prefill_attention (ch11.hpp).
//
// Built only when CMake found cuDNN (CUDALAB_HAVE_CUDNN) and it is cuDNN 9; otherwise have_cudnn()
// is false and CudnnSdpa's calls throw SdpaUnsupported saying why.
#pragma once

#include <cuda_runtime_api.h>

#include <compare>
#include <cstdint>
#include <memory>
#include <stdexcept>
#include <string>

#include "ch11/ch11.hpp"

namespace cudalab::ch11 {

// Built with cuDNN 9 (the library may still refuse a graph at run time: SdpaUnsupported).
bool have_cudnn() noexcept;

// cuDNN cannot run this attention here: built without cuDNN, a runtime older than 9.0, or no
// engine of cuDNN's heuristics gave a plan for the graph, every refusal a NOT_SUPPORTED status
// (the message carries cuDNN's reasons). Other cuDNN failures throw cudalab::LibraryError naming
// the call and cuDNN's message (std::runtime_error listing them when no plan was found).
class SdpaUnsupported : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// Element strides of one 4-D tensor stored as [batch][token][head][dim], the dim stride being 1.
struct SdpaStrides {
  std::int64_t batch = 0, token = 0, head = 0;
  bool operator==(const SdpaStrides&) const = default;
  auto operator<=>(const SdpaStrides&) const = default;
};
struct SdpaLayout {
  SdpaStrides q, k, v, out;
  bool operator==(const SdpaLayout&) const = default;
  auto operator<=>(const SdpaLayout&) const = default;
};
// The prefill kernels' layout (ch11.hpp), packed: q, out [batch][len][q_heads][head_dim];
// k, v [batch][len][kv_heads][head_dim].
SdpaLayout prefill_layout(const DecodeShape& shape, int len);

// Causal attention, token i attending to tokens 0..i of its sequence, with query head h reading KV
// head h / (q_heads / kv_heads) (GQA) and softmax scale shape.scale: the output of
// flash_prefill_attention for the same arguments. The graph (cuDNN's flash-attention pattern:
// Q K^T, scale, causal mask, softmax, P V; fp32 scores, P rounded to the I/O type) is built and its
// engine chosen once per (batch, q_heads, kv_heads, len, head_dim, dtype, layout): cuDNN's
// heuristics mode A, then its fallback list, the first engine configuration whose plan finalizes.
// The object owns the cuDNN handle (made on first use, on the current device) and a workspace that
// grows to the largest plan's. Not thread-safe: one object per thread.
class CudnnSdpa {
 public:
  CudnnSdpa();
  ~CudnnSdpa();
  CudnnSdpa(CudnnSdpa&&) noexcept;
  CudnnSdpa& operator=(CudnnSdpa&&) noexcept;
  CudnnSdpa(const CudnnSdpa&) = delete;
  CudnnSdpa& operator=(const CudnnSdpa&) = delete;

  // Builds the graph and the plan of this problem (or finds them built) and returns what was chosen
  // ("engine 2 {KERNEL_CFG=7}, heuristics mode A, workspace 256 B, cuDNN 91400"). A plan of a
  // runtime-compiled engine takes about a second to build: call this before a timed loop.
  // Arguments as run()'s, without the pointers; layout null: prefill_layout(shape, len).
  std::string prepare(const DecodeShape& shape, int len, DType dtype,
                      const SdpaLayout* layout = nullptr);

  // Enqueues the attention on `stream`. q, k, v, out: device pointers, 16-byte aligned, with
  // strides that are multiples of 8 elements; shape and len as flash_prefill_attention takes them
  // (head_dim 64 or 128). Nothing to do for batch 0 or len 0.
  void run(const void* q, const void* k, const void* v, void* out, const DecodeShape& shape,
           int len, DType dtype, cudaStream_t stream = nullptr, const SdpaLayout* layout = nullptr);

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace cudalab::ch11
