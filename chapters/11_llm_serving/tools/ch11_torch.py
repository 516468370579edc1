#!/usr/bin/env python3
"""Chapter 11: the tensor-core prefill beside torch's scaled_dot_product_attention (cuDNN, FlashAttention-2).

    chapters/11_llm_serving/tools/ch11_torch.py [--cpp bench_ch11.json] [--lengths 1024 4096 16384] [--reps 50] [--json OUT]

The shape is BM_prefill_tc's (bench/ch11/prefill.cpp, bench/ch11/ch11_bench.hpp): one sequence
(batch 1) of one Llama-3-8B layer, 32 query heads, 8 KV heads (GQA), head_dim 128, fp16, causal,
scale 1/sqrt(128), inputs uniform in [-1, 1) in the kernel's layout [token][head][dim] (viewed as
(batch, heads, tokens, dim)). The lengths are those of the BM_prefill_tc rows of --cpp, else the
bench's 1024 4096 16384. FLOPs are counted as the bench counts them, QK^T and PV over the causal
half: 4 * head_dim * q_heads * len (len + 1) / 2; a --cpp row that counts otherwise (its `flops`
counter) is refused: its shape is not this tool's. torch's backends, one at a time
(torch.nn.attention.sdpa_kernel):
  cudnn      SDPBackend.CUDNN_ATTENTION      cuDNN's fused SDPA (the issue's yardstick)
  flash      SDPBackend.FLASH_ATTENTION      FlashAttention-2
  efficient  SDPBackend.EFFICIENT_ATTENTION  memory-efficient attention (xFormers' kernel)
A backend that refuses GQA (enable_gqa) is timed again with K and V repeated to 32 heads (the same
attention; the cell is marked); one that refuses both is "n/a", with the reason torch gives. Each
time is CUDA events around one call, the median of --reps calls after a warm-up, queued behind a
GPU spin so that the host's dispatch is not timed; the lab's is
BM_prefill_tc's median_us (a GPU time per iteration; the median aggregate when the run has
repetitions; the bench synchronizes every iteration, so its time holds a launch's few µs and the
comparison leans, slightly, towards torch at 1024 tokens). The ratios are speeds: lab / cuDNN = cuDNN time / lab time. The goal (at 4096
tokens, head_dim 128): lab >= 0.5x cuDNN SDPA. Measured on this machine's GPU only.
Without torch (or without a GPU) it says so, prints the lab's rows of --cpp, and exits 0. Not part
of CI.
"""
from __future__ import annotations

import argparse
import json
import math
import re
import sys
import warnings
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[3]
sys.path.insert(1, str(ROOT / "scripts"))
import report  # noqa: E402  (rows of a benchmark JSON: grouped(), error_of(), row_median(), median())

EXIT_USAGE = 2
# BM_prefill_tc's shape (bench/ch11/ch11_bench.hpp: kQHeads, kKvHeads, kDim, kType; prefill.cpp: lengths).
BATCH, Q_HEADS, KV_HEADS, HEAD_DIM, DTYPE = 1, 32, 8, 128, "fp16"
LENGTHS = (1024, 4096, 16384)
ROW = re.compile(r"^BM_prefill_tc/b1_len(\d+)$")
# (key, torch's SDPBackend member, column)
BACKENDS = (("cudnn", "CUDNN_ATTENTION", "cuDNN SDPA"), ("flash", "FLASH_ATTENTION", "FlashAttention-2"),
            ("efficient", "EFFICIENT_ATTENTION", "memory-efficient"))
LAB = "lab mma.sync (BM_prefill_tc)"
RATIOS = (("cudnn", "lab / cuDNN"), ("flash", "lab / FA2"))
GOAL_LEN, GOAL = 4096, 0.5  # the issue's: at 4k tokens, head_dim 128, mma.sync >= 0.5x cuDNN SDPA
MAX_LEN, MAX_REPS, WARMUP = 1 << 18, 100_000, 5
# A GPU spin (torch.cuda._sleep, ~25 ms at 2 GHz) ahead of every SLEEP_EVERY timed calls: the host
# queues them meanwhile, so the events time the GPU's work, not Python's dispatch of a short call.
SLEEP_CYCLES, SLEEP_EVERY = 50_000_000, 100
KV_REPEATED = "K/V repeated to 32 heads"


class InputError(Exception):
    """A --cpp file that cannot be read as a bench_ch11 JSON (exit 2)."""


@dataclass
class Cell:
    """One measurement: a median time in µs, or none and the reason (`why`); a measured cell may
    carry a note (`why` again: how it was measured)."""
    us: float | None = None
    why: str = ""


def flops(length: int) -> float:
    """bench/ch11/prefill.cpp's count: QK^T and PV over the causal half, 2 * 2 * head_dim FLOPs per
    (query, key) pair and query head."""
    return 4.0 * HEAD_DIM * Q_HEADS * (0.5 * length * (length + 1.0))


def tflops(length: int, us: float) -> float:
    return flops(length) / (us * 1e-6) / 1e12


def speed_ratio(lab: Cell | None, other: Cell | None) -> float | None:
    """lab / other as speeds (other's time / lab's time), None unless both were measured."""
    if lab is None or other is None or not lab.us or not other.us:
        return None
    return other.us / lab.us


# ---- the lab's rows (bench_ch11 JSON) ------------------------------------------------------------

def lab_rows(path: Path | None) -> tuple[dict[int, Cell], str | None]:
    """({length: Cell} of BM_prefill_tc, the GPU of the run) from a bench_ch11 JSON (empty without
    one): a row's median_us, the median aggregate's when the run has repetitions, else the median of
    its repetitions."""
    if path is None:
        return {}, None
    try:
        data = report.read_bench_json(path, "--cpp")
    except ValueError as e:
        raise InputError(str(e)) from None
    entries = [b for b in data["benchmarks"] if isinstance(b, dict)]
    medians = {report.clean_name(b): b for b in entries
               if b.get("run_type") == "aggregate" and b.get("aggregate_name") == "median"}
    reps = report.grouped({"benchmarks": entries})
    out: dict[int, Cell] = {}
    for name in [*reps, *(n for n in medians if n not in reps)]:
        m = ROW.match(name)
        if not m:
            continue
        length = int(m.group(1))
        chosen = [medians[name]] if name in medians else reps[name]
        us = report.row_median(chosen, "median_us")
        if us is None:
            err = next((report.error_of(b) for b in reps.get(name, []) + chosen if report.error_of(b)), None)
            out[length] = Cell(why=err or "no median_us in the row")
            continue
        counted = chosen[0].get("flops")
        if isinstance(counted, (int, float)) and not math.isclose(counted, flops(length), rel_tol=1e-9):
            raise InputError(f"--cpp {path}: {name} counts {counted:.6g} FLOPs, this tool {flops(length):.6g} "
                             f"({Q_HEADS} heads x head_dim {HEAD_DIM}, causal half): the bench's shape is not "
                             "this tool's")
        out[length] = Cell(us=float(us))
    gpu = data.get("context", {}).get("gpu") if isinstance(data.get("context"), dict) else None
    return out, gpu


# ---- the table ----------------------------------------------------------------------------------

def columns() -> list[tuple[str, str]]:
    return [("lab", LAB), *((key, col) for key, _, col in BACKENDS)]


def cell_text(c: Cell | None, length: int, notes: list[str], where: str) -> str:
    if c is None:
        return "—"
    if c.us is None:
        notes.append(f"{where} at {length}: n/a, {c.why}")
        return "n/a"
    if c.why:
        notes.append(f"{where} at {length}: {c.why}")
        return f"{tflops(length, c.us):.1f}*"
    return f"{tflops(length, c.us):.1f}"


def markdown(results: dict[str, dict[int, Cell]], lengths: list[int]) -> str:
    """TFLOP/s per length and column (the bench's FLOP count), the lab / cuDNN and lab / FA2 speed
    ratios, then the notes: why a cell is n/a, how a starred one was measured."""
    cols = columns()
    head = [c for _, c in cols] + [label for _, label in RATIOS]
    lines = ["| tokens | " + " | ".join(head) + " |", "| ---: |" + " ---: |" * len(head)]
    notes: list[str] = []
    for n in lengths:
        cells = [cell_text(results.get(key, {}).get(n), n, notes, col) for key, col in cols]
        for key, _ in RATIOS:
            r = speed_ratio(results.get("lab", {}).get(n), results.get(key, {}).get(n))
            cells.append(report.fmt_ratio(r) if r is not None else "—")
        lines.append(f"| {n} | " + " | ".join(cells) + " |")
    lines += ["", *(f"- {s}" for s in notes)] if notes else []
    return "\n".join(lines)


def goal(results: dict[str, dict[int, Cell]]) -> dict:
    """The issue's goal: at GOAL_LEN tokens, lab >= GOAL x cuDNN SDPA (speed)."""
    lab, cudnn = results.get("lab", {}).get(GOAL_LEN), results.get("cudnn", {}).get(GOAL_LEN)
    r = speed_ratio(lab, cudnn)
    out = {"length": GOAL_LEN, "head_dim": HEAD_DIM, "goal": GOAL, "ratio": r, "met": None if r is None else r >= GOAL}
    what = f"goal at {GOAL_LEN} tokens, head_dim {HEAD_DIM}: lab mma.sync >= {report.fmt_ratio(GOAL)} cuDNN SDPA"
    if r is not None:
        out["text"] = f"{what}: {report.fmt_ratio(r)}, {'met' if out['met'] else 'MISSED'}"
    else:
        why = []
        if lab is None or lab.us is None:
            why.append(f"lab: {lab.why}" if lab else "no lab row (--cpp)")
        if cudnn is None or cudnn.us is None:
            why.append(f"cuDNN SDPA: {cudnn.why}" if cudnn else "cuDNN SDPA not run")
        out["text"] = f"{what}: not measured ({'; '.join(why)})"
    return out


def to_json(results: dict[str, dict[int, Cell]], lengths: list[int], meta: dict) -> dict:
    rows = {}
    for n in lengths:
        row: dict = {}
        for key, _ in columns():
            c = results.get(key, {}).get(n)
            if c is None:
                continue
            if c.us is None:
                row[key] = {"n/a": c.why}
            else:
                row[key] = {"median_us": c.us, "TFLOP/s": tflops(n, c.us)} | ({"note": c.why} if c.why else {})
        for key, label in RATIOS:
            row[label] = speed_ratio(results.get("lab", {}).get(n), results.get(key, {}).get(n))
        rows[str(n)] = row
    return {**meta, "shape": {"batch": BATCH, "q_heads": Q_HEADS, "kv_heads": KV_HEADS, "head_dim": HEAD_DIM,
                              "dtype": DTYPE, "causal": True},
            "flops": "4 * head_dim * q_heads * len * (len + 1) / 2", "rows": rows, "goal": goal(results)}


# ---- torch --------------------------------------------------------------------------------------

def load_torch():
    """(torch, scaled_dot_product_attention, sdpa_kernel, SDPBackend); ImportError without them."""
    import torch  # noqa: PLC0415
    from torch.nn.attention import SDPBackend, sdpa_kernel  # noqa: PLC0415
    from torch.nn.functional import scaled_dot_product_attention  # noqa: PLC0415
    return torch, scaled_dot_product_attention, sdpa_kernel, SDPBackend


def refusal(e: BaseException, caught: list) -> str:
    """One line saying why a backend did not run: the warnings torch gives with "No available
    kernel" (the real reason), else the exception's first line."""
    said = []
    for w in caught:
        line = str(w.message).strip().splitlines()[0] if str(w.message).strip() else ""
        if line and line not in said:
            said.append(line)
    first = str(e).strip().splitlines()[0] if str(e).strip() else type(e).__name__
    text = "; ".join(said) if said else first
    return " ".join(text.split()).replace("|", "/")[:300]


def attempt(timed) -> tuple[float | None, str]:
    """(µs, "") when timed() runs, else (None, the reason): never raises for a refused shape."""
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        try:
            return timed(), ""
        except Exception as e:  # noqa: BLE001 — a backend refusing the shape, the dtype or the memory
            return None, refusal(e, caught)


def backend_cell(gqa, repeated) -> Cell:
    """The cell of one backend: GQA as the kernel does it, else K and V repeated (marked), else n/a."""
    us, why = attempt(gqa)
    if us is not None:
        return Cell(us)
    us2, why2 = attempt(repeated)
    if us2 is not None:
        return Cell(us2, f"{KV_REPEATED} (GQA refused: {why})")
    return Cell(why=why if why == why2 else f"{why}; with {KV_REPEATED}: {why2}")


def measure(torch, sdpa, sdpa_kernel, backend_enum, lengths: list[int], reps: int) -> dict[str, dict[int, Cell]]:
    """{backend key: {length: Cell}}: torch's causal SDPA at BM_prefill_tc's shape."""
    dev = torch.device("cuda")

    def median_us(fn) -> float:
        for _ in range(WARMUP):
            fn()
        torch.cuda.synchronize()
        ev = [(torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)) for _ in range(reps)]
        for i, (a, b) in enumerate(ev):
            if i % SLEEP_EVERY == 0 and hasattr(torch.cuda, "_sleep"):
                torch.cuda._sleep(SLEEP_CYCLES)  # the GPU waits while the host queues the next calls
            a.record()
            fn()
            b.record()
        torch.cuda.synchronize()
        return report.median([a.elapsed_time(b) * 1e3 for a, b in ev])

    out: dict[str, dict[int, Cell]] = {key: {} for key, _, _ in BACKENDS}
    torch.manual_seed(11)
    for n in lengths:
        # The kernel's layout, [batch][token][head][dim], viewed as (batch, head, token, dim).
        q, k, v = (torch.empty(BATCH, n, h, HEAD_DIM, device=dev, dtype=torch.float16).uniform_(-1, 1).transpose(1, 2)
                   for h in (Q_HEADS, KV_HEADS, KV_HEADS))
        kv_rep: list = []  # K and V repeated to Q_HEADS heads, made once a length when a backend needs them

        def repeated_kv():
            if not kv_rep:
                kv_rep.extend(t.repeat_interleave(Q_HEADS // KV_HEADS, dim=1) for t in (k, v))
            return kv_rep

        for key, member, _ in BACKENDS:
            be = getattr(backend_enum, member, None)
            if be is None:
                out[key][n] = Cell(why=f"this torch ({torch.__version__}) has no SDPBackend.{member}")
                continue

            def gqa(be=be):
                with sdpa_kernel([be]):
                    return median_us(lambda: sdpa(q, k, v, is_causal=True, enable_gqa=True))

            def repeated(be=be):
                kk, vv = repeated_kv()
                with sdpa_kernel([be]):
                    return median_us(lambda: sdpa(q, kk, vv, is_causal=True))

            out[key][n] = backend_cell(gqa, repeated)
        q = k = v = None  # noqa: F841 — freed before the next length's
        kv_rep.clear()
        torch.cuda.empty_cache()
    return out


# ---- the command --------------------------------------------------------------------------------

class _Parser(argparse.ArgumentParser):
    def error(self, message: str):  # one line, exit 2, never a traceback
        self.exit(EXIT_USAGE, f"ch11_torch: {message} (--help lists the options)\n")


def _bounded(hi: int, what: str):
    """An argparse type: a whole number from 1 to hi, else a message naming what it should be."""
    def parse(text: str) -> int:
        try:
            n = int(text)
        except ValueError:
            n = None
        if n is None or not 1 <= n <= hi:
            raise argparse.ArgumentTypeError(f"{text!r} is not {what} from 1 to {hi}")
        return n
    return parse


def main(argv: list[str] | None = None) -> int:
    p = _Parser(prog="ch11_torch.py", description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--cpp", type=Path, help="bench_ch11 JSON (--benchmark_out): its BM_prefill_tc rows, beside")
    p.add_argument("--lengths", type=_bounded(MAX_LEN, "a length in tokens"), nargs="+",
                   help="prompt lengths (default: those of --cpp's BM_prefill_tc rows, else 1024 4096 16384)")
    p.add_argument("--reps", type=_bounded(MAX_REPS, "a count of calls"), default=50,
                   help="timed calls per backend and length (default 50)")
    p.add_argument("--json", type=Path, help="write the numbers here")
    a = p.parse_args(argv)
    if a.json and not a.json.resolve().parent.is_dir():
        p.error(f"argument --json: {a.json.parent} is not a folder")
    try:
        lab, lab_gpu = lab_rows(a.cpp)
    except InputError as e:
        print(f"ch11_torch: {e}", file=sys.stderr)
        return EXIT_USAGE
    if a.cpp and not lab:
        print(f"{a.cpp} has no BM_prefill_tc rows: no lab column (bench_ch11 --benchmark_filter=BM_prefill_tc "
              "writes them).")
    lengths = list(dict.fromkeys(a.lengths or sorted(lab) or LENGTHS))
    results: dict[str, dict[int, Cell]] = {"lab": lab}
    meta = {"cpp": str(a.cpp) if a.cpp else None, "cpp_gpu": lab_gpu, "torch": None, "gpu": None, "reps": a.reps}
    shape = (f"causal prefill, batch {BATCH}, {Q_HEADS} query heads, {KV_HEADS} KV heads, head_dim {HEAD_DIM}, "
             f"{DTYPE}")
    try:
        torch, sdpa, sdpa_kernel, backend_enum = load_torch()
    except ImportError as e:
        meta["no_torch_rows"] = f"torch is not installed ({e})"
        print("torch is not installed: no PyTorch rows (the lab's rows come from bench_ch11).")
    else:
        meta["torch"] = torch.__version__
        if not torch.cuda.is_available():
            meta["no_torch_rows"] = "torch has no CUDA device here"
            print("torch has no CUDA device here: no PyTorch rows.")
        else:
            meta["gpu"] = torch.cuda.get_device_name()
            with torch.inference_mode():
                results.update(measure(torch, sdpa, sdpa_kernel, backend_enum, lengths, a.reps))
            print(f"{shape}; TFLOP/s (the bench's FLOPs: causal half), torch SDPA timed with CUDA events "
                  f"(median of {a.reps}); torch {torch.__version__}, {meta['gpu']}")
            if lab and lab_gpu and lab_gpu != meta["gpu"]:
                print(f"note: the lab's rows were measured on {lab_gpu} ({a.cpp}), torch's on {meta['gpu']}: "
                      "the ratios compare two GPUs")
    if lab or "no_torch_rows" not in meta:
        if "no_torch_rows" in meta:
            print(f"{shape}; TFLOP/s (the bench's FLOPs: causal half) of {a.cpp}"
                  + (f", measured on {lab_gpu}" if lab_gpu else ""))
        print(markdown(results, lengths))
        print(goal(results)["text"])
    if a.json:
        a.json.write_text(json.dumps(to_json(results, lengths, meta), indent=2) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
