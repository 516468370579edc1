"""Chapter 10: tests of the cudalab::bias_gelu PyTorch operator (unittest; CPU wherever torch is,
CUDA on a GPU). Without torch every test is skipped with the reason, never passed.

    python3 -m unittest discover -s chapters/10_frameworks/torch -p 'test_*.py' -v

- opcheck with all its checks (test_schema, test_autograd_registration, test_faketensor,
  test_aot_dispatch_dynamic) on odd shapes, 3-D, row-strided and transposed inputs;
- gradcheck in float64 (both GELU forms);
- values and gradients against the eager composition F.gelu(x + bias) at odd shapes and
  non-contiguous inputs (float32, float64; float16/bfloat16 on CUDA against the fp64 result);
- torch.compile(fullgraph=True) of a module using it: 0 graph breaks, and over 5 dynamic batch
  sizes 1 compiled frame (no recompile after the first);
- the mini autograd's MLP gradients (C++, through cudalab::mini_autograd_mlp) equal torch.autograd's;
- the planted bug (bias_gelu_planted): opcheck passes it, gradcheck passes it, the value test
  catches it;
- a bad argument reaches Python as a RuntimeError naming it on every path to the kernel that
  refuses it (each in a child process, so that a crash fails one test, not the run).
"""
from __future__ import annotations

import sys
import unittest
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import ops as cops  # noqa: E402

REASON = cops.torch_missing_reason()
if not REASON:
    import torch
    import torch.nn.functional as F


def devices():
    return ["cpu"] + (["cuda"] if torch.cuda.is_available() else [])


def samples(device, dtype, requires_grad):
    """(x, bias) pairs: odd 2-D shapes, 3-D, a row-strided slice, a transpose, an empty batch."""
    g = torch.Generator(device="cpu").manual_seed(0)

    def r(*shape, scale=3.0):
        return (torch.rand(*shape, generator=g, dtype=torch.float64) * 2 - 1).mul(scale).to(device, dtype)

    out = []
    for shape in [(1, 1), (3, 5), (7, 33), (2, 3, 17), (0, 9)]:
        out.append((r(*shape), r(shape[-1], scale=1.0)))
    out.append((r(9, 24)[:, :17], r(17, scale=1.0)))   # row-strided: read in place
    out.append((r(33, 7).t(), r(33, scale=1.0)))       # transposed: copied by the op
    for x, b in out:
        x.requires_grad_(requires_grad)
        b.requires_grad_(requires_grad)
    return out


def values_match_eager(op, device, dtype=None, approximate="none"):
    """(ok, worst) of op against F.gelu(x + bias) on every sample, values and gradients."""
    dtype = dtype or torch.float32
    tol = {torch.float32: (1e-5, 1e-6), torch.float64: (1e-12, 1e-13)}[dtype]
    worst = 0.0
    ok = True
    for x, b in samples(device, dtype, True):
        y = op(x, b, approximate)
        x2, b2 = x.detach().clone().requires_grad_(), b.detach().clone().requires_grad_()
        want = F.gelu(x2 + b2, approximate=approximate)
        if y.numel():
            g = torch.randn(y.shape[::-1], dtype=dtype, device=device).transpose(0, -1)  # non-contiguous grad
            y.backward(g)
            want.backward(g)
            pairs = [(y, want), (x.grad, x2.grad), (b.grad, b2.grad)]
        else:
            pairs = [(y, want)]
        for got, exp in pairs:
            err = (got.detach() - exp.detach()).abs()
            bound = tol[1] + tol[0] * exp.detach().abs()
            if err.numel():
                worst = max(worst, float(err.max()))
                ok = ok and bool((err <= bound).all())
    return ok, worst


@unittest.skipIf(bool(REASON), REASON or "")
class Op(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.ops = cops.load()  # a failed build is an error here, never a skip

    def test_opcheck_all_checks(self):
        for device in devices():
            dtypes = [torch.float32, torch.float64] + ([torch.bfloat16] if device == "cuda" else [])
            for dtype in dtypes:
                for rg in (False, True):
                    for x, b in samples(device, dtype, rg):
                        for approx in ("none", "tanh"):
                            with self.subTest(device=device, dtype=str(dtype), shape=tuple(x.shape),
                                              stride=x.stride(), requires_grad=rg, approx=approx):
                                res = torch.library.opcheck(self.ops.bias_gelu.default, (x, b, approx))
                                self.assertTrue(all(v == "SUCCESS" for v in res.values()), res)
                                self.assertEqual(set(res), {"test_schema", "test_autograd_registration",
                                                            "test_faketensor", "test_aot_dispatch_dynamic"})
                    for x, b in samples(device, dtype, False):
                        gr = torch.ones_like(x)
                        res = torch.library.opcheck(self.ops.bias_gelu_backward.default, (gr, x, b, "none"))
                        self.assertTrue(all(v == "SUCCESS" for v in res.values()), res)

    def test_gradcheck_float64(self):
        for device in devices():
            for approx in ("none", "tanh"):
                for x, b in samples(device, torch.float64, True):
                    with self.subTest(device=device, shape=tuple(x.shape), approx=approx):
                        self.assertTrue(torch.autograd.gradcheck(
                            lambda a, c: self.ops.bias_gelu(a, c, approx), (x, b), eps=1e-6, atol=1e-8))

    def test_values_and_grads_match_eager(self):
        for device in devices():
            for dtype in (torch.float32, torch.float64):
                for approx in ("none", "tanh"):
                    ok, worst = values_match_eager(self.ops.bias_gelu, device, dtype, approx)
                    self.assertTrue(ok, f"{device} {dtype} {approx}: worst |op - eager| {worst:.3g}")

    @unittest.skipUnless(not REASON and torch.cuda.is_available(), "needs a CUDA device")
    def test_half_types_within_one_rounding_of_fp64(self):
        # The eager composition rounds z = x + bias to the half type, the fused op does not: both
        # are compared with the fp64 result instead, the op within one rounding (+ fp32 erf).
        for dtype, unit in ((torch.float16, 2**-11), (torch.bfloat16, 2**-8)):
            for x, b in samples("cuda", dtype, False):
                y = self.ops.bias_gelu(x, b, "none")
                exact = F.gelu(x.double() + b.double())
                err = (y.double() - exact).abs()
                self.assertTrue(bool((err <= 1e-6 + 1.01 * unit * exact.abs()).all()),
                                f"{dtype} {tuple(x.shape)}: worst {float(err.max()) if err.numel() else 0:.3g}")

    def test_bad_arguments_are_refused_with_their_name(self):
        x = torch.randn(4, 5)
        with self.assertRaisesRegex(RuntimeError, "'x' must end in a dimension of bias's size 4"):
            self.ops.bias_gelu(x, torch.randn(4), "none")
        with self.assertRaisesRegex(RuntimeError, "'bias' must be 1-D"):
            self.ops.bias_gelu(x, torch.randn(1, 5), "none")
        with self.assertRaisesRegex(RuntimeError, "'approximate'"):
            self.ops.bias_gelu(x, torch.randn(5), "fast")
        with self.assertRaisesRegex(RuntimeError, "'bias'"):
            self.ops.bias_gelu(x, torch.randn(5, dtype=torch.float64), "none")

    def test_one_cpp_runtime(self):
        # The built library must not carry a libstdc++ of its own (ops.py, "One C++ runtime per
        # process"): these are out-of-line members of the library, never instantiated by user code,
        # so a definition of one in the extension means a static copy of the library was linked in.
        import shutil
        import subprocess
        nm = shutil.which("nm")
        if nm is None:
            self.skipTest("nm (binutils) is not installed: the library's symbols cannot be read")
        lib = cops._loaded["library"]
        self.assertTrue(Path(lib).is_file(), f"{lib}: not built")
        out = subprocess.run([nm, "-C", "--defined-only", str(lib)], capture_output=True, text=True)
        if out.returncode != 0 or not out.stdout.strip():
            out = subprocess.run([nm, "-C", "-D", "--defined-only", str(lib)], capture_output=True, text=True)
        own = [ln for ln in out.stdout.splitlines()
               if "std::locale::classic()" in ln or "std::codecvt<char16_t, char" in ln
               or "std::ios_base::Init::Init()" in ln]
        self.assertEqual(own, [], f"{lib} defines libstdc++'s own functions (a static copy of the C++ "
                         f"runtime beside the process's): {own[:3]}")

    def test_compile_fullgraph_no_graph_break_no_recompile(self):
        from torch._dynamo.testing import CompileCounterWithBackend
        from torch._dynamo.utils import counters

        for device in devices():
            with self.subTest(device=device):
                torch._dynamo.reset()
                counters.clear()
                torch.manual_seed(0)
                mod = cops.make_module(torch)(24, 40).to(device)
                cnt = CompileCounterWithBackend("inductor")
                compiled = torch.compile(mod, backend=cnt, fullgraph=True)
                for batch in (3, 5, 8, 13, 21):
                    x = torch.randn(batch, 24, device=device)
                    torch._dynamo.mark_dynamic(x, 0)
                    got = compiled(x)
                    torch.testing.assert_close(got, F.gelu(mod.linear(x) + mod.bias), rtol=1e-4, atol=1e-5)
                self.assertEqual(dict(counters["graph_break"]), {}, "graph breaks")
                self.assertEqual(cnt.frame_count, 1, "compiled frames over 5 dynamic batch sizes")
                # The backward compiles too, and matches eager.
                x = torch.randn(7, 24, device=device, requires_grad=True)
                compiled(x).square().sum().backward()
                gx = x.grad.clone()
                x.grad = None
                F.gelu(mod.linear(x) + mod.bias).square().sum().backward()
                torch.testing.assert_close(gx, x.grad, rtol=1e-4, atol=1e-5)
                explained = torch._dynamo.explain(mod)(torch.randn(6, 24, device=device))
                self.assertEqual(explained.graph_break_count, 0)
                self.assertEqual(explained.graph_count, 1)


# Each error path in a child process: an argument error must reach Python as a RuntimeError
# naming the argument, whichever kernel raises it; a crash fails its test with the signal instead
# of ending the run. `x` (4, 5) against a bias of 4 elements.
ERROR_PATHS = {
    # Through the Autograd kernel (torch::autograd::Function), to the CPU kernel that raises.
    "through_autograd_kernel": "ops.bias_gelu(x, b, 'none')",
    "input_requires_grad": "ops.bias_gelu(x.requires_grad_(), b, 'none')",
    # Below autograd: the CPU kernel raises, reached first.
    "cpu_kernel_directly": "with torch._C._AutoDispatchBelowAutograd():\n    ops.bias_gelu(x, b, 'none')",
    # No Autograd kernel of ours: torch's autograd fallback calls the CPU kernel, which raises
    # below a frame of torch's.
    "below_torch_autograd_fallback": "ops.bias_gelu_backward(torch.randn(4, 5), x, b, 'none')",
}
CHILD = """
import sys, torch
sys.path.insert(0, {here!r})
import ops as cops
ops = cops.load()
x, b = torch.randn(4, 5), torch.randn(4)
try:
{call}
except RuntimeError as e:
    print("RAISED:", str(e).splitlines()[0])
else:
    print("NOT RAISED")
"""


@unittest.skipIf(bool(REASON), REASON or "")
class ErrorPaths(unittest.TestCase):
    """The same bad argument through every path a call can take to the kernel that refuses it."""

    def path(self, name):
        import subprocess
        call = "\n".join("    " + ln for ln in ERROR_PATHS[name].splitlines())
        code = CHILD.format(here=str(Path(__file__).resolve().parent), call=call)
        r = subprocess.run([sys.executable, "-X", "faulthandler", "-c", code], capture_output=True,
                           text=True, timeout=600)
        self.assertEqual(r.returncode, 0, f"{name}: the child ended with status {r.returncode} "
                         f"(negative: killed by that signal)\n{r.stderr[-3000:]}")
        self.assertIn("RAISED:", r.stdout, f"{name}: {r.stdout}")
        self.assertRegex(r.stdout, "'x' must end in a dimension of bias's size 4", name)

    def test_through_autograd_kernel(self):
        self.path("through_autograd_kernel")

    def test_input_requires_grad(self):
        self.path("input_requires_grad")

    def test_cpu_kernel_directly(self):
        self.path("cpu_kernel_directly")

    def test_below_torch_autograd_fallback(self):
        self.path("below_torch_autograd_fallback")


@unittest.skipIf(bool(REASON), REASON or "")
class MiniAutogradBesideTorch(unittest.TestCase):
    """The chapter's C++ mini autograd (reference/autograd*.cpp, CPU backend, through the operator
    cudalab::mini_autograd_mlp) against torch.autograd on the same weights and data."""

    @classmethod
    def setUpClass(cls):
        cls.ops = cops.load()

    def test_mlp_gradients_equal_torch_autograd(self):
        g = torch.Generator().manual_seed(1)
        for n, d_in, hid, d_out in ((64, 8, 32, 2), (37, 5, 19, 3)):
            x = torch.rand(n, d_in, generator=g) * 2 - 1
            y = torch.rand(n, d_out, generator=g) * 2 - 1
            w1 = ((torch.rand(d_in, hid, generator=g) * 2 - 1) / d_in**0.5).requires_grad_()
            b1 = ((torch.rand(hid, generator=g) * 2 - 1) / d_in**0.5).requires_grad_()
            w2 = ((torch.rand(hid, d_out, generator=g) * 2 - 1) / hid**0.5).requires_grad_()
            b2 = ((torch.rand(d_out, generator=g) * 2 - 1) / hid**0.5).requires_grad_()
            loss = F.mse_loss(F.gelu(x @ w1 + b1) @ w2 + b2, y)
            loss.backward()
            got = self.ops.mini_autograd_mlp(x, y, w1.detach(), b1.detach(), w2.detach(), b2.detach())
            torch.testing.assert_close(got[0], loss.detach(), rtol=1e-5, atol=1e-7)
            for name, mine, ref in zip(("dW1", "db1", "dW2", "db2"), got[1:], (w1, b1, w2, b2)):
                scale = float(ref.grad.abs().max())
                err = float((mine - ref.grad).abs().max())
                self.assertLessEqual(err, 1e-5 * scale + 1e-8, f"{name} ({n}x{d_in}->{hid}->{d_out}): "
                                     f"max |mini - torch| {err:.3g}, max |torch| {scale:.3g}")

    def test_bad_shapes_are_refused_with_their_name(self):
        x, y = torch.randn(4, 3), torch.randn(4, 2)
        with self.assertRaisesRegex(RuntimeError, "'b'"):  # matmul(x, w1): w1's rows != x's cols
            self.ops.mini_autograd_mlp(x, y, torch.randn(5, 6), torch.randn(6), torch.randn(6, 2), torch.randn(2))
        with self.assertRaisesRegex(RuntimeError, "'w1' must be a float32 CPU tensor"):
            self.ops.mini_autograd_mlp(x, y, torch.randn(3, 6).double(), torch.randn(6), torch.randn(6, 2),
                                       torch.randn(2))


@unittest.skipIf(bool(REASON), REASON or "")
class PlantedBug(unittest.TestCase):
    """extension-cpp#100's lesson: registrations that agree with each other pass opcheck, whatever
    the kernel computes. bias_gelu_planted always runs the tanh GELU (forward and backward alike,
    so even gradcheck passes); only a comparison of values with the specification catches it."""

    @classmethod
    def setUpClass(cls):
        cls.ops = cops.load()

    def test_opcheck_passes_the_planted_op(self):
        for device in devices():
            for x, b in samples(device, torch.float32, True):
                res = torch.library.opcheck(self.ops.bias_gelu_planted.default, (x, b, "none"))
                self.assertTrue(all(v == "SUCCESS" for v in res.values()), res)

    def test_gradcheck_passes_the_planted_op(self):
        for device in devices():
            for x, b in samples(device, torch.float64, True):
                self.assertTrue(torch.autograd.gradcheck(
                    lambda a, c: self.ops.bias_gelu_planted(a, c, "none"), (x, b), eps=1e-6, atol=1e-8))

    def test_value_test_catches_the_planted_op(self):
        for device in devices():
            ok, worst = values_match_eager(self.ops.bias_gelu_planted, device)
            self.assertFalse(ok, f"{device}: the value test let the planted op through (worst {worst:.3g})")
            self.assertGreater(worst, 1e-5)
            ok, worst = values_match_eager(self.ops.bias_gelu, device)
            self.assertTrue(ok, f"{device}: the real op fails the same test (worst {worst:.3g})")


if __name__ == "__main__":
    unittest.main()
