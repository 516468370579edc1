#!/usr/bin/env python3
"""The roofline of every lab kernel, from the committed benchmark JSON (no GPU needed).

    chapters/09_profiling/tools/roofline.py [--gpu H200]    # print the table (Markdown)

scripts/results.py calls outputs() so the table is regenerated with the other results: it writes
docs/results/<GPU>_roofline.md (every row), the block `<!-- results:ch09-roofline begin -->` of
chapters/09_profiling/README.md, and docs/results/<GPU>_roofline.png when matplotlib is installed;
and the block `results:ch09-counted` (tools/counted.py: declared against ncu-measured counts).

Inputs, one owner each:
  * FLOPs and bytes of one iteration: each benchmark row's `flops` and `bytes` counters, declared
    in code beside the row (bench::Work in bench/chNN/*.cpp);
  * time: the row's `median_us`, the median over its repetitions;
  * which roof applies: `[[roof]]` tables of bench/chNN/chNN.toml (first match wins):
        [[roof]]
        row = "^BM_tc_gemm\\w*/\\w*bf16/"   # regex on the row name (as in [[ratio]])
        compute = "tensor_bf16"             # fp32 (default) | fp64 | tensor_{tf32,fp16,bf16,int8,fp8}
        memory = "dram"                     # dram (default) | l2
        why = "wmma/wgmma BF16 inputs, FP32 accumulate"
  * the ceilings: chapter 2's measured card (chapters/02_architecture/tools/card.py load_ceilings,
    else docs/results/raw/<GPU>/ch02_card.json's "ceilings"); where chapter 2 has not measured a
    ceiling, the bench JSON's context (peak_dram_GBps, peak_fp32_TFLOPs: the device's sheet
    figures) with a note, and no ceiling at all for the others (the row's % of roof is then blank).
    Every ceiling printed names its source.

A row is placed at intensity I = flops / bytes (FLOP per DRAM byte as counted), attained
P = flops / time; its attainable performance is min(C, I x B) with C the compute roof and B the
memory roof, and the roof that binds it is the smaller of the two (memory when I < C / B, the
ridge point). A row above its roof (more than 5% over) is flagged: the counted bytes are too high
(an input L2 served) or the FLOPs too many (Winograd/FFT do fewer than the direct count).
Rows that declare bytes but no FLOPs are not placed (no intensity); the table counts them.
"""
from __future__ import annotations

import argparse
import importlib.util
import json
import re
import statistics
import sys
import tomllib
from pathlib import Path

HERE = Path(__file__).resolve().parent
REPO = HERE.parent.parent.parent
sys.path.insert(0, str(HERE))
sys.path.insert(1, str(REPO / "scripts"))
import counted  # noqa: E402  (the counted-vs-measured block, written beside the roofline's)
import report  # noqa: E402  (rows of a benchmark JSON: grouped(), error_of())
from results import replace_block  # noqa: E402  (the README block rewriting, one owner)

COMPUTE_ROOFS = ("fp32", "fp64", "tensor_tf32", "tensor_fp16", "tensor_bf16", "tensor_int8", "tensor_fp8")
MEMORY_ROOFS = ("dram", "l2")
ABOVE_ROOF = 1.05  # attained / attainable above this: a counting error or a cache-resident input
BLOCK_KEY = "ch09-roofline"


# ---- ceilings ----------------------------------------------------------------------------------

def _card_ceilings(root: Path, gpu: str) -> tuple[dict | None, str]:
    """Chapter 2's measured ceilings (docs/results/raw/<gpu>/ch02_card.json, read through its
    loader chapters/02_architecture/tools/card.py when present, which checks the card) and where
    they come from; (None, "") without a committed card. Chapter 2's calculator (sheet peaks from a
    built binary) is not used: what results.py writes must depend on committed files only."""
    card = root / "docs" / "results" / "raw" / gpu / "ch02_card.json"
    if not card.exists():
        return None, ""
    where = f"chapter 2's measured card ({card.relative_to(root).as_posix()})"
    loader = root / "chapters" / "02_architecture" / "tools" / "card.py"
    if loader.exists():
        spec = importlib.util.spec_from_file_location("cudalab_ch02_card", loader)
        mod = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(mod)
        got = mod.load_ceilings(gpu, root)  # a card it finds malformed raises, naming what is missing
        if got.get("measured") and isinstance(got.get("ceilings"), dict):
            return got["ceilings"], where
    data = json.loads(card.read_text())
    if isinstance(data.get("ceilings"), dict):
        return data["ceilings"], where
    return None, ""


def load_ceilings(root: Path, gpu: str, context: dict) -> dict[str, tuple[float, str]]:
    """Roof name -> (value, source). Memory roofs in GB/s, compute roofs in TFLOP/s. A roof with
    no source is absent (never a typed-in number)."""
    out: dict[str, tuple[float, str]] = {}
    card, where = _card_ceilings(root, gpu)
    if card:
        flat = {"dram": card.get("dram_GBps"), "l2": card.get("l2_GBps"), "fp32": card.get("fp32_TFLOPs"),
                "fp64": card.get("fp64_TFLOPs")}
        for kind, v in (card.get("tensor_TFLOPs") or {}).items():
            flat[f"tensor_{kind}"] = v
        for name, v in flat.items():
            if isinstance(v, (int, float)) and v > 0:
                out[name] = (float(v), where)
    sheet = {"dram": "peak_dram_GBps", "fp32": "peak_fp32_TFLOPs"}
    for name, key in sheet.items():
        if name in out:
            continue
        try:
            v = float(context.get(key, ""))
        except ValueError:
            continue
        if v > 0:
            out[name] = (v, f"sheet figure, not measured (bench JSON context `{key}`; chapter 2's card "
                            f"has no measured value yet)")
    return out


# ---- declarations -------------------------------------------------------------------------------

def load_roofs(bench_dir: Path, chapter: str) -> list[dict]:
    """The [[roof]] tables of bench/<chapter>/<chapter>.toml, checked."""
    path = report.declarations_path(chapter, bench_dir)
    if not path.exists():
        return []
    roofs = list(tomllib.loads(path.read_text()).get("roof", []))
    for r in roofs:
        if "row" not in r:
            raise ValueError(f"{path}: [[roof]] lacks row")
        re.compile(r["row"])
        if r.get("compute", "fp32") not in COMPUTE_ROOFS:
            raise ValueError(f"{path}: [[roof]] {r['row']}: compute must be one of {COMPUTE_ROOFS}")
        if r.get("memory", "dram") not in MEMORY_ROOFS:
            raise ValueError(f"{path}: [[roof]] {r['row']}: memory must be one of {MEMORY_ROOFS}")
    return roofs


def roof_of(name: str, roofs: list[dict]) -> tuple[str, str]:
    """(compute roof, memory roof) of a row: the first [[roof]] whose regex matches, else FP32/DRAM."""
    for r in roofs:
        if re.search(r["row"], name):
            return r.get("compute", "fp32"), r.get("memory", "dram")
    return "fp32", "dram"


# ---- the join ------------------------------------------------------------------------------------

def place(flops: float, nbytes: float, time_us: float, compute: tuple[float, str] | None,
          memory: tuple[float, str] | None) -> dict:
    """One point on the roofline. compute in TFLOP/s, memory in GB/s (either may be None)."""
    intensity = flops / nbytes
    attained = flops / (time_us * 1e-6) / 1e12  # TFLOP/s
    p = {"intensity": intensity, "tflops": attained, "gbps": nbytes / (time_us * 1e-6) / 1e9,
         "ridge": None, "binds": None, "attainable": None, "pct": None, "above": False}
    if compute and memory:
        p["ridge"] = compute[0] * 1e12 / (memory[0] * 1e9)
    mem_bound = memory[0] * 1e9 * intensity / 1e12 if memory else None  # TFLOP/s at that intensity
    candidates = [(v, k) for v, k in ((mem_bound, "memory"), (compute[0] if compute else None, "compute"))
                  if v is not None]
    if not candidates:
        return p
    if len(candidates) == 1:  # one roof unmeasured: which one binds is unknown, so no percentage
        return p
    attainable, binds = min(candidates)
    p.update(attainable=attainable, binds=binds, pct=100.0 * attained / attainable,
             above=attained > ABOVE_ROOF * attainable)
    return p


def join(root: Path, gpu: str) -> dict:
    """Every row of docs/results/raw/<gpu>/bench_chNN.json with FLOPs and bytes, placed."""
    raw = root / "docs" / "results" / "raw" / gpu
    bench_dir = root / "bench"
    points, bytes_only, failed, runs = [], [], [], []
    context: dict = {}
    for path in sorted(raw.glob("bench_ch[0-9][0-9].json")):
        chapter = path.stem.removeprefix("bench_")
        data = json.loads(path.read_text())
        ctx = data.get("context", {})
        context = context or ctx
        runs.append((chapter, str(ctx.get("date", "?"))[:10]))
        roofs = load_roofs(bench_dir, chapter)
        for name, reps in report.grouped(data).items():
            good = [b for b in reps if not report.error_of(b)]
            flops = max((float(b.get("flops", 0) or 0) for b in reps), default=0.0)
            nbytes = max((float(b.get("bytes", 0) or 0) for b in reps), default=0.0)
            if not good:
                if flops > 0:
                    failed.append((chapter, name))
                continue
            times = [float(b["median_us"]) for b in good if isinstance(b.get("median_us"), (int, float)) and b["median_us"] > 0]
            if flops <= 0 or nbytes <= 0 or not times:
                if nbytes > 0:
                    bytes_only.append((chapter, name))
                continue
            compute, memory = roof_of(name, roofs)
            points.append({"chapter": chapter, "name": name, "label": good[0].get("label", ""),
                           "flops": flops, "bytes": nbytes, "time_us": statistics.median(times),
                           "reps": len(times), "compute_roof": compute, "memory_roof": memory})
    ceilings = load_ceilings(root, gpu, context)
    for p in points:
        p.update(place(p["flops"], p["bytes"], p["time_us"], ceilings.get(p["compute_roof"]),
                       ceilings.get(p["memory_roof"])))
    return {"gpu": context.get("gpu", gpu), "points": points, "bytes_only": bytes_only, "failed": failed,
            "ceilings": ceilings, "runs": runs}


# ---- the text -------------------------------------------------------------------------------------

def _g(x: float) -> str:
    return f"{x:.3g}" if x < 1000 else f"{x:.0f}"


def ceilings_table(ceilings: dict[str, tuple[float, str]]) -> list[str]:
    lines = ["| roof | value | source |", "| --- | ---: | --- |"]
    for name in MEMORY_ROOFS + COMPUTE_ROOFS:
        unit = "GB/s" if name in MEMORY_ROOFS else "TFLOP/s"
        if name in ceilings:
            v, src = ceilings[name]
            lines.append(f"| {name} | {_g(v)} {unit} | {src} |")
        else:
            lines.append(f"| {name} | not measured | chapter 2's card has no value; no sheet figure is typed in |")
    return lines


def ridge_lines(ceilings: dict[str, tuple[float, str]]) -> list[str]:
    out = []
    for c in COMPUTE_ROOFS:
        for m in MEMORY_ROOFS:
            if c in ceilings and m in ceilings:
                out.append(f"{c}/{m} {ceilings[c][0] * 1e12 / (ceilings[m][0] * 1e9):.1f}")
    return out


def points_table(points: list[dict]) -> list[str]:
    lines = ["| ch | row | FLOP/byte | TFLOP/s | GB/s | roofs | binds | % of that roof |",
             "| --- | --- | ---: | ---: | ---: | --- | --- | ---: |"]
    for p in points:
        name = p["name"] + (f" [{p['label']}]" if p["label"] else "")
        name = name.replace("|", "/")
        if p["pct"] is None:
            binds, pct = "unknown", "roof not measured"
        else:
            binds = f"{p['memory_roof'] if p['binds'] == 'memory' else p['compute_roof']}"
            pct = f"{p['pct']:.1f}%" + (" **above roof**" if p["above"] else "")
        lines.append(f"| {p['chapter'][2:]} | {name} | {_g(p['intensity'])} | {_g(p['tflops'])} | "
                     f"{_g(p['gbps'])} | {p['compute_roof']}, {p['memory_roof']} | {binds} | {pct} |")
    return lines


def text(result: dict, plot_name: str | None) -> str:
    pts = result["points"]
    runs = ", ".join(f"{c} {d}" for c, d in result["runs"])
    ridges = ridge_lines(result["ceilings"])
    above = [p for p in pts if p["above"]]
    lines = [f"Roofline of {len(pts)} lab kernel rows on {result['gpu']} (runs: {runs}): FLOPs and bytes as "
             f"counted in code (bench::Work), time = median of the repetitions' `median_us`; roofs per row "
             f"from `[[roof]]` in bench/chNN/chNN.toml (default fp32, dram).", "",
             "Ceilings:", "", *ceilings_table(result["ceilings"]), ""]
    if ridges:
        lines += [f"Ridge points (FLOP/byte): {', '.join(ridges)}.", ""]
    lines += points_table(pts)
    lines += ["", f"{len(result['bytes_only'])} row(s) declare bytes but no FLOPs: not placed (no intensity)."]
    if result["failed"]:
        lines.append(f"{len(result['failed'])} row(s) with FLOPs failed in this run: "
                     + ", ".join(n for _, n in result["failed"]) + ".")
    if above:
        lines.append(f"{len(above)} row(s) above their roof: their counted bytes exceed what DRAM served "
                     f"(an L2-resident input) or their counted FLOPs exceed what ran (Winograd/FFT), "
                     f"see the chapter's \"Counted against measured\".")
    if plot_name:
        lines += ["", f"![roofline]({plot_name})"]
    return "\n".join(lines)


def draw(path: Path, result: dict) -> bool:
    """The log-log plot (False without matplotlib)."""
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        return False
    pts, ceil = result["points"], result["ceilings"]
    xs = [p["intensity"] for p in pts] or [1.0]
    lo, hi = min(xs) / 2, max(xs) * 2
    fig, ax = plt.subplots(figsize=(8, 5))
    for m in MEMORY_ROOFS:
        for c in COMPUTE_ROOFS:
            if m in ceil and c in ceil and (c == "fp32" or any(p["compute_roof"] == c for p in pts)):
                ridge = ceil[c][0] * 1e12 / (ceil[m][0] * 1e9)
                grid = [lo, min(max(ridge, lo), hi), hi]
                ax.plot(grid, [min(ceil[c][0], ceil[m][0] * 1e9 * x / 1e12) for x in grid],
                        lw=1, label=f"{c} / {m}")
    for chapter in sorted({p["chapter"] for p in pts}):
        sel = [p for p in pts if p["chapter"] == chapter]
        ax.scatter([p["intensity"] for p in sel], [p["tflops"] for p in sel], s=12, label=chapter)
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlabel("FLOP / DRAM byte (counted)")
    ax.set_ylabel("TFLOP/s (attained)")
    ax.set_title(f"Roofline of the lab kernels, {result['gpu']}")
    ax.grid(True, which="both", alpha=0.3)
    ax.legend(fontsize=7, ncol=2)
    fig.tight_layout()
    fig.savefig(path, dpi=110, metadata={"Software": None})
    plt.close(fig)
    return True


def outputs(root: Path, gpu: str | None, plots: bool, pending: dict[Path, str] | None = None) -> dict[Path, str]:
    """The files of the roofline (for scripts/results.py): docs/results/<gpu>_roofline.md and the
    chapter README's block; the plot is drawn as a side effect when `plots` (and matplotlib).
    `pending`: texts already rewritten by the caller (the README's other blocks), edited on top."""
    readme = root / "chapters" / "09_profiling" / "README.md"
    out: dict[Path, str] = {}
    marker = ("<!-- Written by scripts/results.py (chapters/09_profiling/tools/roofline.py) from "
              "docs/results/raw/<GPU>/bench_chNN.json and bench/chNN/chNN.toml [[roof]]; edit those, not this block. -->")
    if gpu is None:
        body = (f"{marker}\nNo measured results are committed yet: the roofline is written here from "
                f"`docs/results/raw/<GPU>/bench_chNN.json` (see docs/results/README.md).")
    else:
        result = join(root, gpu)
        md = root / "docs" / "results" / f"{gpu}_roofline.md"
        png = md.with_suffix(".png")
        if plots and result["points"]:
            draw(png, result)
        table = text(result, png.name if png.exists() else None)
        out[md] = (f"# Roofline of the lab kernels on {result['gpu']}\n\n<!-- Generated by scripts/results.py "
                   f"(chapters/09_profiling/tools/roofline.py); do not edit. -->\n\n{table}\n")
        body = f"{marker}\n" + text(result, f"../../docs/results/{png.name}" if png.exists() else None)
    if readme.exists():
        current = pending[readme] if pending and readme in pending else readme.read_text()
        new = replace_block(current, BLOCK_KEY, body)
        if new is not None:
            out[readme] = current = new
        new = replace_block(current, counted.BLOCK_KEY, counted.block_text(root, gpu))
        if new is not None:
            out[readme] = new
    return out


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--gpu", default="H200", help="a directory under docs/results/raw (default H200)")
    ap.add_argument("--root", type=Path, default=REPO, help=argparse.SUPPRESS)
    args = ap.parse_args()
    raw = args.root / "docs" / "results" / "raw" / args.gpu
    if not raw.is_dir():
        print(f"roofline: --gpu {args.gpu}: no directory {raw}", file=sys.stderr)
        return 2
    try:
        print(text(join(args.root, args.gpu), None))
    except ValueError as err:
        print(f"roofline: {err}", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main())
