"""The suite's verdicts that need no GPU: compute-sanitizer summaries read, a pitfall caught, a
mutant killed (chapters/*/mutants.toml: its schema, checked here for CI and the GPU suite alike),
the mutation score."""
from __future__ import annotations

import re
from collections import defaultdict
from dataclasses import dataclass, field
from pathlib import Path

from .core import RACE_LABEL, SANITIZER_ERROR_EXITCODE
from .testrun import TestResult, count, count_line


# ---------------------------------------------------------------------------------------------
# compute-sanitizer results and the pitfall verdict

@dataclass
class SanitizerRun:
    """One compute-sanitizer run of one test executable."""
    exe: str
    tool: str                # memcheck | racecheck
    returncode: int | None   # None: it did not finish (timed out)
    summary: str             # the tool's SUMMARY line, or why there is none
    count: int | None        # errors (memcheck) or hazards (racecheck) in that line; None without one

    @property
    def clean(self) -> bool:
        """The tool ran to its summary and reported nothing."""
        return self.count == 0

    @property
    def found(self) -> bool:
        """The tool reported at least one error or hazard (by its summary or by its exit status)."""
        return (self.count or 0) > 0 or self.returncode == SANITIZER_ERROR_EXITCODE


def parse_sanitizer(exe: str, tool: str, returncode: int | None, output: str) -> SanitizerRun:
    """Reads the summary line of a compute-sanitizer run:
        ========= ERROR SUMMARY: 3 errors                                  (memcheck)
        ========= RACECHECK SUMMARY: 12 hazards displayed (12 errors, 0 warnings)   (racecheck)
    The racecheck count is of hazards, errors and warnings alike (a warning is still a race)."""
    lines = output.splitlines()
    own = "RACECHECK SUMMARY" if tool == "racecheck" else "ERROR SUMMARY"
    line = next((l for l in lines if own in l), None) or \
        next((l for l in lines if "ERROR SUMMARY" in l or "RACECHECK SUMMARY" in l), None)
    if line is None:
        why = "timed out" if returncode is None else f"exited {returncode}"
        return SanitizerRun(exe, tool, returncode, f"no summary line ({why}; see log)", None)
    m = re.search(r"SUMMARY: (\d+) (error|hazard)", line)
    return SanitizerRun(exe, tool, returncode, line.strip(" =\t"), int(m.group(1)) if m else None)


def judge_pitfall(counts: dict[str, int], race: bool = False,
                  racecheck: list[SanitizerRun] | None = None, racecheck_note: str = "") -> dict:
    """The GPU suite's verdict on one pitfall, as it goes into summary.json.

    counts: its tests' results (passed / failed / skipped, from pitfall_table). Caught when a test
    fails. A race pitfall (race=True) is also caught when racecheck reports a hazard on one of
    its test executables: a race makes a test fail only on some runs, racecheck sees it on every
    run. racecheck: the racecheck runs of its executables; None when they did not run, with
    racecheck_note saying why (e.g. --skip-sanitizer). A race pitfall that fails no test and shows
    no hazard is not caught."""
    v: dict = {"passed": counts.get("passed", 0), "failed": counts.get("failed", 0),
               "skipped": counts.get("skipped", 0), "race": race}
    caught_by = []
    if v["failed"]:
        caught_by.append(f"tests ({v['failed']} failed)")
    notes = []
    if race:
        if racecheck is None:
            v["racecheck"] = None
            notes.append(f"racecheck not run ({racecheck_note or 'no reason given'})")
        elif not racecheck:
            v["racecheck"] = {}
            notes.append(f"racecheck had nothing to run ({racecheck_note or 'no GPU tests in its executables'})")
        else:
            v["racecheck"] = {r.exe: r.summary for r in racecheck}
            hits = [r for r in racecheck if r.found]
            v["hazards"] = sum(r.count or 0 for r in hits)
            if hits:
                known = all(r.count for r in hits)
                caught_by.append(f"racecheck ({v['hazards']} hazards)" if known else
                                 f"racecheck (exit {SANITIZER_ERROR_EXITCODE}; hazards: see its log)")
            elif all(r.clean for r in racecheck):
                notes.append("racecheck found no hazard although the pitfall is declared RACE")
            else:
                notes.append("racecheck did not finish: " + "; ".join(
                    f"{r.exe}: {r.summary}" for r in racecheck if not r.clean))
    v["caught"] = bool(caught_by)
    v["caught_by"] = caught_by
    v["notes"] = notes
    return v


def pitfall_evidence(v: dict) -> str:
    """What a verdict of judge_pitfall rests on: the test counts, then any notes on racecheck."""
    return "; ".join([f"tests: {count_line(v)}"] + list(v.get("notes", [])))


def pitfall_line(name: str, v: dict) -> str:
    """One line of summary.md for a verdict of judge_pitfall, e.g.
    ch06.missing_second_sync [race]: caught by racecheck (96 hazards) (tests: 244 passed, 0 failed, 0 skipped)"""
    how = ("caught by " + " and ".join(v["caught_by"])) if v["caught"] else "NOT CAUGHT"
    return f"{name}{' [race]' if v.get('race') else ''}: {how} ({pitfall_evidence(v)})"


# ---------------------------------------------------------------------------------------------
# Mutants (chapters/NN_slug/mutants.toml): small bugs generated from the reference kernels. The
# GPU suite builds each one (-DCUDALAB_MUTANTS=ON; ctest labels mutant, mutant:chNN.<name>, and
# race for a removed barrier), runs its exercise's tests and reports the share caught ("killed").

MUTANT_LABEL = "mutant"


MUTANT_KEYS = {"name": str, "exercise": str, "find": str, "replace": str, "race": bool, "why": str}


def load_mutants(chapter_dir: Path) -> list[dict]:
    """The [[mutant]] entries of chapter_dir/mutants.toml ([] when there is none)."""
    import tomllib
    f = Path(chapter_dir) / "mutants.toml"
    if not f.exists():
        return []
    return list(tomllib.loads(f.read_text()).get("mutant", []))


def reference_texts(chapter_dir: Path) -> dict[str, str]:
    """Relative path -> text of every file under chapter_dir/reference (where mutants apply)."""
    ref = Path(chapter_dir) / "reference"
    return {str(p.relative_to(chapter_dir)): p.read_text() for p in sorted(ref.rglob("*")) if p.is_file()}


def mutant_problems(mutants: list[dict], texts: dict[str, str], chapter: str = "") -> list[str]:
    """What is wrong with a chapter's mutants: a missing or mistyped key, a name used twice, an
    exercise that is not N.k, a `find` that occurs other than exactly once in the reference files
    (all of them together: a mutant names no file, so it survives files being moved or renamed),
    or a `replace` equal to its `find`. Empty when all is well."""
    out, seen = [], set()
    for i, m in enumerate(mutants):
        where = f"{chapter + ': ' if chapter else ''}mutant {m.get('name', f'#{i + 1}')}"
        for key, typ in MUTANT_KEYS.items():
            if not isinstance(m.get(key), typ):
                out.append(f"{where}: '{key}' missing or not a {typ.__name__}")
        unknown = set(m) - set(MUTANT_KEYS)
        if unknown:
            out.append(f"{where}: unknown keys {sorted(unknown)}")
        name = m.get("name")
        if isinstance(name, str):
            if not re.fullmatch(r"[a-z0-9_]+", name):
                out.append(f"{where}: a name is lower_snake_case")
            if name in seen:
                out.append(f"{where}: the name is used twice")
            seen.add(name)
        if isinstance(m.get("exercise"), str) and not re.fullmatch(r"\d+\.\d+", m["exercise"]):
            out.append(f"{where}: exercise '{m['exercise']}' is not N.k")
        find = m.get("find")
        if isinstance(find, str) and find:
            hits = [(f, t.count(find)) for f, t in texts.items() if find in t]
            total = sum(k for _, k in hits)
            if total != 1:
                at = ", ".join(f"{f} x{k}" for f, k in hits) or "nowhere"
                out.append(f"{where}: 'find' occurs {total} times in reference/ (must be once): {at}")
            if find == m.get("replace"):
                out.append(f"{where}: 'replace' equals 'find'")
    return out


def mutant_of(labels: list[str]) -> str | None:
    """'chNN.<name>' from a test's ctest labels (mutant:chNN.<name>), else None."""
    return next((l[len(MUTANT_LABEL) + 1:] for l in labels if l.startswith(MUTANT_LABEL + ":")), None)


def mutant_table(results: list[TestResult]) -> dict[str, dict[str, int]]:
    """mutant -> counts of its tests' results (passed / failed / skipped / not_built), where a
    test that is no GoogleTest case (discovery said NOT_BUILT or could not list it) counts as
    not_built, never as a kill."""
    table: dict[str, dict[str, int]] = defaultdict(lambda: {"passed": 0, "failed": 0, "skipped": 0, "not_built": 0})
    for r in results:
        name = mutant_of(r.labels)
        if name:
            key = "not_built" if r.output.startswith("not a GoogleTest case") else r.status
            table[name][key] += 1
    return dict(sorted(table.items()))


def race_mutant_executables(tests: dict, race_names: set[str] | None = None) -> dict[str, list[str]]:
    """mutant -> its test executables, for the race mutants: those whose tests carry the label
    "race" (exact), and those named in race_names (mutants.toml says race = true), so that the
    verdict does not depend on the build adding the label."""
    exes: dict[str, set[str]] = defaultdict(set)
    for labels, command in tests.values():
        name = mutant_of(labels)
        if name and (RACE_LABEL in labels or name in (race_names or set())) and command:
            exes[name].add(command[0])
    return {p: sorted(e) for p, e in sorted(exes.items())}


def judge_mutant(counts: dict[str, int], race: bool = False,
                 racecheck: list[SanitizerRun] | None = None, racecheck_note: str = "") -> dict:
    """The verdict on one mutant: killed when one of its tests fails, or (race mutants) when
    racecheck reports a hazard; the same rule as a pitfall (judge_pitfall), plus: a mutant that
    did not build is neither killed nor a survivor ("not built": a problem of the mutant list), and
    one whose tests were all skipped (no GPU, too little memory) is "not run"."""
    v = judge_pitfall(counts, race, racecheck, racecheck_note)
    v["not_built"] = counts.get("not_built", 0)
    v["killed"] = v.pop("caught")
    v["killed_by"] = v.pop("caught_by")
    if v["not_built"] and not (v["passed"] or v["failed"] or v["skipped"]):
        v["state"] = "not built"
        v["killed"] = False
        v["killed_by"] = []
    elif v["killed"]:
        v["state"] = "killed"
    elif v["passed"] == 0 and not v.get("hazards"):
        v["state"] = "not run"
    else:
        v["state"] = "survived"
    return v


def mutation_score(verdicts: dict[str, dict]) -> dict:
    """killed / (killed + survived): mutants not built or not run are listed, not scored."""
    killed = sorted(n for n, v in verdicts.items() if v["state"] == "killed")
    survived = sorted(n for n, v in verdicts.items() if v["state"] == "survived")
    other = sorted(n for n, v in verdicts.items() if v["state"] not in ("killed", "survived"))
    scored = len(killed) + len(survived)
    return {"killed": len(killed), "scored": scored, "share": (len(killed) / scored) if scored else None,
            "survivors": survived, "unscored": {n: verdicts[n]["state"] for n in other}}


def mutant_line(name: str, v: dict) -> str:
    """One line of summary.md, e.g.
    ch05.scan_lookback_int_prefix: killed by tests (12 failed) (tests: 40 passed, 12 failed, 0 skipped)"""
    if v["state"] == "killed":
        how = "killed by " + " and ".join(v["killed_by"])
    else:
        how = v["state"].upper()
    nb = f"; {v['not_built']} not built" if v.get("not_built") else ""
    return f"{name}{' [race]' if v.get('race') else ''}: {how} ({pitfall_evidence(v)}{nb})"


def score_line(score: dict, goal: float = 0.95) -> str:
    if score["share"] is None:
        return "Mutants: none scored"
    met = "goal met" if score["share"] >= goal else f"BELOW the goal of {goal:.0%}"
    return (f"Mutants: {score['killed']} of {score['scored']} killed ({score['share']:.1%}; {met})"
            + (f"; survivors: {', '.join(score['survivors'])}" if score["survivors"] else ""))
