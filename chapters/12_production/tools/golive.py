#!/usr/bin/env python3
"""The go-live checklist runner: every line of the checklist table in chapters/12_production/
README.md is a command of the lab with its pass criterion; this runs them and says which pass.

    golive.py [--build-dir build/gpu] [--out OUT] [--soak 20]       for real (NVML, the GPU)
    golive.py --fake h200_healthy [--out OUT]                        CI: NVML lines on a recorded
                                                                     answer; GPU lines skipped
    golive.py --list                                                 the parsed checklist
    golive.py --strict                                               a skipped line fails too

The table's columns: #, check, needs (cpu | nvml | gpu), command, pass when. Commands use
placeholders: {B} the build directory, {OUT} the output directory, {NVML} "--fake FIXTURE" in a
fake run (empty for real), {SOAK} the soak seconds, {LOAD} the throttle watch's load option (empty
in a fake run). "pass when" holds one or more criteria in backticks:
  `exit 0` / `exit 0, 1`               the command's exit status
  `FILE KEY OP VALUE`                  a JSON file's value (KEY dotted: continuous.ttft_p99_ms),
                                       OP one of == != <= >= < >, VALUE a number, true or false
  `stdout METRIC OP VALUE`             a Prometheus sample in the command's output
A line is SKIP when it needs a GPU in a fake run, when its program is not built or installed, or
when the program itself says so (exit 77).

Exit status: 0 every line passed (or was skipped, unless --strict); 1 a line failed; 2 usage error.
"""
from __future__ import annotations

import argparse
import json
import operator
import os
import re
import shlex
import shutil
import subprocess
import sys
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path

TOOLS = Path(__file__).resolve().parent
ROOT = TOOLS.parents[2]
README = TOOLS.parent / "README.md"
sys.path.insert(0, str(TOOLS))
import exporter  # noqa: E402

SKIP_RC = 77
OPS = {"==": operator.eq, "!=": operator.ne, "<=": operator.le, ">=": operator.ge, "<": operator.lt, ">": operator.gt}


@dataclass
class Line:
    number: str
    check: str
    needs: str
    command: str
    criteria: list[str]


@dataclass
class Result:
    number: str
    check: str
    status: str  # PASS | FAIL | SKIP
    why: str
    command: str = ""
    rc: int | None = None
    seconds: float = 0.0
    output_tail: str = field(default="", repr=False)


def parse_checklist(text: str) -> list[Line]:
    """The rows of the table under the '## Go-live checklist' heading."""
    m = re.search(r"^## Go-live checklist\s*$(.*?)(?=^## |\Z)", text, re.M | re.S)
    if not m:
        raise ValueError("README has no '## Go-live checklist' section")
    lines = []
    for row in m.group(1).splitlines():
        if not row.startswith("|") or row.startswith("| #") or set(row) <= set("|-: "):
            continue
        cells = [c.strip() for c in row.strip().strip("|").split(" | ")]
        if len(cells) != 5:
            raise ValueError(f"checklist row without 5 cells: {row}")
        num, check, needs, cmd, crit = cells
        cm = re.fullmatch(r"`([^`]+)`", cmd)
        if not cm:
            raise ValueError(f"checklist line {num}: the command must be one `...`: {cmd}")
        if needs not in ("cpu", "nvml", "gpu"):
            raise ValueError(f"checklist line {num}: needs must be cpu, nvml or gpu, not {needs!r}")
        crits = re.findall(r"`([^`]+)`", crit)
        if not crits:
            raise ValueError(f"checklist line {num}: no criterion in backticks: {crit}")
        for c in crits:
            check_criterion(c, num)
        lines.append(Line(num, check, needs, cm.group(1), crits))
    return lines


def check_criterion(c: str, num: str) -> None:
    """Raises ValueError unless c is `exit N[, M]`, `FILE KEY OP VALUE` or `stdout METRIC OP VALUE`."""
    if re.fullmatch(r"exit \d+(, ?\d+)*", c):
        return
    parts = c.split()
    if len(parts) == 4 and parts[2] in OPS:
        try:
            _value(parts[3])
            return
        except ValueError:
            pass
    raise ValueError(f"checklist line {num}: criterion `{c}` is not `exit N`, `FILE KEY OP VALUE` or "
                     "`stdout METRIC OP VALUE` (VALUE a number, true or false)")


def expand(cmd: str, env: dict[str, str]) -> str:
    for k, v in env.items():
        cmd = cmd.replace("{" + k + "}", v)
    return re.sub(r"\s+", " ", cmd).strip()


def _dig(doc, key: str):
    for part in key.split("."):
        if isinstance(doc, list):
            doc = doc[int(part)]
        elif isinstance(doc, dict) and part in doc:
            doc = doc[part]
        else:
            raise KeyError(key)
    return doc


def _value(v: str):
    return {"true": True, "false": False}[v] if v in ("true", "false") else float(v)


def judge(crit: str, rc: int, stdout: str, env: dict[str, str]) -> tuple[bool, str]:
    """(passed, what was seen) for one criterion."""
    c = expand(crit, env)
    if c.startswith("exit "):
        allowed = {int(x) for x in re.split(r"[ ,]+", c[5:].strip()) if x}
        return rc in allowed, f"exit {rc}" + ("" if rc in allowed else f" (wanted {c[5:]})")
    parts = c.split()
    if len(parts) != 4 or parts[2] not in OPS:
        raise ValueError(f"criterion {crit!r}: not `exit N`, `FILE KEY OP VALUE` or `stdout METRIC OP VALUE`")
    src, key, op, want = parts
    want_v = _value(want)
    if src == "stdout":
        fam = exporter.parse_exposition(stdout)
        if key not in fam:
            return False, f"{key} not in the output"
        got = fam[key][0][1]
    else:
        try:
            got = _dig(json.loads(Path(src).read_text()), key)
        except FileNotFoundError:
            return False, f"{src} was not written"
        except (KeyError, IndexError, ValueError) as e:
            return False, f"{src}: no {key} ({e})"
    ok = OPS[op](got, want_v)
    return ok, f"{key} = {got}" + ("" if ok else f" (wanted {op} {want})")


def program_missing(cmd: str) -> str | None:
    """Why the line's program cannot run (not built, not installed), or None."""
    argv = shlex.split(cmd)
    prog = argv[1] if argv[0] in ("python3", sys.executable) and len(argv) > 1 else argv[0]
    if "/" in prog:
        p = Path(prog) if Path(prog).is_absolute() else ROOT / prog
        if not p.exists():
            return f"{prog} is not built (cmake --build --preset gpu)" if "build" in prog else f"{prog} missing"
        return None
    if shutil.which(prog) is None:
        return f"{prog} is not installed"
    return None


def run_line(line: Line, env: dict[str, str], fake: bool, timeout: float) -> Result:
    cmd = expand(line.command, env)
    if fake and line.needs == "gpu":
        return Result(line.number, line.check, "SKIP", "needs a GPU (this is a fake-NVML run)", cmd)
    missing = program_missing(cmd)
    if missing:
        return Result(line.number, line.check, "SKIP", missing, cmd)
    t0 = time.monotonic()
    try:
        r = subprocess.run(shlex.split(cmd), cwd=ROOT, capture_output=True, text=True, timeout=timeout)
        rc, out = r.returncode, r.stdout + r.stderr
    except subprocess.TimeoutExpired:
        return Result(line.number, line.check, "FAIL", f"timed out after {timeout:.0f} s", cmd,
                      seconds=time.monotonic() - t0)
    dt = time.monotonic() - t0
    tail = out[-1500:]
    if rc == SKIP_RC:
        last = next((ln for ln in reversed(out.strip().splitlines()) if ln.strip()), "")
        return Result(line.number, line.check, "SKIP", f"the program skipped: {last[:200]}", cmd, rc, dt, tail)
    seen, ok = [], True
    for c in line.criteria:
        good, what = judge(c, rc, r.stdout, env)
        ok &= good
        seen.append(what)
    return Result(line.number, line.check, "PASS" if ok else "FAIL", "; ".join(seen), cmd, rc, dt, tail)


class _Parser(argparse.ArgumentParser):
    def error(self, message: str):
        self.print_usage(sys.stderr)
        self.exit(2, f"golive: {message}\n")


def main(argv: list[str] | None = None) -> int:
    ap = _Parser(prog="golive.py", description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--build-dir", type=Path, default=ROOT / "build" / "gpu")
    ap.add_argument("--out", type=Path, help="where the commands write (default: a fresh folder under /tmp)")
    ap.add_argument("--fake", metavar="FIXTURE", help="NVML lines on this recorded answer; GPU lines skipped")
    ap.add_argument("--soak", type=float, default=20.0, help="seconds of the sustained-load line")
    ap.add_argument("--only", action="append", metavar="N", help="run only line N (repeatable)")
    ap.add_argument("--list", action="store_true")
    ap.add_argument("--strict", action="store_true", help="a skipped line fails the run")
    ap.add_argument("--readme", type=Path, default=README, help=argparse.SUPPRESS)
    ap.add_argument("--timeout", type=float, default=300.0, help="seconds per line")
    args = ap.parse_args(argv)
    try:
        lines = parse_checklist(args.readme.read_text())
    except (OSError, ValueError) as e:
        ap.error(str(e))
    if args.list:
        for ln in lines:
            print(f"{ln.number:>3} [{ln.needs}] {ln.check}: {ln.command}  ->  {'; '.join(ln.criteria)}")
        return 0
    if not 1 <= args.soak <= 3600:
        ap.error(f"--soak {args.soak}: must be in [1, 3600] seconds")
    if args.fake:
        import ch12_nvml as nv
        try:
            nv.Fake(args.fake)
        except (nv.FixtureError, nv.NvmlError) as e:
            ap.error(f"--fake {args.fake}: {e}")
    out = args.out
    if out is None:
        import tempfile
        out = Path(tempfile.mkdtemp(prefix="golive-"))
    out.mkdir(parents=True, exist_ok=True)
    bdir = args.build_dir if args.build_dir.is_absolute() else ROOT / args.build_dir
    soak = f"{args.soak:g}"
    env = {"B": str(bdir), "OUT": str(out.resolve()), "SOAK": soak,
           "NVML": f"--fake {args.fake}" if args.fake else "",
           "LOAD": "" if args.fake else
           f"--load '{bdir}/chapters/12_production/ch12_load --seconds {soak}'"}
    todo = [ln for ln in lines if not args.only or ln.number in args.only]
    if args.only and len(todo) != len(set(args.only)):
        ap.error(f"--only {', '.join(args.only)}: the checklist has lines {', '.join(ln.number for ln in lines)}")
    results = []
    for ln in todo:
        r = run_line(ln, env, bool(args.fake), args.timeout)
        results.append(r)
        print(f"{r.status:<4} {r.number:>3}. {r.check}: {r.why}", flush=True)
    n = {s: sum(r.status == s for r in results) for s in ("PASS", "FAIL", "SKIP")}
    bad = n["FAIL"] + (n["SKIP"] if args.strict else 0)
    # A skipped line proved nothing: it is never a pass, and the summary says the run is incomplete.
    skipped = [r.number for r in results if r.status == "SKIP"]
    note = ""
    if skipped:
        note = (" (--strict: skips fail)" if args.strict else
                f" (NOT a complete go-live: line(s) {', '.join(skipped)} did not run)")
    print(f"golive: {n['PASS']} passed, {n['FAIL']} failed, {n['SKIP']} skipped{note}; outputs in {out}")
    (out / "golive.json").write_text(json.dumps({"fake": args.fake, "results": [asdict(r) for r in results]},
                                                indent=1) + "\n")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
