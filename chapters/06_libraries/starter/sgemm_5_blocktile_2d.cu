// Starter track — write your code at the TODO marks; the tests of each exercise
// fail until you do. (Generated from chapters/06_libraries/reference/sgemm_5_blocktile_2d.cu by scripts/variants.py.)
// SGEMM step 5: register blocking in two dimensions — each thread computes a tile of C.
//
// Step 4 (sgemm_4_blocktile_1d.cu) does (8 + 1) shared loads per 8 FMAs. Step 5 (2D, exercise
// 6.2): a thread computes a TM x TN = 8 x 8 tile: 16 shared loads per 64 FMAs. The block tile
// grows to 128 x 128 so global traffic falls too: per K step of 8 a block loads (128 + 128) x 8
// floats for 2 x 128 x 128 x 8 FLOPs = 32 FLOP/byte. Boehm: 68.7% of cuBLAS on an A6000. Step 5's
// design question is the shared layout and which columns a thread owns: they decide how many
// shared reads a k step costs and whether they are bank-conflicted. Edges: guarded loads with
// zero-fill, guarded stores.
#include "ch06/sgemm.hpp"
#include "cudalab/check.hpp"
#include "cudalab/math.hpp"
#include "sgemm_common.cuh"

namespace cudalab::ch06::detail {
namespace {

struct Blocktile2dConfig {
  static constexpr int kBM = 128, kBN = 128, kBK = 8, kTM = 8, kTN = 8;
  static constexpr int kThreads = (kBM / kTM) * (kBN / kTN);  // 256
  // 2 blocks per SM caps ptxas at 128 registers a thread. Without it (sm_90, CUDA 13) it took
  // 148: 256 x 152 (allocation granularity) = 38912 registers, so ONE block per SM (8 warps) and
  // nothing ran while that block waited on its global loads between the two barriers.
  static constexpr int kMinBlocksPerSm = 2;
  static constexpr int kLoads = kBM * kBK / kThreads;  // elements of each tile a thread loads: 4
};
static_assert((Blocktile2dConfig::kBM * Blocktile2dConfig::kBK) % Blocktile2dConfig::kThreads == 0);
static_assert((Blocktile2dConfig::kBK * Blocktile2dConfig::kBN) % Blocktile2dConfig::kThreads == 0);
static_assert(Blocktile2dConfig::kLoads * Blocktile2dConfig::kThreads ==
                  Blocktile2dConfig::kBK * Blocktile2dConfig::kBN,
              "as many elements of B as of A per thread");

// Launch: grid (ceil(N / 128), ceil(M / 128)), 256 threads; each computes 8 x 8 elements of its
// block's 128 x 128 tile of C.
__global__ void __launch_bounds__(Blocktile2dConfig::kThreads, Blocktile2dConfig::kMinBlocksPerSm)
    sgemm_blocktile_2d_kernel(SgemmArgs a) {
  // TODO(6.2): sgemm_blocktile_2d_kernel, step 5 of the ladder.
  //   Contract: C = alpha A B + beta C (as in 6.1) for the 128 x 128 tile of C this block owns;
  //     each of the 256 threads computes 64 of its elements, 8 rows x 8 columns (which columns is
  //     yours to choose: the choice decides the bank conflicts of the shared reads). Any M,
  //     N, K; zero-fill outside A and B; guarded stores through store1 with Axpby; beta == 0 never
  //     reads C. Launch (fixed): 256 threads, 128 x 128 x 8 block tile (Blocktile2dConfig), at most
  //     128 registers a thread (__launch_bounds__ with 2 blocks per SM): no spills.
  //   Constraints: shared-memory tiles of A and B (as 6.1), and register blocking in two
  //     dimensions: each value read from shared memory is used for several FMAs from registers
  //     (count the shared loads per FMA: step 4 needs 9 per 8, this step should need far fewer); no
  //     library call.
  //   Goal: BM_sgemm/blocktile_2d/4096 >= 0.72x BM_sgemm_cublas/4096;
  //     `scripts/lab check 6.2`.
  (void)a;
}

}  // namespace

void sgemm_blocktile_2d(const SgemmArgs& a, cudaStream_t stream) {
  using C = Blocktile2dConfig;
  sgemm_blocktile_2d_kernel<<<dim3(ceil_div(a.N, C::kBN), ceil_div(a.M, C::kBM)), C::kThreads, 0,
                              stream>>>(a);
  CUDALAB_CHECK_LAUNCH();
}

}  // namespace cudalab::ch06::detail
