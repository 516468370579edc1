// Starter track — write your code at the TODO marks; the tests of each exercise
// fail until you do. (Generated from chapters/05_patterns/reference/scan.cu by scripts/variants.py.)
// Chapter 5 scan: host API, argument checks, the workspace layout and the variants' table.
//
// Workspace (scan_workspace_bytes): [tile counter, 256 B][look-back tile states, 8 B per tile]
// [scan-then-propagate level sums, 4 B per tile per level], each part 256-byte aligned.
#include <cstdint>

#include "ch05/scan.hpp"
#include "cudalab/check.hpp"
#include "cudalab/ladder.hpp"
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

// One checked call, its workspace carved: what every variant's launcher receives.
template <class T>
struct Call {
  const T* in;
  T* out;
  std::size_t n;  // > 0
  ScanKind kind;
  unsigned char* workspace;
  Layout lay;
  cudaStream_t stream;
};

// Scan-then-propagate with tile scans of algorithm A.
template <class T, BlockScanAlgo A>
void scan_then_propagate(const Call<T>& c) {
  detail::scan_then_propagate(c.in, c.out, c.n, c.kind, A,
                              reinterpret_cast<T*>(c.workspace + c.lay.sums_offset), c.stream);
}

template <class T>
void decoupled_lookback(const Call<T>& c) {
  // Every tile state back to X (0) and the tile counter to 0: one memset of
  // 256 B + 8 B per tile (512 KiB for 2^28 elements, well under 1% of the scan's traffic).
  CUDALAB_CHECK(
      cudaMemsetAsync(c.workspace, 0, c.lay.states_offset + c.lay.states_bytes, c.stream));
  detail::launch_lookback_scan(
      c.in, c.out, c.n, c.kind,
      reinterpret_cast<unsigned long long*>(c.workspace + c.lay.states_offset),
      reinterpret_cast<unsigned*>(c.workspace), c.stream);
}

// The variants, one row each: the variant, its name (benchmark rows and test cases use it) and
// its launcher. to_string and scan() read this table only; the public kAllScanVariants lists the
// same variants in the same order (checked below).
template <class T>
struct Variant {
  ScanVariant variant;
  const char* name;
  void (*launch)(const Call<T>&);
};
template <class T>
constexpr Variant<T> kVariants[] = {
    {ScanVariant::kKoggeStone, "kogge_stone", scan_then_propagate<T, BlockScanAlgo::kKoggeStone>},
    {ScanVariant::kBrentKung, "brent_kung", scan_then_propagate<T, BlockScanAlgo::kBrentKung>},
    {ScanVariant::kDecoupledLookback, "decoupled_lookback", decoupled_lookback<T>},
};
static_assert(same_steps(kVariants<float>, kAllScanVariants) &&
                  same_steps(kVariants<int>, kAllScanVariants),
              "kAllScanVariants (ch05/scan.hpp) and kVariants list the same variants in the same "
              "order");

template <class T>
void scan_impl(const T* in, T* out, std::size_t n, ScanKind kind, void* workspace,
               std::size_t workspace_bytes, ScanVariant variant, cudaStream_t stream) {
  static_assert(sizeof(T) == 4);
  require(kind == ScanKind::kInclusive || kind == ScanKind::kExclusive, "kind", "unknown ScanKind");
  const Variant<T>* v = find_step(kVariants<T>, variant);
  require(v != nullptr, "variant", "unknown ScanVariant");
  const Layout lay = layout(n);
  require(workspace_bytes >= lay.bytes, "workspace_bytes", "smaller than scan_workspace_bytes(n)");
  require_device_pointer(in, n, "in");
  require_device_pointer(out, n, "out");
  require(n == 0 || !overlap(in, out, n * sizeof(T)), "out", "must not overlap in");
  require_device_pointer(workspace, lay.bytes, "workspace");
  require(reinterpret_cast<std::uintptr_t>(workspace) % kAlign == 0, "workspace",
          "must be 256-byte aligned (cudaMalloc memory is)");
  if (n == 0) return;
  v->launch({in, out, n, kind, static_cast<unsigned char*>(workspace), lay, stream});
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
  const Variant<float>* s = find_step(kVariants<float>, v);
  return s ? s->name : "unknown";
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
