#!/usr/bin/env python3
"""Benchmark JSON (Google Benchmark --benchmark_out) -> Markdown tables, key ratios and plots.

    scripts/report.py OUT_DIR bench_ch03.json [bench_ch04.json ...] [--title "H200 run"]

Writes OUT_DIR/report.md (one table per chapter, the run's GPU context, the ladders and the key
ratios declared in bench/<chapter>/<chapter>.toml) and, when matplotlib is installed,
OUT_DIR/<chapter>_<family>_<arg>.png for every benchmark family with a numeric argument.
Only numbers from the JSON files appear: nothing is typed in by hand. scripts/results.py uses the
same functions to regenerate docs/results and the README result blocks.

Ratios (bench/<chapter>/<chapter>.toml, [[ratio]]): run with --benchmark_repetitions=5 (scripts/gpu_suite
does), a row has one entry per repetition. When the numerator row was timed beside its base in
the same iterations (bench::run_vs, counter vs_base), each repetition's ratio is that interleaved
counter; otherwise it is the row's metric over the vendor row's, repetition by repetition. The
ratio quoted is the median of the repetitions, with their spread (min..max); "parity" when the
spread includes 1.0. The best (highest median) row matching `row` counts.
"""
from __future__ import annotations

import argparse
import json
import re
import statistics
import sys
import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
BENCH_DIR = ROOT / "bench"

# Fields every row has (Google Benchmark's own, and the ones with a column of their own).
STANDARD_KEYS = {"family_index", "per_family_instance_index", "repetitions", "repetition_index",
                 "threads", "iterations", "real_time", "cpu_time", "median_us", "GB/s", "TFLOP/s",
                 "pct_of_copy", "sm_mhz_after", "temp_c_after", "bytes", "flops", "vs_base",
                 "base_us", "base_GB/s", "base_TFLOP/s", "sm_mhz_before", "clock_reasons_before",
                 "clock_reasons_after"}
METRICS = ("GB/s", "TFLOP/s", "time")
CLOCK_DROP = 0.95  # a row whose SM clock fell below 95 % of its start is flagged

sys.path.insert(0, str(ROOT / "chapters" / "12_production" / "tools"))
try:  # the names of NVML's clock-event reasons: one owner, chapter 12's NVML module
    from ch12_nvml import SLOWDOWN_BITS, reason_names
except ImportError:  # a tree without chapter 12: hex masks
    SLOWDOWN_BITS = 0x2 | 0x4 | 0x8 | 0x20 | 0x40 | 0x80

    def reason_names(mask: int) -> list[str]:
        return [f"0x{mask:x}"] if mask else []


# ---- declarations (bench/chNN/chNN.toml) -------------------------------------------------------

def declarations_path(chapter: str, bench_dir: Path = BENCH_DIR) -> Path:
    """Where a chapter's benchmark declarations live: bench/<chapter>/<chapter>.toml, beside its
    benchmark sources. The one owner of that path: every reader (report, results, the grader,
    scripts/lab, the roofline, the tests) asks here."""
    return Path(bench_dir) / chapter / f"{chapter}.toml"


def declared_chapters(bench_dir: Path = BENCH_DIR) -> list[str]:
    """The chapters that have a declarations file (chNN, sorted)."""
    return sorted(p.parent.name for p in Path(bench_dir).glob("ch[0-9][0-9]/ch[0-9][0-9].toml")
                  if p.stem == p.parent.name)


def load_declarations(chapter: str, bench_dir: Path = BENCH_DIR) -> dict:
    """bench/<chapter>/<chapter>.toml as {"ratio": [...], "ladder": [...]} (empty lists when absent)."""
    path = declarations_path(chapter, bench_dir)
    data = tomllib.loads(path.read_text()) if path.exists() else {}
    decl = {"ratio": list(data.get("ratio", [])), "ladder": list(data.get("ladder", []))}
    for r in decl["ratio"]:
        missing = [k for k in ("label", "row", "vendor", "metric") if k not in r]
        if missing:
            raise ValueError(f"{path}: [[ratio]] {r.get('label', '?')} lacks {', '.join(missing)}")
        if r["metric"] not in METRICS:
            raise ValueError(f"{path}: [[ratio]] {r['label']}: metric must be one of {METRICS}")
        if ("goal" in r) != ("exercise" in r):
            raise ValueError(f"{path}: [[ratio]] {r['label']}: exercise and goal go together")
    for lad in decl["ladder"]:
        missing = [k for k in ("title", "step", "vendor", "metric") if k not in lad]
        if missing:
            raise ValueError(f"{path}: [[ladder]] {lad.get('title', '?')} lacks {', '.join(missing)}")
    return decl


def goals(bench_dir: Path = BENCH_DIR) -> dict[str, dict]:
    """Exercise -> its [[ratio]] entry (with goal), over every bench/chNN/chNN.toml."""
    out = {}
    for chapter in declared_chapters(bench_dir):
        for r in load_declarations(chapter, bench_dir)["ratio"]:
            if "exercise" in r:
                out[r["exercise"]] = r
    return out


# ---- rows ----------------------------------------------------------------------------------------

def read_bench_json(path: Path, arg: str) -> dict:
    """A Google Benchmark JSON file as a dict with a "benchmarks" list, or ValueError naming `arg`
    (the option that gave the path) and why: unreadable, not JSON, not a benchmark run."""
    try:
        data = json.loads(Path(path).read_text())
    except OSError as e:
        raise ValueError(f"{arg} {path}: cannot read it ({e.strerror or e})") from None
    except (json.JSONDecodeError, UnicodeDecodeError) as e:
        raise ValueError(f"{arg} {path}: not JSON ({e})") from None
    if not isinstance(data, dict) or not isinstance(data.get("benchmarks"), list):
        raise ValueError(f"{arg} {path}: not a Google Benchmark JSON (no \"benchmarks\" list)")
    return data


def clean_name(b: dict) -> str:
    """The row name without Google Benchmark's /manual_time suffix (what the regexes match)."""
    return re.sub(r"/(manual_time|real_time)$", "", b.get("run_name") or b.get("name", ""))


def display_name(b: dict) -> str:
    label = b.get("label", "")
    return f"{clean_name(b)} [{label}]" if label else clean_name(b)


def error_of(b: dict) -> str | None:
    """The error message of a row that failed (SkipWithError), else None (GB 1.7 and 1.8); one
    line without table separators, so it fits in a Markdown cell."""
    if b.get("error_occurred") or b.get("skipped"):
        msg = b.get("error_message") or b.get("skip_message") or "error"
        return " ".join(str(msg).split()).replace("|", "/")
    return None


def rows(data: dict) -> list[dict]:
    """Per-repetition rows (aggregates such as mean/median/stddev left out)."""
    return [b for b in data.get("benchmarks", []) if b.get("run_type", "iteration") == "iteration"]


def grouped(data: dict) -> dict[str, list[dict]]:
    """Row name -> its repetitions, in the order of the run."""
    out: dict[str, list[dict]] = {}
    for b in rows(data):
        out.setdefault(clean_name(b), []).append(b)
    return out


def median(xs: list[float]) -> float | None:
    return statistics.median(xs) if xs else None


def value(b: dict, metric: str) -> float | None:
    """A row's speed in `metric` ("time": 1 / median time, so that larger is faster)."""
    if error_of(b):
        return None
    if metric == "time":
        t = b.get("median_us")
        return 1.0 / t if t else None
    return b.get(metric)


def row_median(reps: list[dict], key: str) -> float | None:
    return median([b[key] for b in reps if not error_of(b) and isinstance(b.get(key), (int, float))])


# ---- ratios --------------------------------------------------------------------------------------

def per_repetition_ratios(reps: list[dict], vendor_reps: list[dict] | None, metric: str,
                          use_base: bool = True) -> tuple[list[float], bool]:
    """(ratios, interleaved). Interleaved: the row's own vs_base counter per repetition (unless
    use_base is false: the declaration's `separate = true`, when the row's base is not its vendor)."""
    good = [b for b in reps if not error_of(b)]
    if use_base and good and all("vs_base" in b for b in good):
        return [float(b["vs_base"]) for b in good], True
    if not vendor_reps:
        return [], False
    by_rep = {b.get("repetition_index", 0): b for b in vendor_reps}
    out = []
    for b in good:
        v = by_rep.get(b.get("repetition_index", 0))
        a, d = value(b, metric), value(v, metric) if v else None
        if a is not None and d:
            out.append(a / d)
    return out, False


def fmt_ratio(x: float) -> str:
    return f"{x:.2f}x"


def ratio_result(decl: dict, data: dict) -> dict:
    """One declared ratio measured in `data`: median, spread, parity, goal."""
    g = grouped(data)
    res = {"label": decl["label"], "exercise": decl.get("exercise"), "goal": decl.get("goal"),
           "headline": bool(decl.get("headline")), "ratio": None, "lo": None, "hi": None, "n": 0,
           "interleaved": False, "parity": False, "row": None, "vendor": None, "met": None,
           "errors": []}
    row_rx, vendor_rx = re.compile(decl["row"]), re.compile(decl["vendor"])
    vendor_name = next((n for n in g if vendor_rx.search(n)), None)
    res["vendor"] = vendor_name
    vendor_err = next((error_of(b) for b in g.get(vendor_name, []) if error_of(b)), None)
    best = None
    for name, reps in g.items():
        # No vendor row in the run: not the declared comparison, even where the row carries a
        # vs_base (its base may be another baseline: a JSON older than the declaration).
        if vendor_name is None:
            break
        if not row_rx.search(name) or name == vendor_name:
            continue
        errs = [error_of(b) for b in reps if error_of(b)]
        if errs:
            res["errors"].append(f"{name}: {errs[0]}")
        ratios, inter = per_repetition_ratios(reps, g.get(vendor_name) if vendor_name else None, decl["metric"],
                                              not decl.get("separate", False))
        if ratios and (best is None or median(ratios) > best[1]):
            best = (name, median(ratios), min(ratios), max(ratios), len(ratios), inter)
    if best is None and vendor_err:
        res["errors"].append(f"{vendor_name}: {vendor_err}")
    if best:
        res.update(row=best[0], ratio=best[1], lo=best[2], hi=best[3], n=best[4], interleaved=best[5])
        res["parity"] = best[2] <= 1.0 <= best[3]
        if res["goal"] is not None:
            res["met"] = best[1] >= res["goal"]
    res["text"] = ratio_text(res)
    return res


def ratio_text(r: dict) -> str:
    if r["ratio"] is None:
        why = "; ".join(r["errors"]) if r["errors"] else "rows missing in this run"
        return f"not measured ({why})"
    head = ("parity: " if r["parity"] else "") + fmt_ratio(r["ratio"])
    spread = f"{r['lo']:.2f}..{r['hi']:.2f}, n = {r['n']}"
    how = "interleaved" if r["interleaved"] else "separate rows"
    text = f"{head} ({spread}, {how}; {r['row']} vs {r['vendor']})"
    if r["goal"] is not None:
        text += f"; goal {r['exercise']} >= {r['goal']:.2f}x: {'met' if r['met'] else 'MISSED'}"
    return text


def key_ratios(chapter: str, data: dict, bench_dir: Path = BENCH_DIR) -> list[dict]:
    return [ratio_result(d, data) for d in load_declarations(chapter, bench_dir)["ratio"]]


# ---- tables --------------------------------------------------------------------------------------

def ladder_tables(chapter: str, data: dict, bench_dir: Path = BENCH_DIR) -> list[str]:
    """One Markdown table per declared ladder: a row per step, a column per size (or a single
    column when the step regex has no `size` group), each cell the step's median metric and its
    percentage of the vendor row (interleaved vs_base when the row has it, else the vendor row of
    the same size in the same run)."""
    out = []
    for lad in load_declarations(chapter, bench_dir)["ladder"]:
        out += ladder_table(lad, data)
    return out


def ladder_table(lad: dict, data: dict) -> list[str]:
    """One declared ladder as Markdown lines (a blank line, its title, the table); [] when no row
    of `data` matches its step regex."""
    out: list[str] = []
    g = grouped(data)
    metric = lad["metric"]
    cells: dict[str, dict[str, str]] = {}
    sizes: list[str] = []
    for name, reps in g.items():
        m = re.match(lad["step"], name)
        if not m:
            continue
        gd = {k: v for k, v in m.groupdict().items() if v is not None}
        size = gd.get("size", "")
        val = row_median(reps, metric)
        if val is None:
            err = next((error_of(b) for b in reps if error_of(b)), None)
            if err:
                cells.setdefault(gd["step"], {})[size] = "error"
                sizes += [size] if size not in sizes else []
            continue
        inter = row_median(reps, "vs_base")
        if inter is not None:
            pct = f" ({100 * inter:.1f}%)"
        else:
            vrx = re.compile(lad["vendor"].format(**gd))
            vendor = next((r for n, r in g.items() if vrx.match(n)), None)
            vv = row_median(vendor, metric) if vendor else None
            pct = f" ({100 * val / vv:.1f}%)" if vv else ""
        cells.setdefault(gd["step"], {})[size] = f"{val:.2f}{pct}"
        if size not in sizes:
            sizes.append(size)
    if not cells:
        return out
    sizes.sort(key=lambda s: (not s.isdigit(), int(s) if s.isdigit() else 0, s))
    head = [s or metric for s in sizes]
    out += ["", f"{lad['title']}:", "", "| step | " + " | ".join(head) + " |",
            "| --- | " + " | ".join("---:" for _ in sizes) + " |"]
    out += [f"| {step} | " + " | ".join(c.get(sz, "") for sz in sizes) + " |" for step, c in cells.items()]
    return out


def throttle_flag(reps: list[dict]) -> str:
    """Why a row may have run throttled ("" when nothing says so): a slowdown reason (power cap,
    thermal, hardware slowdown, application clocks) in the masks bench.cpp records before and after
    the timed iterations, or an SM clock that fell by more than 5 % between the two."""
    why = []
    bits = 0
    for b in reps:
        for k in ("clock_reasons_before", "clock_reasons_after"):
            if isinstance(b.get(k), (int, float)):
                bits |= int(b[k]) & SLOWDOWN_BITS
    if bits:
        why.append(",".join(reason_names(bits)))
    drops = [(b["sm_mhz_before"], b["sm_mhz_after"]) for b in reps
             if isinstance(b.get("sm_mhz_before"), (int, float)) and isinstance(b.get("sm_mhz_after"), (int, float))
             and b["sm_mhz_before"] > 0 and b["sm_mhz_after"] < CLOCK_DROP * b["sm_mhz_before"]]
    if drops:
        before, after = max(drops, key=lambda d: d[0] - d[1])
        why.append(f"SM clock {before:.0f} -> {after:.0f} MHz")
    return "; ".join(why)


def fmt(v, digits=1):
    return "" if v is None else f"{v:.{digits}f}"


def context_line(data: dict) -> str:
    ctx = data.get("context", {})
    keys = ["gpu", "compute_capability", "nvidia_driver", "cuda_runtime", "copy_ceiling_GBps",
            "sm_clock_mhz_at_start", "temperature_c_at_start", "clock_event_reasons_at_start"]
    return "Context: " + ", ".join(f"{k} = {ctx[k]}" for k in keys if k in ctx) + f", date = {ctx.get('date', '?')}"


def chapter_table(chapter: str, data: dict, bench_dir: Path = BENCH_DIR) -> str:
    lines = [f"## {chapter}", "", context_line(data)]
    reps = max((len(r) for r in grouped(data).values()), default=0)
    lines += ["", f"Medians over {reps} repetition(s). vs base: the row's speed over its base's, timed "
              "alternately in the same iterations (bench::run_vs).", ""]
    lines += ["| benchmark | median time (us) | GB/s | TFLOP/s | % of copy | vs base | other counters | SM MHz after |",
              "| --- | ---: | ---: | ---: | ---: | ---: | --- | ---: |"]
    for name, rs in grouped(data).items():
        err = next((error_of(b) for b in rs if error_of(b)), None)
        shown = display_name(rs[0])
        if err:
            lines.append(f"| {shown} | error: {err} |  |  |  |  |  |  |")
            continue
        keys = sorted({k for b in rs for k, v in b.items() if isinstance(v, (int, float)) and k not in STANDARD_KEYS})
        other = ", ".join(f"{k} {row_median(rs, k):.4g}" for k in keys if row_median(rs, k) is not None)
        lines.append(f"| {shown} | {fmt(row_median(rs, 'median_us'), 1)} | {fmt(row_median(rs, 'GB/s'), 0)} | "
                     f"{fmt(row_median(rs, 'TFLOP/s'), 2)} | {fmt(row_median(rs, 'pct_of_copy'), 1)} | "
                     f"{fmt(row_median(rs, 'vs_base'), 3)} | {other} | {fmt(row_median(rs, 'sm_mhz_after'), 0)}"
                     + (f" THROTTLED: {flag}" if (flag := throttle_flag(rs)) else "") + " |")
    lines += ladder_tables(chapter, data, bench_dir)
    ratios = key_ratios(chapter, data, bench_dir)
    if ratios:
        lines += ["", f"Key ratios ({declarations_path(chapter, Path('bench')).as_posix()}; median of the "
                  "repetitions, min..max):", ""]
        lines += [f"- {r['label']}: {r['text']}" for r in ratios]
    return "\n".join(lines) + "\n"


def plot_specs(chapter: str, data: dict, prefix: str = "") -> list[tuple[str, str, str, dict[str, list[tuple[float, float]]]]]:
    """The plots of one chapter, without drawing them: (file name, family, x argument, series).
    Family = the benchmark name without its key:value arguments; the x axis is the argument with
    the most distinct values (stride, offset, bytes); the other arguments make the series."""
    groups: dict[str, list[tuple[dict[str, int], float, str]]] = {}
    for name, reps in grouped(data).items():
        args_ = {k: int(v) for k, v in re.findall(r"/(\w+):(\d+)", name)}
        y = row_median(reps, "GB/s")
        if not args_ or y is None:
            continue
        groups.setdefault(name.split("/")[0], []).append((args_, y, reps[0].get("label", "")))
    specs = []
    for fam, pts in groups.items():
        keys = {k for a, _, _ in pts for k in a}
        xkey = max(sorted(keys), key=lambda k: len({a.get(k) for a, _, _ in pts}))
        series: dict[str, list[tuple[float, float]]] = {}
        count = 0
        for a, y, label in pts:
            if xkey not in a:
                continue
            rest = (" ".join(f"{k}:{v}" for k, v in a.items() if k != xkey) + (f" {label}" if label else "")).strip()
            series.setdefault(rest or fam, []).append((float(a[xkey]), y))
            count += 1
        if count < 3:
            continue
        fname = f"{prefix}{chapter}_{re.sub(r'[^A-Za-z0-9_]+', '_', fam)}_{xkey}.png"
        specs.append((fname, fam, xkey, series))
    return specs


def draw_plot(path: Path, chapter: str, fam: str, arg: str, series: dict[str, list[tuple[float, float]]]) -> bool:
    """Draws one plot spec to `path` (False when matplotlib is missing)."""
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        return False
    fig, ax = plt.subplots(figsize=(6, 3.5))
    xs = [x for p in series.values() for x, _ in p]
    for name, p in series.items():
        p = sorted(p)
        ax.plot([x for x, _ in p], [y for _, y in p], marker="o", label=name)
    if max(xs) / max(min(xs), 1) > 64:
        ax.set_xscale("log", base=2)
    ax.set_xlabel(arg)
    ax.set_ylabel("GB/s")
    ax.set_title(f"{chapter} {fam}")
    ax.grid(True, alpha=0.3)
    if len(series) > 1:
        ax.legend(fontsize=7)
    fig.tight_layout()
    fig.savefig(path, dpi=110, metadata={"Software": None})  # no version stamp
    plt.close(fig)
    return True


def chapter_of(path: Path) -> str:
    return path.stem.replace("bench_", "")


def report_text(title: str, jsons: list[Path], out_dir: Path | None, bench_dir: Path = BENCH_DIR,
                plot_prefix: str = "", intro: str | None = None) -> str:
    """The report; the plots it links are drawn into out_dir when out_dir is given (and matplotlib
    is installed). The text is the same either way."""
    parts = [f"# {title}", "",
             intro or ("Generated by scripts/report.py from Google Benchmark JSON; every number below was "
                       "measured in the run named by its context line. Ratios compare rows of the same run."), ""]
    for path in jsons:
        chapter = chapter_of(path)
        data = json.loads(path.read_text())
        parts.append(chapter_table(chapter, data, bench_dir))
        for fname, fam, arg, series in plot_specs(chapter, data, plot_prefix):
            if out_dir is not None:
                draw_plot(out_dir / fname, chapter, fam, arg, series)
            parts.append(f"![{Path(fname).stem}]({fname})\n")
    return "\n".join(parts)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("out_dir", type=Path)
    ap.add_argument("json", nargs="+", type=Path)
    ap.add_argument("--title", default="Benchmark results")
    args = ap.parse_args()
    args.out_dir.mkdir(parents=True, exist_ok=True)
    (args.out_dir / "report.md").write_text(report_text(args.title, args.json, args.out_dir))
    print(f"report: wrote {args.out_dir / 'report.md'}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
