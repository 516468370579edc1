#!/usr/bin/env python3
"""Chapter 10: what XLA's fusion does beside Inductor's, on the same blocks.

    python3 chapters/10_frameworks/torch/xla_fusion.py [--out FILE]

Blocks (fp32, the same math in both frameworks):
  linear_bias_gelu   y = gelu(x W + b), exact GELU: the block of the custom operator
  ffn                y = x + W2 gelu(W1 LayerNorm(x) + b1) + b2: chapter 1's FFN block (tanh GELU)
XLA (jax, if installed; a CPU wheel from PyPI works): jit, lower, compile; the optimized HLO's
ENTRY computation is printed and its fusions, dots / custom calls and other instructions counted.
Inductor (torch, if installed; CUDA when present, else CPU): torch.compile, the generated code's
kernels (triton_/cpp_ fused kernels) and extern GEMM calls counted. Without one of them its
section says why. Which backend ran is printed: XLA:CPU's fusion choices are not XLA:GPU's.
"""
from __future__ import annotations

import argparse
import re
import sys
from pathlib import Path

D, H, BATCH = 512, 2048, 64


def xla_section() -> list[str]:
    try:
        import jax
        import jax.numpy as jnp
    except ImportError as e:
        return [f"XLA: jax is not installed ({e}); see the README for the argument from the lab's numbers."]
    out = [f"XLA: jax {jax.__version__}, backend {jax.default_backend()}"]

    def linear_bias_gelu(x, w, b):
        return jax.nn.gelu(x @ w + b, approximate=False)

    def ffn(x, g, beta, w1, b1, w2, b2):
        mu = x.mean(-1, keepdims=True)
        var = ((x - mu) ** 2).mean(-1, keepdims=True)
        h = (x - mu) / jnp.sqrt(var + 1e-5) * g + beta
        return x + jax.nn.gelu(h @ w1 + b1, approximate=True) @ w2 + b2

    f32 = jnp.float32
    args = {
        "linear_bias_gelu": (linear_bias_gelu, (jnp.ones((BATCH, D), f32), jnp.ones((D, H), f32), jnp.ones((H,), f32))),
        "ffn": (ffn, (jnp.ones((BATCH, D), f32), jnp.ones((D,), f32), jnp.ones((D,), f32), jnp.ones((D, H), f32),
                      jnp.ones((H,), f32), jnp.ones((H, D), f32), jnp.ones((D,), f32))),
    }
    for name, (fn, a) in args.items():
        hlo = jax.jit(fn).lower(*a).compile().as_text()
        entry = hlo[hlo.index("ENTRY"):]
        entry = entry[: entry.index("\n}") + 2]
        instrs = [ln.strip() for ln in entry.splitlines()[1:-1] if "=" in ln]
        fusions = [ln for ln in instrs if re.search(r"\bfusion\(", ln)]
        dots = [ln for ln in instrs if re.search(r"\b(dot|custom-call)\(", ln)]
        kinds = sorted({m.group(1) for ln in fusions for m in [re.search(r"kind=(k\w+)", ln)] if m})
        params = [ln for ln in instrs if "parameter(" in ln]
        other = len(instrs) - len(fusions) - len(dots) - len(params)
        # A dot inside a fusion (XLA:CPU may fuse the GEMM with its output ops) is counted there.
        fused_dots = len(re.findall(r"\bdot\(", hlo)) - len(dots)
        out.append(f"  {name}: {len(fusions)} fusions ({', '.join(kinds) or '-'}), {len(dots)} unfused dot/custom-call, "
                   f"{fused_dots} dot(s) inside fusions, {other} other instructions in ENTRY")
        out.append(f"  {name} ENTRY after optimization:")
        # Without the metadata and backend configs (long, and not about fusion).
        out += ["    " + re.sub(r", (metadata|backend_config)=.*$", "", ln) for ln in entry.splitlines()]
    return out


def inductor_section() -> list[str]:
    try:
        import torch
        import torch.nn.functional as F
        from torch._inductor.utils import run_and_get_code
    except ImportError as e:
        return [f"Inductor: torch is not installed ({e})."]
    dev = "cuda" if torch.cuda.is_available() else "cpu"
    out = [f"Inductor: torch {torch.__version__}, device {dev}"]

    def linear_bias_gelu(x, w, b):
        return F.gelu(x @ w + b)

    def ffn(x, g, beta, w1, b1, w2, b2):
        h = F.layer_norm(x, (D,), g, beta, 1e-5)
        return x + F.gelu(h @ w1 + b1, approximate="tanh") @ w2 + b2

    def t(*s):
        return torch.randn(*s, device=dev)

    blocks = {"linear_bias_gelu": (linear_bias_gelu, (t(BATCH, D), t(D, H), t(H))),
              "ffn": (ffn, (t(BATCH, D), t(D), t(D), t(D, H), t(H), t(H, D), t(D)))}
    for name, (fn, a) in blocks.items():
        torch._dynamo.reset()
        with torch.no_grad():
            _, code = run_and_get_code(torch.compile(fn), *a)
        src = "\n".join(code)
        kernels = sorted(set(re.findall(r"\b((?:triton|cpp)_\w+?)(?:\.run|\()", src)))
        kernels = [k for k in kernels if "fused" in k or k.startswith("triton_")]
        externs = re.findall(r"extern_kernels\.(\w+)\(", src)
        out.append(f"  {name}: {len(kernels)} generated kernels ({', '.join(kernels)}), "
                   f"{len(externs)} extern calls ({', '.join(sorted(set(externs)))})")
    return out


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--out", type=Path, help="also write the report here")
    a = p.parse_args(argv)
    lines = [f"# XLA beside Inductor: blocks at batch {BATCH}, d {D}, hidden {H}, fp32 (written by xla_fusion.py)", ""]
    lines += xla_section() + [""] + inductor_section()
    text = "\n".join(lines) + "\n"
    print(text, end="")
    if a.out:
        a.out.write_text(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
