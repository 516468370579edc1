// Starter track — write your code at the TODO marks; the tests of each exercise
// fail until you do. (Generated from chapters/03_first_kernels/reference/toolchain.cu by scripts/variants.py.)
// Exercise 3.7 — what did nvcc build, and what runs on this GPU?
//
// nvcc splits a .cu file: host code goes to the host compiler (g++), device code is compiled to
// PTX (a virtual ISA, `compute_XY`) and then by ptxas to SASS (machine code, `sm_XY`) for each
// architecture you asked for; all of it is packed into a fatbin inside the executable. At run time
// the driver picks the SASS for this GPU, or else JIT-compiles the newest compatible PTX; with
// neither, the launch fails with cudaErrorNoKernelImageForDevice. The runtime can tell which one
// was loaded, from which PTX, and what the kernel costs: registers per thread, local memory
// (spills, arrays indexed at run time), shared and constant memory (exercise 3.7).
#include "ch03/ch03.hpp"
#include "cudalab/check.hpp"

namespace cudalab::ch03 {
namespace {

__global__ void probe_simple(const int* __restrict__ in, int* __restrict__ out, std::size_t n) {
  const std::size_t i = std::size_t{blockIdx.x} * blockDim.x + threadIdx.x;
  if (i < n) out[i] = 2 * in[i] + 1;
}

// A 64-entry table indexed by data: registers cannot be indexed at run time, so the compiler
// places the array in local memory (per-thread, but physically in DRAM behind the caches).
__global__ void probe_local_array(const int* __restrict__ in, int* __restrict__ out,
                                  std::size_t n) {
  const std::size_t i = std::size_t{blockIdx.x} * blockDim.x + threadIdx.x;
  if (i >= n) return;
  unsigned table[64];
  table[0] = static_cast<unsigned>(in[i]);
  for (int k = 1; k < 64; ++k) table[k] = table[k - 1] * 1103515245u + 12345u;  // an LCG
  unsigned acc = 0;
  for (int k = 0; k < 8; ++k) acc += table[(static_cast<unsigned>(in[i]) + 7u * k) & 63u];
  out[i] = static_cast<int>(acc);
}

}  // namespace

int local_array_probe_oracle(int x) {
  unsigned table[64];
  table[0] = static_cast<unsigned>(x);
  for (int k = 1; k < 64; ++k) table[k] = table[k - 1] * 1103515245u + 12345u;
  unsigned acc = 0;
  for (unsigned k = 0; k < 8; ++k) acc += table[(static_cast<unsigned>(x) + 7u * k) & 63u];
  return static_cast<int>(acc);
}

void run_local_array_probe(const int* in, int* out, std::size_t n, cudaStream_t stream) {
  require_device_pointer(in, n, "in");
  require_device_pointer(out, n, "out");
  if (n == 0) return;
  probe_local_array<<<blocks_for(n, kBlock), kBlock, 0, stream>>>(in, out, n);
  CUDALAB_CHECK_LAUNCH();
}

KernelInfo probe_kernel_info(Probe probe) {
  require(probe == Probe::kSimple || probe == Probe::kLocalArray, "probe", "unknown Probe");
  [[maybe_unused]] const void* fn = probe == Probe::kSimple
                                        ? reinterpret_cast<const void*>(&probe_simple)
                                        : reinterpret_cast<const void*>(&probe_local_array);
  KernelInfo info;
  // TODO(3.7): fill `info` for the kernel `fn` points to.
  //   Contract: every field of KernelInfo (ch03/ch03.hpp) as the CUDA runtime reports it for the
  //     code that would run on the current device: registers per thread, the PTX and SASS
  //     architectures, the most threads a block may have, local, static shared and constant memory.
  //   Constraints: ask the runtime (no numbers copied from -Xptxas -v); check the call with the
  //     repository's error macros.
  //   Goal: correctness only (`scripts/lab check 3.7`); then compare with `ch03_what_compiled`.
  throw NotImplemented("Exercise 3.7: probe_kernel_info (chapters/03_first_kernels/starter/toolchain.cu)");
  return info;
}

}  // namespace cudalab::ch03
