#!/usr/bin/env python3
"""Chapter 8's multi-GPU measurements on however many GPUs this machine has.

    python3 chapters/08_multi_gpu/tools/ch08_multi_gpu.py [--build build/gpu] [--out docs/results] [--quick]
    python3 chapters/08_multi_gpu/tools/ch08_multi_gpu.py --render docs/results/ch08_multi_gpu_1gpu.json [--build DIR]

Runs bench_ch08 (all-reduce by size, 8 B to 1 GiB: the hand ring of exercise 8.3 over P2P on every
GPU beside NCCL on the same GPUs; NCCL's all-gather, reduce-scatter and broadcast; the ring with 4
ranks simulated on GPU 0; the P2P copy matrix one way and both ways and its latency; the NVLink
link matrix from NVML; the DDP-like step on one rank and on every GPU, with the cost model's
speedup beside the measured one; the tensor-parallel GEMM split by columns and by rows on 1, 2, 4,
8 GPUs up to those present), NCCL's all-reduce with one process per GPU through mpiexec (where MPI
was found), `nvidia-smi topo -m` where present, and ch08_cost_model, then writes
under --out:
    ch08_multi_gpu_<N>gpu.json   the benchmark's JSON, the topology text and the model's rows
    ch08_multi_gpu_<N>gpu.md     the tables: busbw by GPU count and size (ring, NCCL, ring/NCCL, model),
                                 NCCL's other collectives, the 4-rank ring simulated on GPU 0, the DDP
                                 step, the tensor-parallel GEMM, NCCL through mpiexec, P2P matrices,
                                 NVLink, the model's predictions
--render rewrites the .md beside a saved .json from its benchmark JSON (no GPU: after a change to
the tables; the model, a CPU program, runs again and must give the rows the .json holds).
NCCL_NVLS_ENABLE=0 is set for the run unless the environment sets it. Standard library only.
"""
from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[3]
ROW = re.compile(r"^BM_(?P<kind>ring_allreduce|nccl_allreduce)/gpus:(?P<gpus>\d+)/bytes:(?P<bytes>\d+)")
P2P = re.compile(r"^BM_p2p_copy/src:(?P<src>\d+)/dst:(?P<dst>\d+)/(?P<dir>one_way|both_ways)")
P2P_LATENCY = re.compile(r"^BM_p2p_latency/src:(?P<src>\d+)/dst:(?P<dst>\d+)")


def human_bytes(b: int) -> str:
    for unit, size in (("GiB", 1 << 30), ("MiB", 1 << 20), ("KiB", 1 << 10)):
        if b >= size and b % size == 0:
            return f"{b // size} {unit}"
    return f"{b} B"


def matching(benchmarks: list[dict], *patterns: re.Pattern):
    """(row, match, index of the pattern) for every measured row (no aggregate, no error row) whose
    name one of `patterns` matches, in the JSON's order."""
    for b in benchmarks:
        if b.get("run_type") == "aggregate" or b.get("error_occurred"):
            continue
        for i, pattern in enumerate(patterns):
            if m := pattern.match(b.get("name", "")):
                yield b, m, i
                break


def allreduce_table(benchmarks: list[dict]) -> tuple[int, list[dict]]:
    """The most GPUs measured, and rows by GPU count and size: {gpus, bytes, ring_busbw, nccl_busbw,
    ring_us, nccl_us, ratio, model_busbw} (None where absent; the model's only on 2+ GPUs)."""
    by_key: dict[tuple[int, int], dict] = {}
    for b, m, _ in matching(benchmarks, ROW):
        key = (int(m["gpus"]), int(m["bytes"]))
        row = by_key.setdefault(key, {"gpus": key[0], "bytes": key[1], "ring_busbw": None, "nccl_busbw": None,
                                      "ring_us": None, "nccl_us": None, "model_busbw": None})
        kind = "ring" if m["kind"] == "ring_allreduce" else "nccl"
        row[f"{kind}_busbw"] = b.get("busbw_GB/s")
        row[f"{kind}_us"] = b.get("median_us")
        row["model_busbw"] = b.get("model_busbw_GB/s", row["model_busbw"])
    rows = [by_key[k] for k in sorted(by_key)]
    for r in rows:
        r["ratio"] = (r["ring_us"] and r["nccl_us"]) and r["nccl_us"] / r["ring_us"] or None
    return max((k[0] for k in by_key), default=0), rows


SIMULATED = re.compile(r"^BM_ring_simulated/ranks:(?P<ranks>\d+)/bytes:(?P<bytes>\d+)")


def simulated_table(benchmarks: list[dict]) -> list[dict]:
    """The ring with N ranks simulated on one GPU: {ranks, bytes, us, algbw, busbw} by size."""
    rows = [{"ranks": int(m["ranks"]), "bytes": int(m["bytes"]), "us": b.get("median_us"),
             "algbw": b.get("algbw_GB/s"), "busbw": b.get("busbw_GB/s")} for b, m, _ in matching(benchmarks, SIMULATED)]
    return sorted(rows, key=lambda r: (r["ranks"], r["bytes"]))


DDP = re.compile(r"^BM_ddp/(?P<size>\w+)/ranks:(?P<ranks>\d+)/sync:(?P<sync>\w+)")


def ddp_table(benchmarks: list[dict]) -> list[dict]:
    """The DDP step by model size, ranks and gradient sync: step time, measured speedup over one
    rank, and the cost model's (None where the ranks share a GPU: no link to model)."""
    return [{"size": m["size"], "ranks": int(m["ranks"]), "sync": m["sync"], "step_ms": b.get("step_ms"),
             "speedup": b.get("speedup"), "model_speedup": b.get("model_speedup"),
             "simulated": bool(b.get("simulated"))} for b, m, _ in matching(benchmarks, DDP)]


TP = re.compile(r"^BM_tp_gemm/(?P<split>columns|rows)/ranks:(?P<ranks>\d+)/n:(?P<n>\d+)")


def tp_table(benchmarks: list[dict]) -> list[dict]:
    """The tensor-parallel GEMM by size, split and ranks: time (ms), TFLOP/s, speedup over one rank
    and efficiency (speedup / ranks)."""
    return [{"n": int(m["n"]), "split": m["split"], "ranks": int(m["ranks"]), "ms": b.get("real_time"),
             "tflops": b.get("TFLOP/s"), "speedup": b.get("speedup"), "efficiency": b.get("efficiency"),
             "model_speedup": b.get("model_speedup"), "simulated": bool(b.get("simulated"))}
            for b, m, _ in matching(benchmarks, TP)]


MPI_LINE = re.compile(r"all-reduce (?P<count>\d+) floats on (?P<ranks>\d+) ranks: (?P<ms>[\d.]+) ms, "
                      r"algbw (?P<algbw>[\d.]+) GB/s, busbw (?P<busbw>[\d.]+) GB/s: (?P<check>sum ok|WRONG SUM)")
MPI_COUNTS = (1 << 18, 1 << 26)  # floats: 1 MiB and 256 MiB


def parse_mpi(text: str) -> dict | None:
    """ch08_allreduce_mpi's result line as {ranks, bytes, ms, algbw, busbw, ok}, or None."""
    m = MPI_LINE.search(text)
    if not m:
        return None
    return {"ranks": int(m["ranks"]), "bytes": int(m["count"]) * 4, "ms": float(m["ms"]),
            "algbw": float(m["algbw"]), "busbw": float(m["busbw"]), "ok": m["check"] == "sum ok"}


def run_mpi(build: Path, ranks: int, env: dict) -> list[dict] | str:
    """NCCL all-reduce with one process per GPU through mpiexec (the launcher of chapter 8's mpi/),
    at 1 MiB and 256 MiB; the reason as a string when it cannot run."""
    exe = build / "chapters" / "08_multi_gpu" / "ch08_allreduce_mpi"
    launcher = shutil.which("mpiexec") or shutil.which("mpirun")
    if not exe.exists():
        return f"{exe.name} was not built (it needs MPI and NCCL at configure time)"
    if not launcher:
        return "no mpiexec or mpirun on PATH"
    env = dict(env, OMPI_ALLOW_RUN_AS_ROOT="1", OMPI_ALLOW_RUN_AS_ROOT_CONFIRM="1")
    rows: list[dict] = []
    for count in MPI_COUNTS:
        p = subprocess.run([launcher, "-n", str(ranks), str(exe), str(count)], capture_output=True, text=True,
                           env=env, timeout=600)
        row = parse_mpi(p.stdout)
        if p.returncode != 0 or row is None:
            tail = (p.stdout + p.stderr).strip().splitlines()
            return f"mpiexec -n {ranks} {exe.name} {count} exited {p.returncode}: " + (tail[-1] if tail else "no output")
        rows.append(row)
    return rows


COLLECTIVE = re.compile(r"^BM_nccl_(?P<kind>allgather|reducescatter|broadcast)/gpus:\d+/bytes:(?P<bytes>\d+)")


def collectives_table(benchmarks: list[dict]) -> list[dict]:
    """NCCL's other collectives by size: {bytes, allgather, reducescatter, broadcast} busbw (GB/s)."""
    by_size: dict[int, dict] = {}
    for b, m, _ in matching(benchmarks, COLLECTIVE):
        row = by_size.setdefault(int(m["bytes"]), {"bytes": int(m["bytes"]), "allgather": None,
                                                    "reducescatter": None, "broadcast": None})
        row[m["kind"]] = b.get("busbw_GB/s")
    return [by_size[k] for k in sorted(by_size)]


def p2p_matrix(benchmarks: list[dict]) -> dict[str, dict[tuple[int, int], float]]:
    """(src, dst) -> GB/s one way and both ways, and -> µs of a 4-byte copy ("latency")."""
    out: dict[str, dict[tuple[int, int], float]] = {"one_way": {}, "both_ways": {}, "latency": {}}
    for b, m, which in matching(benchmarks, P2P, P2P_LATENCY):
        if which == 0:
            out[m["dir"]][(int(m["src"]), int(m["dst"]))] = b.get("GB/s")
        else:
            out["latency"][(int(m["src"]), int(m["dst"]))] = b.get("us")
    return out


def nvlink_table(context: dict) -> tuple[list[list[int]], list[int], list[int]] | str:
    """bench_ch08's NVLink context: (links, other, active), or why it is unavailable."""
    if "nvlink_links" not in context:
        return context.get("nvlink_unavailable", "not reported (a bench_ch08 older than the NVLink matrix)")
    links = [[int(v) for v in r.split()] for r in context["nvlink_links"].split(";")]
    return (links, [int(v) for v in context.get("nvlink_other", "").split()],
            [int(v) for v in context.get("nvlink_active", "").split()])


def fmt(v, spec=".1f") -> str:
    return "—" if v is None else format(v, spec)


def table(title: str, header: list[str], rows: list[list[str]], intro: str = "") -> list[str]:
    """A Markdown section: ## title, an optional paragraph, then the table."""
    return (["", f"## {title}", ""] + ([intro, ""] if intro else [])
            + ["| " + " | ".join(header) + " |", "|---" * len(header) + "|"]
            + ["| " + " | ".join(r) + " |" for r in rows])


def markdown(gpus: int, rows: list[dict], p2p: dict, topo: str, model_md: str,
             collectives: list[dict] | None = None, simulated: list[dict] | None = None,
             nvlink: tuple | str | None = None, ddp: list[dict] | None = None,
             tp: list[dict] | None = None, mpi: list[dict] | str | None = None) -> str:
    lines = [f"# Chapter 8 multi-GPU measurements: {gpus} GPU(s)", "",
             "Written by chapters/08_multi_gpu/tools/ch08_multi_gpu.py (NCCL_NVLS_ENABLE=0). busbw = algbw x 2(n-1)/n, as nccl-tests; "
             "on one GPU busbw is 0 by definition (no link is crossed)."]
    lines += table("All-reduce by GPU count and size",
                   ["GPUs", "bytes", "hand ring busbw (GB/s)", "NCCL busbw (GB/s)", "model busbw (GB/s)",
                    "hand ring (us)", "NCCL (us)", "ring / NCCL speed"],
                   [[str(r.get("gpus", gpus)), human_bytes(r["bytes"]), fmt(r["ring_busbw"]), fmt(r["nccl_busbw"]),
                     fmt(r.get("model_busbw")), fmt(r["ring_us"]), fmt(r["nccl_us"]), fmt(r["ratio"], ".2f")]
                    for r in rows],
                   "model: the cost model's ring all-reduce on NVLink as assumed below (alpha-beta), on 2+ GPUs.")
    if collectives:
        lines += table("NCCL's other collectives (busbw, GB/s; bytes = the whole buffer)",
                       ["bytes", "all-gather", "reduce-scatter", "broadcast"],
                       [[human_bytes(r["bytes"]), fmt(r["allgather"]), fmt(r["reducescatter"]),
                         fmt(r["broadcast"])] for r in collectives])
    if simulated:
        lines += table("The ring with ranks simulated on GPU 0",
                       ["ranks", "bytes", "time (us)", "algbw (GB/s)", "busbw (GB/s)"],
                       [[str(r["ranks"]), human_bytes(r["bytes"]), fmt(r["us"]), fmt(r["algbw"]), fmt(r["busbw"])]
                        for r in simulated],
                       "ch08::ring_allreduce with every rank's buffer and stream on GPU 0: the 2(n-1) steps, "
                       "a kernel per rank each, and the event waits between neighbours are the P2P ring's; "
                       "device memory stands in for the links, so this times the algorithm's steps, not an "
                       "interconnect (busbw as nccl-tests, for comparison only).")
    if ddp:
        lines += table("The DDP-like training step (strong scaling: the global batch split over the ranks)",
                       ["model", "ranks", "gradient sync", "step (ms)", "speedup", "model speedup"],
                       [[r["size"], f"{r['ranks']} (simulated on one GPU)" if r["simulated"] else str(r["ranks"]),
                         r["sync"], fmt(r["step_ms"], ".3f"), fmt(r["speedup"], ".2f"), fmt(r["model_speedup"], ".2f")]
                        for r in ddp],
                       "small: 32 -> 64 -> 1, 256 rows (launch-bound); large: 1024 -> 4096 -> 1, 16384 rows "
                       "(GEMM-bound). Speedup: one rank's step over this step, measured in the same row; the "
                       "model's: ch08::speedup with the one-rank step as compute and NVLink as assumed below "
                       "(none where the ranks share a GPU).")
    if tp:
        lines += table("The tensor-parallel GEMM (C = A B, n x n x n, FP32 on cuBLAS)",
                       ["n", "split", "ranks", "time (ms)", "TFLOP/s", "speedup", "efficiency", "model speedup"],
                       [[str(r["n"]), r["split"], f"{r['ranks']} (simulated on one GPU)" if r["simulated"]
                         else str(r["ranks"]), fmt(r["ms"], ".3f"), fmt(r["tflops"]), fmt(r["speedup"], ".2f"),
                         fmt(r["efficiency"], ".2f"), fmt(r.get("model_speedup"), ".2f")] for r in tp],
                       "columns: each rank a slice of C's columns, then an all-gather (peer copies); rows: each "
                       "rank a partial C over its slice of the inner dimension, then the hand ring all-reduce. "
                       "Speedup: the one-rank product's time over this one; efficiency: speedup / ranks; model: "
                       "the one-rank time / ranks plus the all-reduce (rows) or all-gather (columns) on NVLink "
                       "as assumed below, not overlapped. Each row is checked against one SGEMM before it is "
                       "timed.")
    if isinstance(mpi, str):
        lines += ["", "## NCCL all-reduce, one process per GPU (mpiexec)", "", f"Not run: {mpi}."]
    elif mpi:
        lines += table("NCCL all-reduce, one process per GPU (mpiexec)",
                       ["processes", "bytes", "time (ms)", "algbw (GB/s)", "busbw (GB/s)", "sum"],
                       [[str(r["ranks"]), human_bytes(r["bytes"]), fmt(r["ms"], ".3f"), fmt(r["algbw"]),
                         fmt(r["busbw"]), "ok" if r["ok"] else "WRONG"] for r in mpi],
                       "chapters/08_multi_gpu/mpi: rank 0 makes the NCCL unique id, MPI broadcasts it, each "
                       "process joins with ncclCommInitRank on its GPU; the last of 5 timed runs, checked "
                       "against the sum n(n+1)/2. The same binary runs across nodes.")
    for direction, title in (("one_way", "P2P copy bandwidth, one way (GB/s, 256 MiB, rows = source)"),
                             ("both_ways", "P2P copy bandwidth, both ways at once (sum, GB/s, 256 MiB, rows = source)"),
                             ("latency", "P2P copy latency (µs per 4-byte copy, 1000 back to back, rows = source)")):
        m = p2p.get(direction, {})
        if not m:
            continue
        n = max(max(k) for k in m) + 1
        lines += table(title, ["src \\ dst"] + [str(j) for j in range(n)],
                       [[str(i)] + [fmt(m.get((i, j))) for j in range(n)] for i in range(n)])
    if isinstance(nvlink, str):
        lines += ["", "## NVLink links (NVML)", "", f"Unavailable: {nvlink}."]
    elif nvlink:
        links, other, active = nvlink
        n = len(links)
        lines += table("NVLink links (NVML; active links from the row's GPU to the column's)",
                       ["from \\ to"] + [str(j) for j in range(n)] + ["other (NVSwitch, hidden GPU)", "active"],
                       [[str(i)] + [str(v) for v in links[i]] + [str(other[i]), str(active[i])] for i in range(n)])
    if topo:
        lines += ["", "## nvidia-smi topo -m", "", "```", topo.rstrip(), "```"]
    if model_md:
        lines += ["", "## The cost model's predictions (assumptions, not measurements)", "", model_md.rstrip()]
    return "\n".join(lines) + "\n"


def write_tables(out: Path, data: dict, topo: str, model_md: str, model_json: dict, nvls: str,
                 mpi: list[dict] | str | None = None) -> Path:
    """ch08_multi_gpu_<N>gpu.json and .md under `out` from one bench_ch08 run's JSON; the stem."""
    benchmarks = data.get("benchmarks", [])
    gpus, rows = allreduce_table(benchmarks)
    gpus = gpus or 1
    topo = re.sub(r"\x1b\[[0-9;]*m", "", topo)  # nvidia-smi underlines its header even into a pipe
    stem = out / f"ch08_multi_gpu_{gpus}gpu"
    p2p = p2p_matrix(benchmarks)
    stem.with_suffix(".json").write_text(json.dumps(
        {"gpus": gpus, "nccl_nvls_enable": nvls, "allreduce": rows,
         "p2p": {d: [{"src": s, "dst": t, "us" if d == "latency" else "GB/s": v} for (s, t), v in sorted(m.items())]
                 for d, m in p2p.items()},
         "collectives": collectives_table(benchmarks), "simulated": simulated_table(benchmarks),
         "nvlink": nvlink_table(data.get("context", {})), "ddp": ddp_table(benchmarks),
         "tp": tp_table(benchmarks), "mpi": mpi,
         "topology": topo, "model": model_json, "bench": data}, indent=1) + "\n")
    stem.with_suffix(".md").write_text(markdown(gpus, rows, p2p, topo, model_md, collectives_table(benchmarks),
                                                simulated_table(benchmarks), nvlink_table(data.get("context", {})),
                                                ddp_table(benchmarks), tp_table(benchmarks), mpi))
    return stem


def run_model(model: Path) -> tuple[str, dict]:
    return (subprocess.run([str(model)], capture_output=True, text=True, check=True).stdout,
            json.loads(subprocess.run([str(model), "--json"], capture_output=True, text=True, check=True).stdout))


def render(saved: Path, model: Path) -> int:
    if not model.exists():
        print(f"ch08_multi_gpu: {model} is missing: cmake --build {model.parents[2]} --target ch08_cost_model",
              file=sys.stderr)
        return 2
    old = json.loads(saved.read_text())
    model_md, model_json = run_model(model)
    if model_json != old["model"]:
        print(f"ch08_multi_gpu: the cost model's rows differ from those {saved} holds; run the measurement "
              "again instead", file=sys.stderr)
        return 1
    stem = write_tables(saved.parent, old["bench"], old["topology"], model_md, model_json, old["nccl_nvls_enable"],
                        old.get("mpi"))
    print(f"ch08_multi_gpu: rewrote {stem}.json and .md from {saved}")
    return 0


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--build", default=str(ROOT / "build" / "gpu"))
    ap.add_argument("--out", default=str(ROOT / "docs" / "results"))
    ap.add_argument("--quick", action="store_true", help="0.05 s per row instead of the default")
    ap.add_argument("--render", metavar="JSON", help="rewrite the tables of a saved ch08_multi_gpu_<N>gpu.json")
    args = ap.parse_args()
    build, out = Path(args.build), Path(args.out)
    bench = build / "bench" / "bench_ch08"
    model = build / "chapters" / "08_multi_gpu" / "ch08_cost_model"
    if args.render:
        return render(Path(args.render), model)
    for exe in (bench, model):
        if not exe.exists():
            print(f"ch08_multi_gpu: {exe} is missing: cmake --build {build} --target {exe.name}", file=sys.stderr)
            return 2
    env = dict(os.environ)
    env.setdefault("NCCL_NVLS_ENABLE", "0")
    out.mkdir(parents=True, exist_ok=True)
    raw = out / "ch08_bench_raw.json"
    cmd = [str(bench), f"--benchmark_out={raw}", "--benchmark_out_format=json"]
    if args.quick:
        cmd.append("--benchmark_min_time=0.05s")
    subprocess.run(cmd, check=True, env=env)
    if not raw.exists():  # bench_ch08 found no GPU (it says why) and measured nothing
        print("ch08_multi_gpu: no benchmark output: nothing written", file=sys.stderr)
        return 1
    data = json.loads(raw.read_text())
    raw.unlink()
    topo = ""
    if shutil.which("nvidia-smi"):
        topo = subprocess.run(["nvidia-smi", "topo", "-m"], capture_output=True, text=True).stdout
    model_md, model_json = run_model(model)
    mpi = run_mpi(build, allreduce_table(data.get("benchmarks", []))[0] or 1, env)
    stem = write_tables(out, data, topo, model_md, model_json, env["NCCL_NVLS_ENABLE"], mpi)
    print(f"ch08_multi_gpu: wrote {stem}.json and .md")
    return 0


if __name__ == "__main__":
    sys.exit(main())
