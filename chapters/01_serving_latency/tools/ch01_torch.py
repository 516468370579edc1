#!/usr/bin/env python3
"""Chapter 1: the same FFN block in PyTorch — eager, CUDA graphs, torch.compile — beside the C++ rows.

    chapters/01_serving_latency/tools/ch01_torch.py [--cpp bench_ch01.json] [--batches 1 4 16 64] [--reps 200] [--json OUT]

The block is bench_ch01's: y = x + W2 gelu_tanh(W1 LayerNorm(x) + b1) + b2, d 512, hidden 2048,
FP32 with TF32 off (the C++ kernels are FP32 FMA). Weights are random: timing does not depend on
their values. Each number is the host's wall clock of one forward plus torch.cuda.synchronize()
(median of --reps), as bench_ch01 measures. Rows:
  torch eager                 nn.Module call: one kernel per op, dispatched by Python
  torch eager, sync per op    the same ops with a torch.cuda.synchronize() after each (C++ "eager")
  torch CUDA graph            torch.cuda.CUDAGraph capture of the module, replayed (static buffers)
  torch.compile               mode="default" (Inductor fuses the elementwise ops; no graphs)
  torch.compile reduce-overhead   Inductor + CUDA graphs
Without torch (or without a GPU) it says so and exits 0. Not part of CI.
"""
from __future__ import annotations

import argparse
import json
import re
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(1, str(Path(__file__).resolve().parents[3] / "scripts"))
import report  # noqa: E402  (rows of a benchmark JSON: grouped(), row_median())

ROW = re.compile(r"^BM_block/(\w+)/batch:(\d+)")
CPP_MODES = {"eager_alloc": "C++ eager+alloc", "eager": "C++ eager", "fused": "C++ fused", "graph": "C++ graph"}


def cpp_rows(path: Path | None) -> dict[tuple[str, int], float]:
    """{(column, batch): median µs} from a bench_ch01 JSON (empty without one). A file that cannot
    be read or is not a Google Benchmark JSON object raises ValueError naming --cpp."""
    if path is None:
        return {}
    data = report.read_bench_json(path, "--cpp")
    out: dict[tuple[str, int], float] = {}
    # A row's value is the median over its repetitions, as scripts/results.py reports it.
    reps = report.grouped({"benchmarks": [b for b in data["benchmarks"] if isinstance(b, dict)]})
    for name, runs in reps.items():
        m = ROW.match(name)
        us = report.row_median(runs, "median_us") if m else None
        if us is not None:
            out[(CPP_MODES.get(m.group(1), m.group(1)), int(m.group(2)))] = float(us)
    return out


def _positive_int(text: str) -> int:
    """argparse type: an integer >= 1 (argparse names the option in its error)."""
    try:
        v = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not an integer: {text!r}") from None
    if v < 1:
        raise argparse.ArgumentTypeError(f"must be >= 1 (got {v})")
    return v


def markdown(results: dict[tuple[str, int], float], columns: list[str], batches: list[int]) -> str:
    lines = ["| batch | " + " | ".join(columns) + " |", "| ---: |" + " ---: |" * len(columns)]
    for b in batches:
        cells = [f"{results[(c, b)]:.1f}" if (c, b) in results else "—" for c in columns]
        lines.append(f"| {b} | " + " | ".join(cells) + " |")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--cpp", type=Path, help="bench_ch01 JSON to print beside the torch rows")
    p.add_argument("--batches", type=_positive_int, nargs="+", default=[1, 4, 16, 64])
    p.add_argument("--reps", type=_positive_int, default=200)
    p.add_argument("--json", type=Path, help="write the torch numbers here")
    a = p.parse_args(argv)
    try:
        results = cpp_rows(a.cpp)
    except ValueError as e:
        p.error(str(e))
    try:
        import torch  # noqa: PLC0415
    except ImportError:
        print("torch is not installed: no PyTorch rows (the C++ rows come from bench_ch01).")
        if results:
            print(markdown(results, list(CPP_MODES.values()), a.batches))
        return 0
    if not torch.cuda.is_available():
        print("torch has no CUDA device here: no PyTorch rows.")
        return 0

    torch.backends.cuda.matmul.allow_tf32 = False
    torch.backends.cudnn.allow_tf32 = False
    d, hidden = 512, 2048
    dev = torch.device("cuda")

    class Block(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.ln = torch.nn.LayerNorm(d, eps=1e-5)
            self.fc1 = torch.nn.Linear(d, hidden)
            self.fc2 = torch.nn.Linear(hidden, d)

        def forward(self, x):
            return x + self.fc2(torch.nn.functional.gelu(self.fc1(self.ln(x)), approximate="tanh"))

    def per_op_sync(m, x):  # the C++ "eager" mode: a host round trip after every op
        ops = [lambda t: m.ln(t), lambda t: t @ m.fc1.weight.t(), lambda t: t + m.fc1.bias,
               lambda t: torch.nn.functional.gelu(t, approximate="tanh"), lambda t: t @ m.fc2.weight.t(),
               lambda t: t + m.fc2.bias]
        t = x
        for op in ops:
            t = op(t)
            torch.cuda.synchronize()
        y = x + t
        torch.cuda.synchronize()
        return y

    def median_us(fn) -> float:
        for _ in range(20):
            fn()
        torch.cuda.synchronize()
        ts = []
        for _ in range(a.reps):
            t0 = time.perf_counter()
            fn()
            torch.cuda.synchronize()
            ts.append((time.perf_counter() - t0) * 1e6)
        return statistics.median(ts)

    model = Block().to(dev).eval()
    columns = list(CPP_MODES.values()) if results else []
    torch_cols = ["torch eager", "torch eager, sync per op", "torch CUDA graph", "torch.compile",
                  "torch.compile reduce-overhead"]
    columns += torch_cols
    compiled = {}
    for mode in ("default", "reduce-overhead"):
        try:
            compiled[mode] = torch.compile(model, mode=mode)
        except Exception as e:  # noqa: BLE001 — report and go on
            print(f"torch.compile(mode={mode!r}) failed: {e}")
    torch_results: dict[str, dict[int, float]] = {c: {} for c in torch_cols}
    with torch.inference_mode():
        for b in a.batches:
            x = torch.randn(b, d, device=dev)
            results[("torch eager", b)] = median_us(lambda: model(x))
            results[("torch eager, sync per op", b)] = median_us(lambda: per_op_sync(model, x))
            static_x = x.clone()
            side = torch.cuda.Stream()
            side.wait_stream(torch.cuda.current_stream())
            with torch.cuda.stream(side):
                for _ in range(3):
                    model(static_x)
            torch.cuda.current_stream().wait_stream(side)
            g = torch.cuda.CUDAGraph()
            with torch.cuda.graph(g):
                static_y = model(static_x)  # noqa: F841 — kept alive by the graph's pool
            results[("torch CUDA graph", b)] = median_us(g.replay)
            for mode, col in (("default", "torch.compile"), ("reduce-overhead", "torch.compile reduce-overhead")):
                if mode in compiled:
                    try:
                        results[(col, b)] = median_us(lambda: compiled[mode](x))
                    except Exception as e:  # noqa: BLE001
                        print(f"{col} at batch {b} failed: {e}")
            for c in torch_cols:
                if (c, b) in results:
                    torch_results[c][b] = results[(c, b)]
    print(f"FFN block d={d} hidden={hidden} FP32, µs per forward (host wall clock + sync, median of {a.reps}); "
          f"torch {torch.__version__}, {torch.cuda.get_device_name()}")
    print(markdown(results, columns, a.batches))
    if a.json:
        a.json.write_text(json.dumps({"torch": torch.__version__, "gpu": torch.cuda.get_device_name(),
                                      "median_us": torch_results}, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
