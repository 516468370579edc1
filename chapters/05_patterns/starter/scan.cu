// Starter track — write your code at the TODO marks; the tests of each exercise
// fail until you do. (Generated from chapters/05_patterns/reference/scan.cu by scripts/variants.py.)
// Chapter 5 scan: host API, argument checks and the workspace layout.
//
// Workspace (scan_workspace_bytes): [tile counter, 256 B][look-back tile states, 8 B per tile]
// [scan-then-propagate level sums, 4 B per tile per level], each part 256-byte aligned.
#include <cstdint>

#include "ch05/scan.hpp"
#include "cudalab/check.hpp"
#include "cudalab/math.hpp"
#include "scan_common.hpp"

namespace cudalab::ch05 {
namespace {

constexpr std::size_t kAlign = 256;

struct Layout {
  std::size_t states_offset, states_bytes, sums_offset, bytes;
};
Layout layout(std::size_t n) {
  Layout l{};
  l.states_offset = kAlign;
  l.states_bytes = round_up<std::size_t>(ceil_div<std::size_t>(n, kLookbackTile) * 8, kAlign);
  l.sums_offset = l.states_offset + l.states_bytes;
  l.bytes = l.sums_offset + round_up<std::size_t>(detail::propagate_workspace_elems(n) * 4, kAlign);
  return l;
}

bool overlap(const void* a, const void* b, std::size_t bytes) {
  const auto x = reinterpret_cast<std::uintptr_t>(a), y = reinterpret_cast<std::uintptr_t>(b);
  return x < y + bytes && y < x + bytes;
}

template <class T>
void scan_impl(const T* in, T* out, std::size_t n, ScanKind kind, void* workspace,
               std::size_t workspace_bytes, ScanVariant variant, cudaStream_t stream) {
  static_assert(sizeof(T) == 4);
  require(kind == ScanKind::kInclusive || kind == ScanKind::kExclusive, "kind", "unknown ScanKind");
  require(static_cast<unsigned>(variant) <= static_cast<unsigned>(ScanVariant::kDecoupledLookback),
          "variant", "unknown ScanVariant");
  const Layout lay = layout(n);
  require(workspace_bytes >= lay.bytes, "workspace_bytes", "smaller than scan_workspace_bytes(n)");
  require_device_pointer(in, n, "in");
  require_device_pointer(out, n, "out");
  require(n == 0 || !overlap(in, out, n * sizeof(T)), "out", "must not overlap in");
  require_device_pointer(workspace, lay.bytes, "workspace");
  require(reinterpret_cast<std::uintptr_t>(workspace) % kAlign == 0, "workspace",
          "must be 256-byte aligned (cudaMalloc memory is)");
  if (n == 0) return;
  auto* base = static_cast<unsigned char*>(workspace);
  if (variant == ScanVariant::kDecoupledLookback) {
    // Every tile state back to X (0) and the tile counter to 0: one memset of
    // 256 B + 8 B per tile (512 KiB for 2^28 elements, well under 1% of the scan's traffic).
    CUDALAB_CHECK(cudaMemsetAsync(base, 0, lay.states_offset + lay.states_bytes, stream));
    detail::launch_lookback_scan(in, out, n, kind,
                                 reinterpret_cast<unsigned long long*>(base + lay.states_offset),
                                 reinterpret_cast<unsigned*>(base), stream);
  } else {
    const auto algo = variant == ScanVariant::kKoggeStone ? BlockScanAlgo::kKoggeStone
                                                          : BlockScanAlgo::kBrentKung;
    detail::scan_then_propagate(in, out, n, kind, algo,
                                reinterpret_cast<T*>(base + lay.sums_offset), stream);
  }
}

template <class T>
void tile_scan_impl(const T* in, T* out, std::size_t n, BlockScanAlgo algo, ScanKind kind,
                    cudaStream_t stream) {
  require_device_pointer(in, n, "in");
  require_device_pointer(out, n, "out");
  require(algo == BlockScanAlgo::kKoggeStone || algo == BlockScanAlgo::kBrentKung, "algo",
          "unknown BlockScanAlgo");
  require(kind == ScanKind::kInclusive || kind == ScanKind::kExclusive, "kind", "unknown ScanKind");
  detail::launch_tile_scan<T>(in, out, n, algo, kind, nullptr, stream);
}

}  // namespace

const char* to_string(BlockScanAlgo a) {
  return a == BlockScanAlgo::kKoggeStone  ? "kogge_stone"
         : a == BlockScanAlgo::kBrentKung ? "brent_kung"
                                          : "unknown";
}
const char* to_string(ScanVariant v) {
  switch (v) {
    case ScanVariant::kKoggeStone:
      return "kogge_stone";
    case ScanVariant::kBrentKung:
      return "brent_kung";
    case ScanVariant::kDecoupledLookback:
      return "decoupled_lookback";
  }
  return "unknown";
}

std::size_t scan_workspace_bytes(std::size_t n) {
  return layout(n).bytes;
}

void tile_scan(const float* in, float* out, std::size_t n, BlockScanAlgo algo, ScanKind kind,
               cudaStream_t stream) {
  tile_scan_impl(in, out, n, algo, kind, stream);
}
void tile_scan(const int* in, int* out, std::size_t n, BlockScanAlgo algo, ScanKind kind,
               cudaStream_t stream) {
  tile_scan_impl(in, out, n, algo, kind, stream);
}
void scan(const float* in, float* out, std::size_t n, ScanKind kind, void* workspace,
          std::size_t workspace_bytes, ScanVariant variant, cudaStream_t stream) {
  scan_impl(in, out, n, kind, workspace, workspace_bytes, variant, stream);
}
void scan(const int* in, int* out, std::size_t n, ScanKind kind, void* workspace,
          std::size_t workspace_bytes, ScanVariant variant, cudaStream_t stream) {
  scan_impl(in, out, n, kind, workspace, workspace_bytes, variant, stream);
}

}  // namespace cudalab::ch05
