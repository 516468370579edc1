"""Chapter 10: the silent losses of torch.compile and mixed precision, as small functions that
test_silent_losses.py detects and silent_losses.py measures (one owner for each trap).

Each trap has a version that loses and the fix:
  graph breaks      print / .item() / a Python `if` on a tensor   -> torch.where, no host value
  recompiles        new shapes under dynamic=False, past the recompile limit -> eager, silently
                                                                  -> mark_dynamic / dynamic=True
  host syncs        .item(), .cpu(), nonzero() in the step        -> keep values on the device
  timing            a wall clock without torch.cuda.synchronize() -> CUDA events / synchronize
  non-contiguous    a transposed tensor into the custom op        -> the copy it hides (measured)
  CUDA graphs       mode="reduce-overhead" with changing shapes   -> fixed (bucketed) shapes
  TF32              allow_tf32 / fp32_precision defaults          -> the error it costs, the speed
  autocast          which ops run in half and which stay fp32 (softmax)
"""
from __future__ import annotations

import contextlib
import statistics
import time

try:
    import torch
except ImportError:  # the tests skip, the scripts say so; nothing here runs without torch
    torch = None


def recompile_limit_name(torch) -> str:
    """The Dynamo setting that caps recompiles of one frame: recompile_limit since 2.6 (the 2.11
    name), cache_size_limit before."""
    cfg = torch._dynamo.config
    return "recompile_limit" if hasattr(cfg, "recompile_limit") else "cache_size_limit"


def recompile_limit(torch) -> int:
    return int(getattr(torch._dynamo.config, recompile_limit_name(torch)))


@contextlib.contextmanager
def patched_recompile_limit(torch, value: int):
    name = recompile_limit_name(torch)
    with torch._dynamo.config.patch(**{name: value}):
        yield


# --- timing: the fix of "timing without synchronizing" ------------------------------------

def host_clock_us(torch, fn) -> float:
    """The trap: the host's clock around fn() with no synchronize: it measures the launch (the
    call returns as soon as the work is queued), not the GPU's time."""
    torch.cuda.synchronize()
    t0 = time.perf_counter()
    fn()
    us = (time.perf_counter() - t0) * 1e6
    torch.cuda.synchronize()
    return us


def event_us(torch, fn, reps: int = 20, warmup: int = 3, back_to_back: bool = False) -> float:
    """Median GPU time of fn() in µs, by CUDA events around each call (after warm-up).

    back_to_back=False waits after every call, so each interval holds the host's dispatch of the
    call too. back_to_back=True issues the calls as a model's forward does and waits once at the
    end: the host runs ahead, and each interval is the GPU's time for that call (its launch
    overhead hidden behind the previous call's kernels, as long as they outlast it)."""
    for _ in range(warmup):
        fn()
    torch.cuda.synchronize()
    pairs = []
    for _ in range(reps):
        a, b = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        a.record()
        fn()
        b.record()
        if not back_to_back:
            b.synchronize()
        pairs.append((a, b))
    torch.cuda.synchronize()
    return statistics.median(a.elapsed_time(b) * 1e3 for a, b in pairs)


def wall_us(torch, fn, reps: int = 10) -> float:
    """Median host wall clock of fn() in µs, the device synchronized before and after."""
    ts = []
    for _ in range(reps):
        torch.cuda.synchronize()
        t0 = time.perf_counter()
        fn()
        torch.cuda.synchronize()
        ts.append((time.perf_counter() - t0) * 1e6)
    return statistics.median(ts)


# --- graph breaks: the same block four ways ---------------------------------------------------

def block_print(x):
    y = x.sin() * 2
    print("debug: in block")  # Python side effect: Dynamo cannot put it in a graph
    return (y + 1).cos()


def block_item(x):
    y = x.sin() * 2
    s = y.mean().item()  # a host value: the graph ends here (and the GPU is synced)
    return (y + s).cos()


def block_branch(x):
    y = x.sin() * 2
    if y.mean() > 0:  # data-dependent control flow: a graph break
        return (y + 1).cos()
    return (y - 1).cos()


def block_clean(x):
    y = x.sin() * 2
    return torch.where(y.mean() > 0, (y + 1).cos(), (y - 1).cos())  # both sides, on the device


BLOCKS = {"print": block_print, "item": block_item, "branch": block_branch, "clean": block_clean}


def graph_breaks(torch, fn, x) -> tuple[int, int]:
    """(graph breaks, graphs) of fn(x) by torch._dynamo.explain."""
    torch._dynamo.reset()
    with contextlib.redirect_stdout(None):
        e = torch._dynamo.explain(fn)(x)
    return e.graph_break_count, e.graph_count


# --- recompiles -------------------------------------------------------------------------------

def shape_fn(x):
    return (x * 2 + 1).relu().sum(dim=-1)


def count_frames(torch, shapes, *, dynamic, limit=None, mark=False, device="cpu"):
    """Compiles shape_fn with a counting backend, calls it on each shape; returns (frames
    compiled, results correct)."""
    from torch._dynamo.testing import CompileCounter

    torch._dynamo.reset()
    cnt = CompileCounter()
    f = torch.compile(shape_fn, backend=cnt, dynamic=dynamic)
    ok = True
    ctx = patched_recompile_limit(torch, limit) if limit is not None else contextlib.nullcontext()
    with ctx:
        for s in shapes:
            x = torch.randn(*s, device=device)
            if mark:
                torch._dynamo.mark_dynamic(x, 0)
            ok = ok and torch.allclose(f(x), shape_fn(x))
    return cnt.frame_count, ok


# --- host syncs in a training loop ------------------------------------------------------------

def train_loop(torch, model, opt, x, y, steps: int, sync_every_step: bool):
    """SGD steps on (x, y); with sync_every_step the loop reads the loss (.item()), copies the
    predictions to the host (.cpu()) and selects with nonzero, as logging code does: each is a
    host sync. Without, the losses stay on the device and are read once at the end."""
    losses = []
    for _ in range(steps):
        opt.zero_grad(set_to_none=True)
        pred = model(x)
        loss = torch.nn.functional.mse_loss(pred, y)
        loss.backward()
        opt.step()
        if sync_every_step:
            losses.append(loss.item())
            _ = pred.detach().cpu()
            _ = (pred.detach() > 0).nonzero()
        else:
            losses.append(loss.detach())
    if not sync_every_step:
        losses = torch.stack(losses).tolist()  # one sync, after the loop
    return losses


# --- TF32 -------------------------------------------------------------------------------------

def tf32_matmul_enabled(torch) -> bool:
    m = torch.backends.cuda.matmul
    if hasattr(m, "fp32_precision"):  # 2.9+: 'ieee' (the default) or 'tf32'
        return m.fp32_precision == "tf32"
    return bool(m.allow_tf32)


def set_tf32_matmul(torch, on: bool) -> None:
    m = torch.backends.cuda.matmul
    if hasattr(m, "fp32_precision"):
        m.fp32_precision = "tf32" if on else "ieee"
    else:
        m.allow_tf32 = on


def cudnn_tf32_enabled(torch) -> bool:
    c = torch.backends.cudnn
    conv = getattr(c, "conv", None)
    if conv is not None and hasattr(conv, "fp32_precision"):
        return conv.fp32_precision in ("tf32", "none") and bool(c.allow_tf32)
    return bool(c.allow_tf32)


# --- autocast ---------------------------------------------------------------------------------

def autocast_dtypes(torch, device: str, dtype) -> dict[str, str]:
    """The output dtype of a few ops inside autocast(device, dtype): the GEMMs on fp32 inputs
    (autocast casts them down), the others on inputs already in `dtype` (an op on autocast's fp32
    list casts them up; any other op keeps the input's type)."""
    F = torch.nn.functional
    a = torch.randn(16, 16, device=device)
    h = a.to(dtype)
    out = {}
    with torch.autocast(device_type=device, dtype=dtype):
        out["matmul"] = a @ a
        out["linear"] = F.linear(a, a)
        out["softmax"] = torch.softmax(h, dim=-1)
        out["log_softmax"] = F.log_softmax(h, dim=-1)
        out["layer_norm"] = F.layer_norm(h, (16,))
        out["sum"] = h.sum()
        out["mse_loss"] = F.mse_loss(h, h)
        out["gelu"] = F.gelu(h)
        out["add"] = h + h
    return {k: str(v.dtype).replace("torch.", "") for k, v in out.items()}
