// Starter track — write your code at the TODO marks; the tests of each exercise
// fail until you do. (Generated from chapters/04_memory/reference/constant_poly.cu by scripts/variants.py.)
// Exercise 4.4 — constant memory: fast when a warp reads ONE address, slow when it reads many.
//
// What it computes: y[i] = sum_k c[k][p] x[i]^k by Horner's rule, p = 0 (kBroadcast) or
// p = i % 32 (kPerLane). Launch shape: 1D, kBlock threads, one element per thread.
// Work: 8 n bytes (x read, y written) and 2 (terms - 1) n FLOPs; with 16 terms that is 3.75
// FLOP/byte, still memory-bound on an H200, so the coefficient reads must stay off the critical
// path.
//
// __constant__ memory (64 KB per module) is served by a small per-SM constant cache built for
// the uniform case: when all lanes of a warp ask for the same address, one read serves the warp
// (and the compiler may even fold c[k] into the FMA as an operand). When the lanes ask for k
// different addresses, the reads are SERIALIZED: k passes. kPerLane reads 32 addresses per
// coefficient — the counter-example. Global memory through L1 handles both cases well: a
// broadcast is one 4-byte request, and c[k][lane] for 32 lanes is 128 contiguous bytes (the
// coefficients are laid out [k][p] for exactly this reason).
#include "ch04/ch04.hpp"
#include "cudalab/check.hpp"
#include "cudalab/math.hpp"

namespace cudalab::ch04 {

// (kMaxTerms, kPolys): 4 KB of the 64 KB bank. Namespace scope, not an anonymous namespace: an
// unreferenced internal variable would warn in the starter track.
__constant__ float c_coeffs[kMaxTerms * kPolys];
static_assert(sizeof(float) * kMaxTerms * kPolys <= 64 * 1024, "constant memory holds 64 KB");

namespace {

// Where the coefficients come from: one kernel template, two accessors.
struct GlobalCoeffs {
  const float* __restrict__ c;
  __device__ float operator()(int k, int p) const { return c[k * kPolys + p]; }
};
struct ConstantCoeffs {
  __device__ float operator()(int k, int p) const {
    // TODO(4.4): ConstantCoeffs::operator()(k, p).
    //   Contract: coefficient k of polynomial p, as GlobalCoeffs returns it from global memory, but
    //     read from the __constant__ array declared above (same [k][p] layout).
    (void)k; (void)p;
    return 0.0f;
  }
};

template <class Coeffs, bool kPerLane>
__global__ void __launch_bounds__(kBlock)
    poly_kernel(const float* __restrict__ x, float* __restrict__ y, std::size_t n, Coeffs c,
                int terms) {
  const std::size_t i = std::size_t{blockIdx.x} * blockDim.x + threadIdx.x;
  if (i >= n) return;
  // kBlock is a multiple of 32, so i % 32 is the lane: a warp asks for 32 different polynomials.
  const int p = kPerLane ? static_cast<int>(i % kPolys) : 0;
  const float xi = x[i];
  float acc = c(terms - 1, p);
  for (int k = terms - 2; k >= 0; --k) acc = fmaf(acc, xi, c(k, p));
  y[i] = acc;
}

template <class Coeffs>
void launch(const float* x, float* y, std::size_t n, Coeffs c, int terms, CoeffPattern pattern,
            cudaStream_t stream) {
  const std::size_t blocks = ceil_div<std::size_t>(n, kBlock);
  require(blocks <= 0x7FFFFFFFu, "n", "needs more than 2^31 - 1 blocks");
  if (pattern == CoeffPattern::kPerLane)
    poly_kernel<Coeffs, true>
        <<<static_cast<unsigned>(blocks), kBlock, 0, stream>>>(x, y, n, c, terms);
  else
    poly_kernel<Coeffs, false>
        <<<static_cast<unsigned>(blocks), kBlock, 0, stream>>>(x, y, n, c, terms);
  CUDALAB_CHECK_LAUNCH();
}

}  // namespace

void eval_polynomials(const float* x, float* y, std::size_t n, const float* coeffs, int terms,
                      CoeffMemory memory, CoeffPattern pattern, cudaStream_t stream) {
  require(terms >= 1 && terms <= kMaxTerms, "terms", "must be in 1..kMaxTerms (32)");
  require(memory == CoeffMemory::kGlobal || memory == CoeffMemory::kConstant, "memory",
          "unknown CoeffMemory");
  require(pattern == CoeffPattern::kBroadcast || pattern == CoeffPattern::kPerLane, "pattern",
          "unknown CoeffPattern");
  const std::size_t n_coeffs = static_cast<std::size_t>(terms) * kPolys;
  require_device_pointer(coeffs, n_coeffs, "coeffs");
  require_device_pointer(x, n, "x");
  require_device_pointer(y, n, "y");
  if (n == 0) return;
  if (memory == CoeffMemory::kGlobal) {
    launch(x, y, n, GlobalCoeffs{coeffs}, terms, pattern, stream);
    return;
  }
  // TODO(4.4): make the kConstant path's coefficients reach constant memory.
  //   Contract: after this point, the kernel launched below on `stream` must see the first terms *
  //     kPolys coefficients of `coeffs` (a device array) in the __constant__ array; any error comes
  //     back as cudalab::CudaError.
  //   Constraints: asynchronous and ordered on `stream` (no device-wide synchronization, no host
  //     round trip); device-to-device.
  //   Goal: BM_poly/memory:1/pattern:0 (constant, broadcast) >= 0.7x memory:0/pattern:0 (global,
  //     broadcast), and constant/per_lane far slower: explain why;
  //     `scripts/lab check 4.4`.
  if (n > 0) throw NotImplemented("Exercise 4.4: eval_polynomials, kConstant (chapters/04_memory/starter/constant_poly.cu)");
  launch(x, y, n, ConstantCoeffs{}, terms, pattern, stream);
}

}  // namespace cudalab::ch04
