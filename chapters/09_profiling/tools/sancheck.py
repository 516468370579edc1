#!/usr/bin/env python3
"""Runs one case of chapter 9's bug hunt (apps/hunt.cpp) under the tool meant for it, for ctest.

    sancheck.py --list                                      # name|exercise|tool per case (CMake reads it)
    sancheck.py --exe ch09_hunt_starter --case shift --expect found    # the planted bug is reported
    sancheck.py --exe ch09_hunt --case shift --expect clean            # the fixed case is clean
    sancheck.py --exe ch09_hunt_starter --case shift --expect clean --all-tools   # the exercise

`found`: the case's tool reports an error (its summary count or exit status) whose report holds
the case's error class and the name of the kernel (or host call) at fault; for the one case no
sanitizer can see (a host read before an asynchronous copy ended) the "tool" is a plain run, whose
kernel is slow by construction, and found means the program said its answer was wrong.
`clean`: the tool (with --all-tools: memcheck with the leak check, racecheck, synccheck,
initcheck and a plain run) reports nothing and the program's answer is right.
Without a GPU the runner says "skipped: <reason>" (ctest's skip pattern) and exits 0; a skip is
never a pass. Exit 0: as expected; 1: not; 2: usage.
"""
from __future__ import annotations

import argparse
import os
import re
import shutil
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[3] / "scripts"))
import labtools as lt  # noqa: E402  (parse_sanitizer: the suite's reading of a summary line)


@dataclass(frozen=True)
class Case:
    exercise: str
    tool: str   # memcheck | leak | racecheck | synccheck | initcheck | plain
    klass: str  # regex: the error class in the tool's report
    where: str  # regex: the kernel (or host call) the report names


# One owner: the list of cases, their exercises and what each tool must say about the broken one.
CASES: dict[str, Case] = {
    "shift": Case("9.2", "memcheck", r"Invalid __global__ write of size 4", r"shift_kernel"),
    "column_sums": Case("9.3", "memcheck", r"Invalid __shared__ (write|read) of size 4", r"column_sum_kernel"),
    "neighbor_diff": Case("9.4", "racecheck", r"(Race reported|hazard)", r"neighbor_diff_kernel"),
    # A barrier only thread 0 reaches: the other threads read `lead` unordered with its write, the
    # hazard racecheck reports. (synccheck saw nothing on the H200 when the threads that skipped the
    # barrier were past n and exited: since Volta an exited thread counts as arrived.)
    "block_lead": Case("9.5", "racecheck", r"(Race reported|hazard)", r"block_lead_kernel"),
    "accumulate": Case("9.6", "initcheck", r"Uninitialized __global__ memory read", r"accumulate_kernel"),
    "normalize": Case("9.7", "leak", r"Leaked \d+ bytes", r"cudaMalloc|hunt_normalize"),
    "quad_sums": Case("9.8", "memcheck", r"misaligned", r"quad_sum_vec_kernel"),
    "two_stage": Case("9.9", "memcheck", r"Invalid __global__ read of size 4", r"add_one_kernel"),
    "readback": Case("9.10", "plain", r"read before the copy ended", r"case readback"),
    "graph_replay": Case("9.11", "memcheck", r"Invalid __global__ write of size 4", r"affine_kernel"),
}
ALL_TOOLS = ("leak", "racecheck", "synccheck", "initcheck", "plain")


def tool_args(tool: str) -> list[str]:
    """compute-sanitizer's arguments for a tool name of CASES ([] for a plain run)."""
    if tool == "plain":
        return []
    if tool == "leak":
        return ["--tool", "memcheck", "--leak-check", "full"]
    return ["--tool", tool]


@dataclass
class Verdict:
    ok: bool
    why: str


def judge_found(case: Case, rc: int | None, out: str) -> Verdict:
    """Did the tool report the planted bug (error class and kernel in its report)?"""
    if case.tool == "plain":
        if rc == 1 and re.search(case.klass, out) and re.search(case.where, out):
            return Verdict(True, "the plain run read a wrong answer: " + re.search(case.klass + r".*", out).group(0))
        return Verdict(False, f"the plain run exited {rc} without '{case.klass}'")
    run = lt.parse_sanitizer("ch09_hunt", "racecheck" if case.tool == "racecheck" else "memcheck", rc, out)
    # A leak is reported in memcheck's LEAK SUMMARY, whether or not its ERROR SUMMARY counts it.
    leaked = case.tool == "leak" and re.search(r"LEAK SUMMARY: [1-9]\d* bytes leaked", out)
    if not run.found and not leaked:
        return Verdict(False, f"{case.tool} reported nothing ({run.summary})")
    if not re.search(case.klass, out):
        return Verdict(False, f"{case.tool} reported ({run.summary}) but no '{case.klass}' in its report")
    if not re.search(case.where, out):
        return Verdict(False, f"{case.tool} reported '{case.klass}' but never named '{case.where}'")
    return Verdict(True, f"{case.tool}: {re.search(case.klass, out).group(0)} in {case.where} ({run.summary})")


def judge_clean(tool: str, rc: int | None, out: str) -> Verdict:
    """Is the run clean: nothing reported and the program's answer right (exit 0)?"""
    if tool == "plain":
        return Verdict(rc == 0, "right answer" if rc == 0 else f"the plain run exited {rc}")
    run = lt.parse_sanitizer("ch09_hunt", "racecheck" if tool == "racecheck" else "memcheck", rc, out)
    if not run.clean:
        return Verdict(False, f"{tool}: {run.summary}")
    if re.search(r"LEAK SUMMARY: [1-9]\d* bytes leaked", out):
        return Verdict(False, f"{tool}: " + re.search(r"LEAK SUMMARY: .*", out).group(0))
    if rc != 0:
        return Verdict(False, f"{tool} clean, but the program exited {rc} (a wrong answer or a CUDA error)")
    return Verdict(True, f"{tool}: {run.summary}")


def run(cmd: list[str], log) -> tuple[int | None, str]:
    try:
        p = subprocess.run(cmd, capture_output=True, text=True, timeout=240)
        rc, out = p.returncode, p.stdout + p.stderr
    except subprocess.TimeoutExpired:
        rc, out = None, "timed out after 240 s"
    print("$ " + " ".join(cmd) + "\n" + out, file=log)
    return rc, out


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--list", action="store_true", help="print name|exercise|tool per case and exit")
    ap.add_argument("--exe", type=Path, help="ch09_hunt or ch09_hunt_starter")
    ap.add_argument("--case", choices=sorted(CASES))
    ap.add_argument("--expect", choices=("found", "clean"))
    ap.add_argument("--all-tools", action="store_true", help="with --expect clean: every tool, not only the case's")
    ap.add_argument("--sanitizer", default=os.environ.get("COMPUTE_SANITIZER") or shutil.which("compute-sanitizer"),
                    help="compute-sanitizer (default: $COMPUTE_SANITIZER, else PATH)")
    args = ap.parse_args(argv)
    if args.list:
        for name, c in CASES.items():
            print(f"{name}|{c.exercise}|{c.tool}")
        return 0
    if not (args.exe and args.case and args.expect):
        ap.print_usage(sys.stderr)
        print("sancheck: --exe, --case and --expect are required (or --list)", file=sys.stderr)
        return 2
    if args.all_tools and args.expect != "clean":
        print("sancheck: --all-tools goes with --expect clean", file=sys.stderr)
        return 2
    if not args.exe.is_file():
        print(f"sancheck: --exe {args.exe}: no such executable (build it first)", file=sys.stderr)
        return 2
    case = CASES[args.case]
    probe = subprocess.run([str(args.exe), "--probe"], capture_output=True, text=True, timeout=60)
    if probe.stdout.startswith("skipped: "):
        print(probe.stdout.strip())
        return 0
    tools = ALL_TOOLS if args.all_tools else (case.tool,)
    if any(t != "plain" for t in tools) and not args.sanitizer:
        print("skipped: compute-sanitizer not found (PATH or $COMPUTE_SANITIZER)")
        return 0
    failed = False
    for tool in tools:
        cmd = [str(args.exe), args.case]
        if tool != "plain":
            cmd = [args.sanitizer, *tool_args(tool), "--error-exitcode", str(lt.SANITIZER_ERROR_EXITCODE),
                   "--print-limit", "20", *cmd]
        rc, out = run(cmd, sys.stdout)
        v = judge_found(case, rc, out) if args.expect == "found" else judge_clean(tool, rc, out)
        print(f"sancheck: {args.case} ({args.exe.name}) expect {args.expect} under {tool}: "
              f"{'as expected' if v.ok else 'NOT as expected'}: {v.why}")
        failed |= not v.ok
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
