#!/usr/bin/env python3
"""Chapter 10: what each silent loss costs, measured (a CUDA GPU; the tests that detect them are
test_silent_losses.py).

    python3 chapters/10_frameworks/torch/silent_losses.py [--json OUT.json]

Rows (medians of CUDA-event or synchronized wall-clock timings; compile times are one-off):
  graph breaks     the same elementwise block on 4096 x 4096: clean (1 graph) vs print / .item() /
                   data-dependent branch (2+ graphs, the tensor written and read between them)
  recompiles       10 batch sizes under dynamic=False: the first-call (compile) time of each, the
                   limit (recompile_limit, default 8) after which Dynamo runs eager, the per-call
                   time past it vs compiled; and mark_dynamic (one compile)
  host syncs       100 SGD steps of a small MLP with .item()/.cpu()/nonzero() every step vs
                   losses kept on the device
  timing           a 4096^3 matmul timed by the host clock without synchronize vs with it
  non-contiguous   the custom op on a transposed input vs the same values contiguous
  CUDA graphs      mode="reduce-overhead": per-call time at one shape vs cycling 4 shapes
  TF32             4096^3 fp32 matmul: error vs fp64 and time, TF32 off (default) and on
  autocast         the dtype of each op's output under autocast(float16)
Without torch or a GPU it says so and exits 0.
"""
from __future__ import annotations

import argparse
import contextlib
import io
import json
import statistics
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import ops as cops  # noqa: E402


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--json", type=Path)
    a = p.parse_args(argv)
    reason = cops.torch_missing_reason()
    if reason:
        print(reason)
        return 0
    import torch

    import traps

    if not torch.cuda.is_available():
        print("torch has no CUDA device here: nothing to measure (test_silent_losses.py runs on the CPU).")
        return 0
    res: dict = {"torch": torch.__version__, "device": torch.cuda.get_device_name()}
    rows: list[tuple[str, str, str]] = []  # (trap, measurement, value)
    quiet = contextlib.redirect_stdout(io.StringIO())

    # Graph breaks.
    x = torch.randn(4096, 4096, device="cuda")
    gb = {}
    for name, fn in traps.BLOCKS.items():
        breaks, graphs = traps.graph_breaks(torch, fn, x)
        torch._dynamo.reset()
        f = torch.compile(fn)
        with quiet:
            us = traps.event_us(torch, lambda: f(x))
        gb[name] = {"breaks": breaks, "graphs": graphs, "us": us}
        rows.append(("graph breaks", f"{name}: {breaks} breaks, {graphs} graphs", f"{us:.1f} µs"))
    res["graph_breaks"] = gb

    # Recompiles: 12 static shapes.
    limit = traps.recompile_limit(torch)
    torch._dynamo.reset()
    f = torch.compile(traps.shape_fn, dynamic=False)
    first_call = []
    for n in range(1, 11):
        xs = torch.randn(1024 + 64 * n, 1024, device="cuda")
        first_call.append(traps.wall_us(torch, lambda: f(xs), reps=1))
    past = torch.randn(1024 + 64 * 10, 1024, device="cuda")   # compiled? no: past the limit
    inside = torch.randn(1024 + 64 * 1, 1024, device="cuda")  # compiled
    us_past = traps.event_us(torch, lambda: f(past))
    us_inside = traps.event_us(torch, lambda: f(inside))
    eager_past = traps.event_us(torch, lambda: traps.shape_fn(past))
    torch._dynamo.reset()
    fd = torch.compile(traps.shape_fn)
    dyn_first = []
    for n in range(1, 11):
        xs = torch.randn(1024 + 64 * n, 1024, device="cuda")
        torch._dynamo.mark_dynamic(xs, 0)
        dyn_first.append(traps.wall_us(torch, lambda: fd(xs), reps=1))
    res["recompiles"] = {"limit": limit, "limit_name": traps.recompile_limit_name(torch),
                         "first_call_us_static": first_call, "first_call_us_mark_dynamic": dyn_first,
                         "per_call_us_past_limit": us_past, "per_call_us_compiled": us_inside,
                         "per_call_us_eager_same_shape": eager_past}
    rows.append(("recompiles", f"10 shapes, dynamic=False: sum of first calls (limit {limit})",
                 f"{sum(first_call) / 1e3:.0f} ms"))
    rows.append(("recompiles", "10 shapes, mark_dynamic: sum of first calls", f"{sum(dyn_first) / 1e3:.0f} ms"))
    rows.append(("recompiles", "a shape past the limit (eager, silently) vs a compiled one",
                 f"{us_past:.1f} vs {us_inside:.1f} µs (eager {eager_past:.1f})"))

    # Host syncs in a training loop.
    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Linear(256, 256), torch.nn.GELU(), torch.nn.Linear(256, 1)).cuda()
    opt = torch.optim.SGD(model.parameters(), lr=1e-3)
    xb, yb = torch.randn(512, 256, device="cuda"), torch.randn(512, 1, device="cuda")
    traps.train_loop(torch, model, opt, xb, yb, 5, False)
    sync = traps.wall_us(torch, lambda: traps.train_loop(torch, model, opt, xb, yb, 100, True), reps=5)
    nosync = traps.wall_us(torch, lambda: traps.train_loop(torch, model, opt, xb, yb, 100, False), reps=5)
    res["host_syncs"] = {"us_per_step_sync": sync / 100, "us_per_step_device": nosync / 100}
    rows.append(("host syncs", "100 steps, .item()/.cpu()/nonzero() each step vs none",
                 f"{sync / 100:.1f} vs {nosync / 100:.1f} µs/step ({sync / nosync:.2f}x)"))

    # Timing without synchronizing.
    m = torch.randn(4096, 4096, device="cuda")
    m @ m
    unsynced = traps.host_clock_us(torch, lambda: m @ m)
    synced = traps.wall_us(torch, lambda: m @ m, reps=5)
    res["timing"] = {"unsynchronized_us": unsynced, "synchronized_us": synced}
    rows.append(("timing", "4096^3 matmul, host clock without / with synchronize",
                 f"{unsynced:.1f} vs {synced:.1f} µs"))

    # Non-contiguous into the custom op.
    ops = cops.load()
    xc = torch.randn(8192, 4096, device="cuda", dtype=torch.bfloat16)
    xt = xc.t().contiguous().t()
    bb = torch.randn(4096, device="cuda", dtype=torch.bfloat16)
    c_us = traps.event_us(torch, lambda: ops.bias_gelu(xc, bb, "none"))
    t_us = traps.event_us(torch, lambda: ops.bias_gelu(xt, bb, "none"))
    res["non_contiguous"] = {"contiguous_us": c_us, "transposed_us": t_us}
    rows.append(("non-contiguous", "custom op 8192x4096 bf16, contiguous vs transposed input",
                 f"{c_us:.1f} vs {t_us:.1f} µs ({t_us / c_us:.2f}x)"))

    # CUDA graphs with changing shapes.
    torch._dynamo.reset()
    g = torch.compile(traps.shape_fn, mode="reduce-overhead", dynamic=False)
    fixed = [torch.randn(64, 256, device="cuda") for _ in range(4)]
    varying = [torch.randn(n, 256, device="cuda") for n in (64, 96, 128, 160)]
    first = []
    for t in fixed[:1] + varying[1:]:  # each new shape's first call: compile + record
        first.append(traps.wall_us(torch, lambda t=t: g(t), reps=1))
    for t in fixed + varying:  # the graphs of every shape recorded and warm
        g(t)
        g(t)
    us_fixed = traps.wall_us(torch, lambda: [g(t) for t in fixed], reps=20) / 4
    us_vary = traps.wall_us(torch, lambda: [g(t) for t in varying], reps=20) / 4
    res["cuda_graphs"] = {"us_per_call_fixed": us_fixed, "us_per_call_4_shapes_warm": us_vary,
                          "first_call_us_per_new_shape": first}
    rows.append(("CUDA graphs", "reduce-overhead: 1 shape vs 4 shapes (all recorded), per call",
                 f"{us_fixed:.1f} vs {us_vary:.1f} µs"))
    rows.append(("CUDA graphs", "each new shape's first call (compile + record)",
                 f"{statistics.median(first) / 1e3:.0f} ms median"))

    # TF32.
    a_, b_ = torch.randn(4096, 4096, device="cuda"), torch.randn(4096, 4096, device="cuda")
    exact = a_.double() @ b_.double()
    tf = {}
    default_on = traps.tf32_matmul_enabled(torch)
    try:
        for on in (False, True):
            traps.set_tf32_matmul(torch, on)
            err = float(((a_ @ b_).double() - exact).abs().max() / exact.abs().max())
            us = traps.event_us(torch, lambda: a_ @ b_)
            tf["tf32" if on else "ieee"] = {"rel_error": err, "us": us, "tflops": 2 * 4096**3 / us / 1e6}
    finally:
        traps.set_tf32_matmul(torch, default_on)
    res["tf32"] = dict(tf, default_matmul_tf32=default_on, default_cudnn_tf32=traps.cudnn_tf32_enabled(torch))
    rows.append(("TF32", f"4096^3 fp32 matmul, default {'TF32' if default_on else 'IEEE fp32'}: IEEE vs TF32 error",
                 f"{tf['ieee']['rel_error']:.2g} vs {tf['tf32']['rel_error']:.2g}"))
    rows.append(("TF32", "IEEE vs TF32 time", f"{tf['ieee']['us']:.0f} vs {tf['tf32']['us']:.0f} µs "
                 f"({tf['ieee']['us'] / tf['tf32']['us']:.1f}x)"))

    # Autocast.
    res["autocast_float16"] = traps.autocast_dtypes(torch, "cuda", torch.float16)
    rows.append(("autocast fp16", "output dtypes", ", ".join(f"{k} {v}" for k, v in res["autocast_float16"].items())))

    print(f"## silent losses, {res['device']}, torch {torch.__version__}\n")
    print("| trap | measurement | value |\n| --- | --- | --- |")
    for r in rows:
        print(f"| {r[0]} | {r[1]} | {r[2]} |")
    if a.json:
        a.json.write_text(json.dumps(res, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
