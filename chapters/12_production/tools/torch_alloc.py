#!/usr/bin/env python3
"""Does PyTorch's allocator setting take effect? PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True
(and its newer spelling PYTORCH_ALLOC_CONF) was silently ignored in some releases
(pytorch/pytorch#183387): a setting is only trusted once the allocator itself reports it.

    torch_alloc.py [--out OUT.json]

Runs one child process per setting (the variable is read when CUDA initializes, so each needs a
fresh process): none, PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True and
PYTORCH_ALLOC_CONF=expandable_segments:True. Each child fragments the cache the same way (seeded
tensors of 1-40 MiB, every other one freed, then one large tensor) and reports what the allocator
says: torch.cuda.memory._snapshot()'s allocator_settings (where the release has it) and whether its
segments are expandable, memory_stats()' segment count, reserved and allocated bytes.

Exit status: 0 the setting took effect under both names (or under the name this release reads,
with the other reported); 1 it did not (an enabled run shows no expandable segment); 2 usage error;
77 skipped: no torch or no CUDA device (the reason is printed).
"""
from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
from pathlib import Path

SETTINGS = [("default", {}),
            ("PYTORCH_CUDA_ALLOC_CONF", {"PYTORCH_CUDA_ALLOC_CONF": "expandable_segments:True"}),
            ("PYTORCH_ALLOC_CONF", {"PYTORCH_ALLOC_CONF": "expandable_segments:True"})]
SKIP = 77


def child() -> int:
    import random
    import warnings

    import torch
    warnings.simplefilter("ignore")  # the deprecation warning of PYTORCH_CUDA_ALLOC_CONF is expected
    torch.cuda.init()
    rng = random.Random(12)
    mib = 1 << 20
    keep, tmp = [], []
    for i in range(120):
        t = torch.empty(rng.randint(1, 40) * mib, dtype=torch.uint8, device="cuda")
        (keep if i % 2 else tmp).append(t)
    del tmp
    big = torch.empty(512 * mib, dtype=torch.uint8, device="cuda")
    torch.cuda.synchronize()
    stats = torch.cuda.memory_stats()
    snap = torch.cuda.memory._snapshot()
    segs = snap.get("segments", [])
    settings = snap.get("allocator_settings")
    out = {
        "torch": torch.__version__,
        "allocator_settings": settings if isinstance(settings, dict) else None,
        "settings_expandable": (settings or {}).get("expandable_segments") if isinstance(settings, dict) else None,
        "segments": len(segs),
        "expandable_segments": sum(1 for s in segs if s.get("is_expandable")),
        "segment_count_stat": stats.get("segment.all.current"),
        "reserved_bytes": stats.get("reserved_bytes.all.current"),
        "allocated_bytes": stats.get("allocated_bytes.all.current"),
    }
    out["unused_reserved_bytes"] = (out["reserved_bytes"] or 0) - (out["allocated_bytes"] or 0)
    del keep, big
    print(json.dumps(out))
    return 0


def probe() -> str | None:
    """Why this machine cannot run the check, or None."""
    try:
        r = subprocess.run([sys.executable, "-c", "import torch; print(int(torch.cuda.is_available()))"],
                           capture_output=True, text=True, timeout=300)
    except (OSError, subprocess.TimeoutExpired) as e:
        return f"python could not import torch ({e})"
    if r.returncode != 0:
        return "torch is not installed (pip install torch)"
    if r.stdout.strip() != "1":
        return "torch sees no CUDA device"
    return None


def judge(runs: dict) -> tuple[bool, list[str]]:
    notes, ok = [], True
    base = runs.get("default", {})
    if base.get("expandable_segments"):
        notes.append("the default run already has expandable segments: this release defaults to them")
    took = {}
    for name in ("PYTORCH_CUDA_ALLOC_CONF", "PYTORCH_ALLOC_CONF"):
        r = runs.get(name, {})
        eff = bool(r.get("expandable_segments")) or r.get("settings_expandable") is True
        took[name] = eff
        notes.append(f"{name}=expandable_segments:True: " + ("took effect" if eff else "IGNORED") +
                     f" ({r.get('expandable_segments')} expandable of {r.get('segments')} segments; "
                     f"allocator_settings.expandable_segments = {r.get('settings_expandable')})")
    if not any(took.values()):
        ok = False
        notes.append("neither name enabled expandable segments: the setting is silently ignored")
    elif not all(took.values()):
        notes.append("only one spelling is read by this release: set the one that took effect")
    return ok, notes


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="torch_alloc.py", description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--out", type=Path)
    ap.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    if args.child:
        return child()
    why = probe()
    if why:
        print(f"torch_alloc: skipped: {why}")
        return SKIP
    runs = {}
    for name, env in SETTINGS:
        e = {k: v for k, v in os.environ.items() if k not in ("PYTORCH_CUDA_ALLOC_CONF", "PYTORCH_ALLOC_CONF")}
        e.update(env)
        r = subprocess.run([sys.executable, __file__, "--child"], env=e, capture_output=True, text=True, timeout=300)
        if r.returncode != 0:
            runs[name] = {"error": (r.stderr or r.stdout).strip()[-800:]}
            continue
        runs[name] = json.loads(r.stdout.strip().splitlines()[-1])
    for name, r in runs.items():
        if "error" in r:
            print(f"torch_alloc: the {name} run failed: {r['error']}", file=sys.stderr)
            return 1
    ok, notes = judge(runs)
    gib = 1 << 30
    print("| setting | segments | expandable | allocator_settings | reserved GiB | reserved unused GiB |")
    print("| --- | ---: | ---: | --- | ---: | ---: |")
    for name, r in runs.items():
        print(f"| {name} | {r['segments']} | {r['expandable_segments']} | {r['settings_expandable']} | "
              f"{r['reserved_bytes'] / gib:.2f} | {r['unused_reserved_bytes'] / gib:.3f} |")
    for n in notes:
        print("  " + n)
    print("torch_alloc: " + ("OK" if ok else "FAILED"))
    if args.out:
        args.out.write_text(json.dumps({"runs": runs, "ok": ok, "notes": notes}, indent=1) + "\n")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
