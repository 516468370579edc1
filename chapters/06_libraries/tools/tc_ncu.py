#!/usr/bin/env python3
"""What limits each tensor-core GEMM step, as Nsight Compute counted it: the table of chapter 6's
README (block `results:ch06-tc-ncu`), one column per step (WMMA, mma.sync, wgmma, cuBLAS), from
docs/results/raw/<GPU>/ch06_tc_ncu.json. That file is written on a GPU by

    python3 chapters/09_profiling/tools/ncu_check.py --build build/gpu --out OUT --tc

(OUT/ch06_tc_ncu.json) and committed; scripts/results.py writes the block through outputs(). Run
alone, this prints the block:

    chapters/06_libraries/tools/tc_ncu.py [--gpu H100_80GB_HBM3]

The GPU: the one results.py fills the READMEs from when it has the file, else the first GPU that
has it (the block names it); none: the block says the table is not measured on this GPU yet.
"""
from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[3]
sys.path.insert(0, str(REPO / "scripts"))
from results import replace_block  # noqa: E402  (the README block rewriting, one owner)
sys.path.insert(0, str(REPO / "chapters" / "09_profiling" / "tools"))
from ncu_check import TENSOR_PIPE_METRICS, stall_metric  # noqa: E402  (the metric names, one owner)

BLOCK_KEY = "ch06-tc-ncu"
FILE = "ch06_tc_ncu.json"
COMMAND = "python3 chapters/09_profiling/tools/ncu_check.py --build build/gpu --out OUT --tc"
README = Path("chapters") / "06_libraries" / "README.md"
# The tensor pipe under either name (ncu_check.TENSOR_PIPE_METRICS): hmma counts wgmma too on
# sm_90; gmma, where present, wgmma alone.
PIPE = TENSOR_PIPE_METRICS
STALL_PREFIX, STALL_SUFFIX = stall_metric("{}").split("{}")
NOT_STALLS = ("selected",)  # the issuing warp, one per issue


def tensor_pipe(m: dict, kind: str = "cycles") -> tuple[float | None, str | None]:
    """(value, metric) of the tensor pipe: the larger of the hmma and gmma metrics present (an ncu
    or GPU without the gmma counters has only hmma); (None, None) when neither is."""
    have = [(m[k], k) for k in PIPE[kind] if isinstance(m.get(k), (int, float))]
    return max(have) if have else (None, None)


def top_stalls(m: dict, n: int = 2) -> list[tuple[str, float]]:
    """The n largest warp stall reasons (warps stalled per issued instruction), largest first."""
    got = [(k[len(STALL_PREFIX):-len(STALL_SUFFIX)], v) for k, v in m.items()
           if k.startswith(STALL_PREFIX) and k.endswith(STALL_SUFFIX) and isinstance(v, (int, float))]
    got = [(r, v) for r, v in got if r not in NOT_STALLS]
    return sorted(got, key=lambda rv: (-rv[1], rv[0]))[:n]


def _num(x, digits: int = 1) -> str:
    """A cell: counts with thousands separators (digits=0), percentages and ratios to `digits`."""
    if not isinstance(x, (int, float)):
        return "-"
    return f"{x:,.0f}" if digits == 0 else f"{x:.{digits}f}"


ROWS = ["kernel (first launch)", "tensor pipe active, % of peak", "tensor instructions issued, % of peak",
        "issue slots busy, %", "shared-memory wavefronts, % of peak", "shared-memory bank conflicts",
        "ldmatrix instructions", "warps per SM (achieved)", "registers per thread",
        "two largest stalls (warps per issued instruction)", "duration, us"]


def column(entry: dict) -> list[str]:
    """The cells of one step, in the order of ROWS."""
    if "metrics" not in entry:
        return [f"not profiled: {entry.get('error', '?')}"] + ["" for _ in ROWS[1:]]
    m = entry["metrics"]
    kernel = entry.get("kernel", "?")
    kernel = kernel if len(kernel) <= 32 else kernel[:31] + "…"
    cyc, _ = tensor_pipe(m, "cycles")
    inst, _ = tensor_pipe(m, "inst")
    stalls = ", ".join(f"{r} {v:.1f}" for r, v in top_stalls(m)) or "-"
    dur = m.get("gpu__time_duration.sum")
    return [f"`{kernel}`", _num(cyc), _num(inst), _num(m.get("smsp__issue_active.avg.pct_of_peak_sustained_active")),
            _num(m.get("l1tex__data_pipe_lsu_wavefronts_mem_shared.avg.pct_of_peak_sustained_elapsed")),
            _num(m.get("l1tex__data_bank_conflicts_pipe_lsu_mem_shared.sum"), 0),
            _num(m.get("smsp__inst_executed_op_ldsm.sum"), 0),
            _num(m.get("sm__warps_active.avg.per_cycle_active")),
            _num(m.get("launch__registers_per_thread"), 0), stalls,
            _num(dur / 1e3 if isinstance(dur, (int, float)) else None)]


def source(root: Path, gpu: str | None) -> Path | None:
    """The committed JSON: `gpu`'s when it has one, else the first other GPU's; None when none."""
    raw = root / "docs" / "results" / "raw"
    if gpu and (raw / gpu / FILE).is_file():
        return raw / gpu / FILE
    found = sorted(raw.glob(f"*/{FILE}")) if raw.is_dir() else []
    return found[0] if found else None


def table(doc: dict) -> list[str]:
    rows = doc.get("rows", {})
    order = [r for r in doc.get("order", []) if r in rows] + sorted(r for r in rows if r not in doc.get("order", []))
    cols = [column(rows[r]) for r in order]
    out = ["| | " + " | ".join(f"{rows[r].get('step', r)} (`{r}`)" for r in order) + " |",
           "| --- |" + " ---: |" * len(order)]
    out += [f"| {name} | " + " | ".join(c[i] for c in cols) + " |" for i, name in enumerate(ROWS)]
    return out


def block_text(root: Path, gpu: str | None) -> str:
    marker = (f"<!-- Written by scripts/results.py (chapters/06_libraries/tools/tc_ncu.py) from "
              f"docs/results/raw/<GPU>/{FILE}; edit that, not this block. -->")
    src = source(root, gpu)
    if src is None:
        return (f"{marker}\nNot measured on this GPU yet: `{COMMAND}` writes `OUT/{FILE}` on a GPU; committed as "
                f"`docs/results/raw/<GPU>/{FILE}`, it fills this table.")
    doc = json.loads(src.read_text())
    rel = src.relative_to(root).as_posix()
    if "skipped" in doc:
        return f"{marker}\nThe ncu run was skipped: {doc['skipped']} (ncu {doc.get('ncu', '?')}; `{rel}`)."
    dropped = sorted({d for r in doc.get("rows", {}).values() for d in r.get("dropped_metrics", [])})
    lines = [marker,
             f"Nsight Compute ({doc.get('ncu', '?')}) on {doc.get('gpu', src.parent.name)}, "
             f"`--clock-control {doc.get('clock_control', '?')}`, cache control {doc.get('cache_control', '?')}; "
             f"{doc.get('launch', '')} (`{rel}`). Tensor pipe: the larger of the hmma and gmma counters "
             f"this ncu has; stalls: ncu's warp-state reasons, \"selected\" left out.", "", *table(doc)]
    if dropped:
        lines += ["", "Metrics this ncu did not know (not measured): " + ", ".join(f"`{d}`" for d in dropped) + "."]
    return "\n".join(lines)


def outputs(root: Path, gpu: str | None, pending: dict[Path, str] | None = None) -> dict[Path, str]:
    """Chapter 6's README with the block rewritten (for scripts/results.py); nothing when the
    README or its markers are absent. `pending`: texts the caller already rewrote."""
    readme = root / README
    if not readme.exists():
        return {}
    current = pending[readme] if pending and readme in pending else readme.read_text()
    new = replace_block(current, BLOCK_KEY, block_text(root, gpu))
    return {readme: new} if new is not None else {}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--gpu", help="a directory under docs/results/raw (default: the first with the file)")
    ap.add_argument("--root", type=Path, default=REPO, help=argparse.SUPPRESS)
    args = ap.parse_args()
    print(block_text(args.root, args.gpu))
    return 0


if __name__ == "__main__":
    sys.exit(main())
