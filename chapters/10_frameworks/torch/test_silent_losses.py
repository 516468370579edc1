"""Chapter 10: each silent loss of torch.compile and mixed precision detected by a test (CPU
where the trap exists on the CPU, CUDA where it needs one; skipped with the reason otherwise).
Their costs are measured by silent_losses.py on the H200.
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

    import traps

CUDA = not REASON and torch.cuda.is_available()


@unittest.skipIf(bool(REASON), REASON or "")
class GraphBreaks(unittest.TestCase):
    def test_print_item_and_branch_break_the_graph_where_does_not(self):
        x = torch.randn(64, 64)
        for name in ("print", "item", "branch"):
            breaks, graphs = traps.graph_breaks(torch, traps.BLOCKS[name], x)
            self.assertGreaterEqual(breaks, 1, f"{name}: expected a graph break")
            self.assertGreaterEqual(graphs, 2, name)
        self.assertEqual(traps.graph_breaks(torch, traps.block_clean, x), (0, 1))

    def test_fullgraph_turns_the_silent_break_into_an_error(self):
        for name in ("print", "branch"):
            torch._dynamo.reset()
            f = torch.compile(traps.BLOCKS[name], fullgraph=True, backend="eager")
            with self.assertRaises(Exception, msg=name):  # torch._dynamo.exc.Unsupported
                f(torch.randn(8, 8))


@unittest.skipIf(bool(REASON), REASON or "")
class Recompiles(unittest.TestCase):
    def test_the_limit_is_read_under_its_version_s_name(self):
        name = traps.recompile_limit_name(torch)
        self.assertIn(name, ("recompile_limit", "cache_size_limit"))
        self.assertEqual(traps.recompile_limit(torch), 8, "PyTorch's default limit is 8")

    def test_static_shapes_recompile_up_to_the_limit_then_run_eager_silently(self):
        shapes = [(n, 16) for n in (3, 5, 7, 9, 11, 13, 15)]
        frames, ok = traps.count_frames(torch, shapes, dynamic=False, limit=4)
        self.assertEqual(frames, 4, "one compile per shape until the limit, then none")
        self.assertTrue(ok, "past the limit the results are still right: only the speed is lost")

    def test_mark_dynamic_compiles_once(self):
        shapes = [(n, 16) for n in (3, 5, 7, 9, 11, 13, 15)]
        frames, ok = traps.count_frames(torch, shapes, dynamic=None, mark=True)
        self.assertEqual(frames, 1)
        self.assertTrue(ok)

    def test_automatic_dynamic_recompiles_once(self):
        # dynamic=None (the default): the second shape recompiles with a symbolic size, then none.
        shapes = [(n, 16) for n in (3, 5, 7, 9, 11)]
        frames, ok = traps.count_frames(torch, shapes, dynamic=None)
        self.assertEqual(frames, 2)
        self.assertTrue(ok)


@unittest.skipIf(bool(REASON), REASON or "")
class NonContiguousIntoTheOp(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.ops = cops.load()

    def copies(self, x, b):
        from torch.profiler import ProfilerActivity, profile

        with profile(activities=[ProfilerActivity.CPU]) as prof:
            self.ops.bias_gelu(x, b, "none")
        return sum(e.count for e in prof.key_averages() if e.key in ("aten::copy_", "aten::clone"))

    def test_row_strided_is_read_in_place_transposed_is_copied(self):
        b = torch.randn(17)
        self.assertEqual(self.copies(torch.randn(9, 24)[:, :17], b), 0, "a row slice needs no copy")
        self.assertEqual(self.copies(torch.randn(9, 17), b), 0)
        self.assertGreaterEqual(self.copies(torch.randn(17, 9).t(), b), 1,
                                "a transposed input is copied: correct, and one more pass over memory")


@unittest.skipIf(bool(REASON), REASON or "")
class MixedPrecisionInTorch(unittest.TestCase):
    def test_fp16_flushes_small_gradients_bf16_keeps_them(self):
        g = torch.tensor([1e-8, 3e-8, 1e-6])
        self.assertEqual(g.half()[0].item(), 0.0)
        self.assertTrue(bool((g.bfloat16() != 0).all()))
        self.assertEqual((torch.tensor(1.0) + 2**-9).bfloat16().item(), 1.0)

    def test_gradscaler_skips_the_step_on_inf_and_backs_off(self):
        p = torch.nn.Parameter(torch.ones(3))
        opt = torch.optim.SGD([p], lr=0.1)
        scaler = torch.amp.GradScaler("cuda" if CUDA else "cpu", init_scale=1024.0)
        if CUDA:
            p.data = p.data.cuda()
        loss = (p * float("inf")).sum()
        scaler.scale(loss).backward()
        before = p.detach().clone()
        scaler.step(opt)
        scaler.update()
        self.assertTrue(torch.equal(p.detach(), before), "the step must be skipped")
        self.assertEqual(scaler.get_scale(), 512.0)

    def test_cpu_autocast_casts_gemms_down_and_losses_up(self):
        d = traps.autocast_dtypes(torch, "cpu", torch.bfloat16)
        self.assertEqual(d["matmul"], "bfloat16")
        self.assertEqual(d["mse_loss"], "float32")

    @unittest.skipUnless(CUDA, "CUDA autocast's fp32 list (softmax) needs a CUDA device")
    def test_cuda_autocast_keeps_softmax_in_fp32(self):
        # CPU autocast leaves a bf16 softmax in bf16: the lists differ by device.
        d = traps.autocast_dtypes(torch, "cuda", torch.float16)
        self.assertEqual(d["matmul"], "float16")
        self.assertEqual(d["linear"], "float16")
        for op in ("softmax", "log_softmax", "layer_norm", "sum", "mse_loss"):
            self.assertEqual(d[op], "float32", f"{op} on a float16 input under autocast")
        self.assertEqual(d["gelu"], "float16", "an op on neither list keeps its input's type")


@unittest.skipUnless(CUDA, REASON or "needs a CUDA device (host syncs, TF32, CUDA graphs)")
class CudaTraps(unittest.TestCase):
    def test_host_syncs_in_the_loop_are_caught_by_sync_debug_mode(self):
        torch.manual_seed(0)
        model = torch.nn.Linear(64, 1).cuda()
        opt = torch.optim.SGD(model.parameters(), lr=0.01)
        x, y = torch.randn(256, 64, device="cuda"), torch.randn(256, 1, device="cuda")
        traps.train_loop(torch, model, opt, x, y, 2, False)  # warm-up (lazy init may sync)
        torch.cuda.synchronize()
        torch.cuda.set_sync_debug_mode("error")
        try:
            with self.assertRaises(RuntimeError):
                traps.train_loop(torch, model, opt, x, y, 3, True)
            torch.cuda.set_sync_debug_mode("error")
            # The fixed loop: no sync until the single read after it (which is allowed outside).
            losses = None
            try:
                for _ in range(3):
                    opt.zero_grad(set_to_none=True)
                    loss = torch.nn.functional.mse_loss(model(x), y)
                    loss.backward()
                    opt.step()
                    losses = loss.detach()
            finally:
                torch.cuda.set_sync_debug_mode("default")
            self.assertTrue(bool(torch.isfinite(losses)))
        finally:
            torch.cuda.set_sync_debug_mode("default")

    def test_timing_without_synchronize_measures_the_launch(self):
        m = torch.randn(4096, 4096, device="cuda")
        m @ m  # cuBLAS initialized, kernel chosen
        gpu = traps.event_us(torch, lambda: m @ m, reps=5)
        host = min(traps.host_clock_us(torch, lambda: m @ m) for _ in range(5))
        self.assertLess(host, 0.5 * gpu, f"unsynchronized host clock {host:.0f} µs vs GPU time {gpu:.0f} µs")
        self.assertGreater(traps.wall_us(torch, lambda: m @ m, reps=3), 0.9 * gpu, "synchronized: the real time")

    def test_tf32_is_off_for_matmul_by_default_and_costs_precision(self):
        self.assertFalse(traps.tf32_matmul_enabled(torch), "matmul TF32 is off by default since 1.12")
        a = torch.randn(1024, 1024, device="cuda")
        b = torch.randn(1024, 1024, device="cuda")
        exact = a.double() @ b.double()
        try:
            traps.set_tf32_matmul(torch, False)
            e_ieee = float(((a @ b).double() - exact).abs().max() / exact.abs().max())
            traps.set_tf32_matmul(torch, True)
            e_tf32 = float(((a @ b).double() - exact).abs().max() / exact.abs().max())
        finally:
            traps.set_tf32_matmul(torch, False)
        self.assertGreater(e_tf32, 10 * e_ieee, f"TF32 {e_tf32:.2g} vs IEEE fp32 {e_ieee:.2g}")
        self.assertTrue(traps.cudnn_tf32_enabled(torch), "cuDNN convolutions do use TF32 by default")

    def test_reduce_overhead_recompiles_and_rerecords_on_new_shapes(self):
        from torch._dynamo.utils import counters

        torch._dynamo.reset()
        counters.clear()
        f = torch.compile(traps.shape_fn, mode="reduce-overhead", dynamic=False)
        for n in (64, 64, 64, 96, 128, 96):
            f(torch.randn(n, 256, device="cuda"))
        self.assertGreaterEqual(counters["stats"]["unique_graphs"], 3, dict(counters["stats"]))


if __name__ == "__main__":
    unittest.main()
