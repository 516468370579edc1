"""Chapter 10: build, load and complete the cudalab::bias_gelu operator for PyTorch.

    from ops import load, BiasGelu          # chapters/10_frameworks/torch on sys.path
    ops = load()                            # builds once into build/torch_ch10/, then cached
    y = torch.ops.cudalab.bias_gelu(x, bias, "none")

C++ defines the schema and the CPU kernel (cudalab_op.cpp), the CUDA kernel (cudalab_op_cuda.cpp)
and the backward (autograd_registration.cpp: a torch::autograd::Function at the Autograd key over
the operator bias_gelu_backward, itself an operator, so that AOTAutograd can trace the backward
too). This file adds what torch.compile needs, the way PyTorch's custom-operator guide does:

  register_fake      the shape/dtype/stride of each output, computed without data: Dynamo and
                     AOTAutograd trace with FakeTensors, so without it torch.compile cannot see
                     through the op (opcheck's test_faketensor, test_aot_dispatch_dynamic).

The guide's Python route for the backward, torch.library.register_autograd, is the one to reach
for first; the C++ registration is used here (README, "A lab kernel as a PyTorch operator").

One C++ runtime per process: the extension is linked against the libstdc++ this Python process
has already loaded (torch's), named first on the link line. A toolchain that links its own
libstdc++ into the shared object otherwise puts a second copy of the library in the process: on
the GPU machines (/opt/gcc's g++ 13) the first error message that formatted a number, an
ostringstream made by the extension's copy and written by torch's, jumped into the other copy's
locale code and ended the process with a segfault (test_op.ErrorPaths, and
Op.test_one_cpp_runtime that checks the built library).

The planted operator (bias_gelu_planted) is registered exactly the same way: its registrations
are all consistent, which is why opcheck passes it (test_op.PlantedBug).
"""
from __future__ import annotations

import os
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
CHAPTER = HERE.parent
ROOT = CHAPTER.parent.parent
BUILD = ROOT / "build" / "torch_ch10"

_loaded: dict[str, object] = {}


def torch_missing_reason() -> str:
    """'' when torch imports, else why not (the tests' skip reason)."""
    try:
        import torch  # noqa: F401
    except ImportError as e:  # pragma: no cover - depends on the machine
        return (f"torch is not installed ({e}); the operator's tests run where it is: CI installs a CPU "
                "torch (.ci/run), a GPU machine with torch runs them all (tools/gpu_check.sh)")
    return ""


def process_libstdcxx() -> str | None:
    """The libstdc++ shared object this process has loaded (torch's), from /proc/self/maps; None
    where there is none or no /proc (the link then uses the compiler's own)."""
    try:
        maps = Path("/proc/self/maps").read_text()
    except OSError:
        return None
    for line in maps.splitlines():
        fields = line.split(maxsplit=5)
        if len(fields) == 6 and "/libstdc++.so" in fields[5]:
            return fields[5].strip()
    return None


def sources(with_cuda: bool) -> list[str]:
    ref, common = CHAPTER / "reference", ROOT / "common" / "src"
    # The operator, and the mini autograd (CPU backend) behind cudalab::mini_autograd_mlp; the
    # lab's error checks (check.cpp calls the CUDA runtime: linked from CUDA_HOME on a CPU torch).
    src = [HERE / "cudalab_op.cpp", HERE / "autograd_registration.cpp", HERE / "mini_autograd_op.cpp",
           ref / "autograd.cpp",
           ref / "autograd_ops.cpp", CHAPTER / "cpu" / "cpu_backend.cpp", common / "check.cpp",
           common / "random.cpp"]
    if with_cuda:
        # The chapter's kernels on torch's stream.
        src += [HERE / "cudalab_op_cuda.cpp", ref / "bias_gelu.cu", common / "device.cpp"]
    return [str(p) for p in src]


def load(verbose: bool = False):
    """Builds (once, cached by torch.utils.cpp_extension in build/torch_ch10) and loads the
    operator library, then registers the fake kernels and the autograd formulas. Returns
    torch.ops.cudalab."""
    if "ops" in _loaded:
        return _loaded["ops"]
    import torch
    from torch.utils import cpp_extension

    with_cuda = torch.cuda.is_available() and cpp_extension.CUDA_HOME is not None
    BUILD.mkdir(parents=True, exist_ok=True)
    flags = ["-O2", "-std=c++20", "-DFMT_HEADER_ONLY"]
    cuda_flags = ["-O3", "-std=c++20", "-DFMT_HEADER_ONLY"]
    if with_cuda and "TORCH_CUDA_ARCH_LIST" not in os.environ:
        major, minor = torch.cuda.get_device_capability()
        os.environ["TORCH_CUDA_ARCH_LIST"] = f"{major}.{minor}"  # this GPU only: a faster build
    if cpp_extension.CUDA_HOME is None:
        raise RuntimeError("cudalab ops: no CUDA toolkit (CUDA_HOME): the lab's headers and error "
                           "checks need the CUDA runtime even for the CPU build")
    cuda_home = Path(cpp_extension.CUDA_HOME)
    ldflags = [] if with_cuda else [f"-L{cuda_home / 'lib64'}", "-lcudart"]
    runtime = process_libstdcxx()
    if runtime:
        ldflags = [runtime, "-shared-libgcc"] + ldflags  # before the driver's own -lstdc++
    cpp_extension.load(
        name="cudalab_ch10_ops" + ("_cuda" if with_cuda else "_cpu"),
        sources=sources(with_cuda),
        extra_include_paths=[str(CHAPTER / "include"), str(ROOT / "common" / "include"), str(HERE),
                             str(cuda_home / "include")],
        extra_ldflags=ldflags,
        extra_cflags=flags,
        extra_cuda_cflags=cuda_flags,
        build_directory=str(BUILD),
        with_cuda=with_cuda,
        is_python_module=False,
        verbose=verbose,
    )
    _register(torch)
    _loaded["ops"] = torch.ops.cudalab
    _loaded["with_cuda"] = with_cuda
    _loaded["library"] = BUILD / ("cudalab_ch10_ops" + ("_cuda" if with_cuda else "_cpu") + ".so")
    return torch.ops.cudalab


def _register(torch) -> None:
    for name in ("bias_gelu", "bias_gelu_planted"):
        _register_one(torch, name)


def _register_one(torch, name: str) -> None:
    fwd = f"cudalab::{name}"
    bwd = f"cudalab::{name}_backward"

    @torch.library.register_fake(fwd)
    def _fake_forward(x, bias, approximate="none"):
        torch._check(bias.dim() == 1, lambda: "bias must be 1-D")
        torch._check(x.shape[-1] == bias.shape[0], lambda: "x's last dimension must be bias's size")
        # The real kernels return a new contiguous tensor of x's shape: the fake must say the same
        # (strides included: a wrong stride in a fake crashes Inductor later, far from here).
        return x.new_empty(x.shape)

    @torch.library.register_fake(bwd)
    def _fake_backward(grad, x, bias, approximate="none"):
        torch._check(grad.shape == x.shape, lambda: "grad must have x's shape")
        return x.new_empty(x.shape), bias.new_empty(bias.shape)


def bias_gelu(x, bias, approximate: str = "none"):
    return load().bias_gelu(x, bias, approximate)


def make_module(torch, planted: bool = False):
    """A Linear followed by the fused bias + GELU (the Linear's own bias off): the block the
    chapter compiles, benchmarks and traps."""
    ops = load()
    op = ops.bias_gelu_planted if planted else ops.bias_gelu

    class LinearBiasGelu(torch.nn.Module):
        def __init__(self, d_in: int, d_out: int):
            super().__init__()
            self.linear = torch.nn.Linear(d_in, d_out, bias=False)
            self.bias = torch.nn.Parameter(torch.randn(d_out) * 0.1)

        def forward(self, x):
            return op(self.linear(x), self.bias, "none")

    return LinearBiasGelu


if __name__ == "__main__":  # python3 ops.py: build and say what was built
    reason = torch_missing_reason()
    if reason:
        print(reason)
        sys.exit(0)
    ops = load(verbose=True)
    print("loaded torch.ops.cudalab with CUDA" if _loaded["with_cuda"] else "loaded torch.ops.cudalab (CPU only)")
