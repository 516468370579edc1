#!/usr/bin/env python3
"""Regenerates the measured results from committed benchmark JSON: the only writer of numbers.

    scripts/results.py            # rewrite docs/results/<GPU>.md (+ plots) and the README blocks
    scripts/results.py --check    # change nothing; exit 1 and name the files that would change
    scripts/results.py --no-plots # leave the PNG plots alone (matplotlib not needed)
    scripts/results.py --import OUT/bench   # after scripts/gpu_suite OUT: copy its JSON to
                                            # docs/results/raw/<GPU>/, then rewrite as above

Input: docs/results/raw/<GPU>/bench_chNN.json, the Google Benchmark JSON of a GPU suite run
(scripts/gpu_suite OUT copies them to OUT/bench/; docs/results/README.md has the one command that
commits them). Output:
  * docs/results/<GPU>.md: every row of every chapter (medians over the repetitions), the ladders
    and the key ratios of bench/chNN/chNN.toml, with plots docs/results/<GPU>_chNN_<family>_<arg>.png;
  * the result blocks of README.md (`<!-- results:summary begin -->` .. `end -->`: the ratios
    marked `headline = true`) and of each chapter README (`<!-- results:chNN begin -->` .. `end -->`:
    every declared ratio with its spread and goal; `<!-- results:chNN-NAME begin -->`: the [[ladder]]
    declared with `block = "NAME"`, a row per step, its median and % of the vendor row), from the
    primary GPU (--gpu, default H200 when present, else the first); a chapter that GPU has no run of
    shows another GPU's run, named in its block and rows;
  * the block `<!-- results:goals begin -->` of docs/instructors.md: every exercise speed goal
    beside the reference's measured ratio;
  * the roofline of every row with FLOPs and bytes (chapters/09_profiling/tools/roofline.py):
    docs/results/<GPU>_roofline.md (+ .png) and the block `results:ch09-roofline` of chapter 9;
  * what ncu counted on each tensor-core GEMM step (chapters/06_libraries/tools/tc_ncu.py, from
    docs/results/raw/<GPU>/ch06_tc_ncu.json): the block `results:ch06-tc-ncu` of chapter 6.
Each block names the GPU and the run's date.
Without raw JSON a block says so and lists the declared ratios and goals, with no number measured.
The output depends only on the committed files, so running it twice changes nothing
(scripts/test_report.py checks that, and that the committed tree is what it writes).
"""
from __future__ import annotations

import argparse
import importlib.util
import json
import re
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import report  # noqa: E402

ROOT = Path(__file__).resolve().parent.parent
BEGIN = "<!-- results:{key} begin -->"
END = "<!-- results:{key} end -->"


def block_re(key: str) -> re.Pattern:
    return re.compile(re.escape(BEGIN.format(key=key)) + r"\n?(.*?)" + re.escape(END.format(key=key)), re.S)


def replace_block(text: str, key: str, content: str) -> str | None:
    """`text` with the block `key` holding `content` (None when the markers are absent)."""
    rx = block_re(key)
    if not rx.search(text):
        return None
    body = content.rstrip("\n") + "\n"
    return rx.sub(lambda _: BEGIN.format(key=key) + "\n" + body + END.format(key=key), text, count=1)


class Tree:
    """The files results.py reads and writes, under one root (the repository, or a test's copy)."""

    def __init__(self, root: Path):
        self.root = root
        self.bench = root / "bench"
        self.results = root / "docs" / "results"
        self.raw = self.results / "raw"

    def chapters(self) -> list[str]:
        return report.declared_chapters(self.bench)

    def toml(self, chapter: str) -> str:
        """The chapter's declarations file as the generated text names it (bench/chNN/chNN.toml)."""
        return report.declarations_path(chapter, self.bench).relative_to(self.root).as_posix()

    def chapter_readme(self, chapter: str) -> Path | None:
        found = sorted((self.root / "chapters").glob(f"{chapter[2:]}_*/README.md"))
        return found[0] if found else None

    def gpus(self) -> list[str]:
        return sorted(p.name for p in self.raw.iterdir() if p.is_dir() and list(p.glob("bench_ch*.json"))) \
            if self.raw.is_dir() else []

    def jsons(self, gpu: str) -> list[Path]:
        return sorted((self.raw / gpu).glob("bench_ch*.json"))


def run_info(data: dict) -> tuple[str, str, int]:
    """(GPU name, date YYYY-MM-DD, repetitions) of one benchmark JSON."""
    ctx = data.get("context", {})
    reps = max((len(r) for r in report.grouped(data).values()), default=0)
    return ctx.get("gpu", "unknown GPU"), str(ctx.get("date", "?"))[:10], reps


def goal_text(r: dict) -> str:
    if r.get("goal") is None:
        return ""
    text = f"{r['exercise']}: >= {r['goal']:.2f}x"
    if r.get("met") is not None:
        text += ", met" if r["met"] else ", **missed**"
    return text


def measured_cells(r: dict) -> tuple[str, str]:
    if r["ratio"] is None:
        return "not measured", ("; ".join(r["errors"]) if r["errors"] else "rows missing in this run")
    head = f"parity ({r['ratio']:.2f}x)" if r["parity"] else f"{r['ratio']:.2f}x"
    how = "interleaved" if r["interleaved"] else "separate rows"
    return head, f"{r['lo']:.2f}..{r['hi']:.2f} ({r['n']} reps, {how})"


def chapter_block(tree: Tree, chapter: str, gpu: str | None, link: str) -> str:
    decls = report.load_declarations(chapter, tree.bench)["ratio"]
    src = tree.raw / gpu / f"bench_{chapter}.json" if gpu else None
    marker = (f"<!-- Written by scripts/results.py from {tree.toml(chapter)} and "
              f"{src.relative_to(tree.root).as_posix() if src and src.exists() else 'docs/results/raw/<GPU>/bench_' + chapter + '.json'}"
              "; edit those, not this block. -->")
    if not src or not src.exists():
        lines = [marker,
                 f"No measured results are committed yet: `scripts/results.py` writes them here from "
                 f"`docs/results/raw/<GPU>/bench_{chapter}.json` (a GPU suite run; see "
                 f"docs/results/README.md). Declared in `{tree.toml(chapter)}`:", "",
                 "| ratio | speed goal |", "| --- | --- |"]
        lines += [f"| {d['label']} | {goal_text(d)} |" for d in decls]
        return "\n".join(lines)
    data = json.loads(src.read_text())
    name, date, reps = run_info(data)
    lines = [marker,
             f"Measured on {name} on {date} (GPU suite; median of {reps} repetition(s), spread min..max; "
             f"\"parity\" when the spread includes 1.0; full tables: [{link}]({link})):", "",
             "| ratio | median | spread | speed goal |", "| --- | ---: | --- | --- |"]
    for d in decls:
        r = report.ratio_result(d, data)
        head, spread = measured_cells(r)
        lines.append(f"| {d['label']} | {head} | {spread} | {goal_text(r)} |")
    return "\n".join(lines)


def ladder_key(chapter: str, lad: dict) -> str | None:
    """The README block of a [[ladder]] with `block = "name"`: `chNN-name` (None without `block`)."""
    name = lad.get("block")
    if name is None:
        return None
    if not re.fullmatch(r"[a-z0-9_]+", str(name)):
        raise ValueError(f"{report.declarations_path(chapter, Path('bench')).as_posix()}: [[ladder]] {lad['title']}: block must match [a-z0-9_]+")
    return f"{chapter}-{name}"


def ladder_block(tree: Tree, chapter: str, lad: dict, gpu: str | None, link: str) -> str:
    """A declared ladder as a table for the chapter README: a row per step, a column per size, each
    cell the step's median metric and its percentage of the vendor row (report.ladder_table)."""
    src = tree.raw / gpu / f"bench_{chapter}.json" if gpu else None
    have = bool(src and src.exists())
    marker = (f"<!-- Written by scripts/results.py from {tree.toml(chapter)} ([[ladder]] block = "
              f"\"{lad['block']}\") and "
              f"{src.relative_to(tree.root).as_posix() if have else 'docs/results/raw/<GPU>/bench_' + chapter + '.json'}"
              "; edit those, not this block. -->")
    if not have:
        return "\n".join([marker,
                          f"No measured results are committed yet: `scripts/results.py` writes the ladder "
                          f"\"{lad['title']}\" here from `docs/results/raw/<GPU>/bench_{chapter}.json` (rows "
                          f"`{lad['step']}`, each beside `{lad['vendor']}`; see docs/results/README.md)."])
    data = json.loads(src.read_text())
    name, date, reps = run_info(data)
    table = report.ladder_table(lad, data)
    if not table:
        return "\n".join([marker, f"No row of the run of {date} on {name} matches `{lad['step']}`."])
    return "\n".join([marker,
                      f"Measured on {name} on {date} (GPU suite; median of {reps} repetition(s); full "
                      f"tables: [{link}]({link})). {table[1]}", *table[2:]])


def goals_block(tree: Tree, gpu: str | None) -> str:
    """Every exercise speed goal of bench/chNN/chNN.toml beside the reference's measured ratio (for
    docs/instructors.md: the goals are set from the reference's ratio, so they are read together)."""
    marker = ("<!-- Written by scripts/results.py from bench/chNN/chNN.toml (exercise, goal) and docs/results/raw/; "
              "edit those, not this block. -->")
    rows, run = [], None
    for chapter in tree.chapters():
        cg = chapter_gpu(tree, chapter, gpu)
        src = tree.raw / cg / f"bench_{chapter}.json" if cg else None
        data = json.loads(src.read_text()) if src and src.exists() else None
        if data and run is None and cg == gpu:
            run = run_info(data)
        other = run_info(data)[0] if data and cg != gpu else None  # a chapter measured elsewhere only
        for d in report.load_declarations(chapter, tree.bench)["ratio"]:
            if d.get("goal") is None:
                continue
            rows.append((d["exercise"], chapter, d, data, other))
    rows.sort(key=lambda r: (r[1], [int(x) for x in r[0].split(".") if x.isdigit()]))
    if run:
        intro = (f"The reference's ratio measured by `scripts/gpu_suite` on {run[0]} on {run[1]} (median of "
                 f"{run[2]} repetition(s), spread min..max):")
    else:
        intro = ("No measured results are committed yet: the reference column is written here from "
                 "`docs/results/raw/<GPU>/` (a GPU suite run; see docs/results/README.md).")
    lines = [marker, intro, "", "| ex | ratio (`bench/chNN/chNN.toml`) | goal | reference |", "| --- | --- | ---: | --- |"]
    for ex, chapter, d, data, other in rows:
        if data is None:
            ref = "not measured yet"
        else:
            head, spread = measured_cells(report.ratio_result(d, data))
            ref = f"{head}, {spread}" if not head.startswith("not") else f"{head}: {spread}"
            if other:
                ref += f" (on {other})"
        lines.append(f"| {ex} | {d['label']} | {d['goal']:.2f}x | {ref} |")
    return "\n".join(lines)


def summary_block(tree: Tree, gpu: str | None) -> str:
    marker = "<!-- Written by scripts/results.py from bench/chNN/chNN.toml (headline = true) and docs/results/raw/; edit those, not this block. -->"
    rows, run = [], None
    for chapter in tree.chapters():
        cg = chapter_gpu(tree, chapter, gpu)
        src = tree.raw / cg / f"bench_{chapter}.json" if cg else None
        data = json.loads(src.read_text()) if src and src.exists() else None
        if data and run is None and cg == gpu:
            run = run_info(data)
        other = f" (on {run_info(data)[0]})" if data and cg != gpu else ""
        for d in report.load_declarations(chapter, tree.bench)["ratio"]:
            if not d.get("headline"):
                continue
            if data is None:
                rows.append(f"| {chapter[2:]} | {d['label']} | not measured yet | |")
                continue
            head, spread = measured_cells(report.ratio_result(d, data))
            rows.append(f"| {chapter[2:]} | {d['label']} | {head}{other} | {spread} |")
    if run:
        intro = (f"Measured by `scripts/gpu_suite` on {run[0]} on {run[1]}, each against the vendor library "
                 f"in the same run (median of {run[2]} repetition(s), spread min..max; full tables: "
                 f"[docs/results/{gpu}.md](docs/results/{gpu}.md)):")
    else:
        intro = ("No measured results are committed yet: `scripts/results.py` writes them here from "
                 "`docs/results/raw/<GPU>/` (a GPU suite run; see docs/results/README.md).")
    return "\n".join([marker, intro, "", "| chapter | ratio | median | spread |", "| --- | --- | ---: | --- |", *rows])


def gpu_slug(name: str) -> str:
    """Directory name for a GPU: "NVIDIA H200" -> "H200", "NVIDIA H100 80GB HBM3" -> "H100_80GB_HBM3"."""
    name = re.sub(r"^NVIDIA\s+", "", name.strip())
    return re.sub(r"[^A-Za-z0-9]+", "_", name).strip("_") or "unknown_GPU"


def import_jsons(tree: Tree, src: Path) -> list[Path]:
    """Copies src/bench_chNN.json (a GPU suite's OUT/bench) to docs/results/raw/<GPU>/."""
    files = sorted(src.glob("bench_ch[0-9][0-9].json"))
    if not files:
        raise SystemExit(f"results: no bench_chNN.json in {src}")
    written = []
    for f in files:
        data = json.loads(f.read_text())
        if not report.rows(data):
            raise SystemExit(f"results: {f} has no benchmark rows")
        dest = tree.raw / gpu_slug(data.get("context", {}).get("gpu", "unknown GPU")) / f.name
        dest.parent.mkdir(parents=True, exist_ok=True)
        dest.write_text(f.read_text())
        written.append(dest)
    return written


def primary_gpu(tree: Tree, wanted: str | None) -> str | None:
    gpus = tree.gpus()
    if wanted:
        if wanted not in gpus:
            raise SystemExit(f"results: no raw JSON for GPU {wanted!r} under {tree.raw} (have: {gpus})")
        return wanted
    return "H200" if "H200" in gpus else (gpus[0] if gpus else None)


def chapter_gpu(tree: Tree, chapter: str, primary: str | None) -> str | None:
    """The GPU whose run a chapter's numbers come from: the primary GPU's when it has the chapter's
    JSON, else the first other GPU that has it (a chapter measured only on an H100 shows that run,
    and its block names the GPU), else the primary (nothing measured)."""
    for g in ([primary] if primary else []) + [g for g in tree.gpus() if g != primary]:
        if (tree.raw / g / f"bench_{chapter}.json").exists():
            return g
    return primary


def outputs(tree: Tree, gpu_wanted: str | None, plots: bool) -> dict[Path, str]:
    """Every file results.py writes (the plots are drawn by report.report_text itself)."""
    out: dict[Path, str] = {}
    for gpu in tree.gpus():
        jsons = tree.jsons(gpu)
        name, date, _ = run_info(json.loads(jsons[0].read_text()))
        rel = " ".join(j.relative_to(tree.root).as_posix() for j in jsons)
        intro = (f"<!-- Generated by scripts/results.py from {rel}; do not edit: change the benchmarks or "
                 f"bench/chNN/chNN.toml and run the GPU suite again. -->\n"
                 f"Every number below was measured in the run named by its context line; ratios compare rows "
                 f"of the same run (bench/chNN/chNN.toml declares them).")
        out[tree.results / f"{gpu}.md"] = report.report_text(
            f"Results on {name} ({date})", jsons, tree.results if plots else None, tree.bench,
            plot_prefix=f"{gpu}_", intro=intro)
    gpu = primary_gpu(tree, gpu_wanted)
    readme = tree.root / "README.md"
    if readme.exists():
        new = replace_block(readme.read_text(), "summary", summary_block(tree, gpu))
        if new is not None:
            out[readme] = new
    instructors = tree.root / "docs" / "instructors.md"
    if instructors.exists():
        new = replace_block(instructors.read_text(), "goals", goals_block(tree, gpu))
        if new is not None:
            out[instructors] = new
    for chapter in tree.chapters():
        path = tree.chapter_readme(chapter)
        if path is None:
            continue
        text = out.get(path, path.read_text())
        cg = chapter_gpu(tree, chapter, gpu)
        link = f"../../docs/results/{cg}.md" if cg else "../../docs/results/"
        new = replace_block(text, chapter, chapter_block(tree, chapter, cg, link))
        if new is not None:
            out[path] = text = new
        for lad in report.load_declarations(chapter, tree.bench)["ladder"]:
            key = ladder_key(chapter, lad)
            if key is None:
                continue
            new = replace_block(text, key, ladder_block(tree, chapter, lad, cg, link))
            if new is None:
                raise SystemExit(f"results: {tree.toml(chapter)} declares ladder block {key!r}, but "
                                 f"{path.relative_to(tree.root)} has no <!-- results:{key} begin/end --> markers")
            out[path] = text = new
    out.update(roofline_outputs(tree, gpu, plots, out))
    out.update(tc_ncu_outputs(tree, gpu, out))
    return out


def chapter_tool(path: str, name: str):
    """A chapter's tool module from this checkout (None when the file is absent)."""
    tool = ROOT / path
    if not tool.exists():
        return None
    spec = importlib.util.spec_from_file_location(name, tool)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def roofline_outputs(tree: Tree, gpu: str | None, plots: bool, pending: dict[Path, str]) -> dict[Path, str]:
    """Chapter 9's roofline of every row (its tool, from this checkout, on `tree`'s data); nothing
    when the chapter is absent."""
    mod = chapter_tool("chapters/09_profiling/tools/roofline.py", "cudalab_roofline")
    return mod.outputs(tree.root, gpu, plots, pending) if mod else {}


def tc_ncu_outputs(tree: Tree, gpu: str | None, pending: dict[Path, str]) -> dict[Path, str]:
    """Chapter 6's block `results:ch06-tc-ncu` (chapters/06_libraries/tools/tc_ncu.py: what ncu
    counted on each tensor-core step, from docs/results/raw/<GPU>/ch06_tc_ncu.json); nothing when
    the tool is absent."""
    mod = chapter_tool("chapters/06_libraries/tools/tc_ncu.py", "cudalab_tc_ncu")
    return mod.outputs(tree.root, gpu, pending) if mod else {}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--root", type=Path, default=ROOT, help=argparse.SUPPRESS)
    ap.add_argument("--gpu", help="the GPU whose run fills the README blocks (a directory under docs/results/raw)")
    ap.add_argument("--check", action="store_true", help="write nothing; exit 1 when a file would change")
    ap.add_argument("--no-plots", action="store_true", help="do not (re)write the PNG plots")
    ap.add_argument("--import", dest="import_dir", type=Path,
                    help="first copy DIR/bench_chNN.json (scripts/gpu_suite OUT/bench) to docs/results/raw/<GPU>/")
    args = ap.parse_args()
    tree = Tree(args.root.resolve())
    if args.import_dir:
        if args.check:
            raise SystemExit("results: --import and --check do not go together")
        for dest in import_jsons(tree, args.import_dir):
            print(f"results: imported {dest.relative_to(tree.root)}")
    files = outputs(tree, args.gpu, plots=not (args.check or args.no_plots))
    changed = [p for p, text in files.items() if not p.exists() or p.read_text() != text]
    if args.check:
        for p in changed:
            print(f"results: would change {p.relative_to(tree.root)}")
        if not changed:
            print(f"results: up to date ({len(files)} files)")
        return 1 if changed else 0
    for p in changed:
        p.write_text(files[p])
        print(f"results: wrote {p.relative_to(tree.root)}")
    if not changed:
        print(f"results: nothing to change ({len(files)} files)")
    if not tree.gpus():
        print("results: no raw JSON under docs/results/raw/<GPU>/: the blocks say so (docs/results/README.md)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
